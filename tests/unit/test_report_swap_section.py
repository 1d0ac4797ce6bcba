"""The report's record-swapping section, from a swap step's internal report."""

from __future__ import annotations

from typing import Any

from cubeguard.methods.swap_section import ANCHOR, section
from cubeguard.report.section import render


def swap_section(reports: list[dict[str, Any]]) -> str:
    return render(section(reports))


REPORT = {
    "name": "targeted_swap",
    "method": "targeted_swap",
    "households_swapped": 5,
    "persons_swapped": 12,
    "per_level": {
        "NUTS1": {"households": 2, "persons": 5, "areas": {"1": {"households": 2, "persons": 5}}},
        "NUTS2": {
            "households": 3,
            "persons": 7,
            "areas": {"11": {"households": 1, "persons": 2}, "12": {"households": 2, "persons": 5}},
        },
    },
    "must_swap_households_per_level": {"NUTS1": 2, "NUTS2": 4, "none": 94},
    "not_swapped_by_reason": {"no partner": 1},
    "cube_effects": {"c1": {"rad@interior": 0.5, "swap_removed_share@cube": 1.0, "other@cube": 3.0}},
}


def test_a_swap_step_gets_its_counts_levels_areas_partnerless_units_and_effects() -> None:
    html = swap_section([REPORT])
    assert f'<h2 id="{ANCHOR}">Record swapping</h2>' in html
    assert "<h3>targeted_swap (targeted_swap)</h3>" in html and "Swapped: 5 households, 12 persons." in html
    assert "must-swap households" in html and "no partner" in html
    assert "swap_removed_share@cube" in html and "other@cube" not in html
    areas = html[html.index("areas with most") :]
    assert areas.index("<td>1</td>") < areas.index("<td>12</td>") < areas.index("<td>11</td>")  # most first


def test_no_swap_step_means_no_section() -> None:
    assert swap_section([]) == ""
