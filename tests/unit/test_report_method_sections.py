"""A method's report section is its own hook's: the report renders what the hook returns, nothing more.

The three sections that moved from the report layer into their methods (issue 36) must render the
same HTML as before: ``data/report_sections/*.html`` were written by the old renderers
(``cubeguard/report/{swap,safe,ckm}_section.py`` at commit 1159b2f) from the inputs below; the cell
key section's pictures are compared as the p-table and risk plots, the rest byte for byte.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
from cubeguard.ckm.ptable_plot import plot_ptable
from cubeguard.ckm.risk import posterior_probabilities
from cubeguard.ckm.risk_plot import plot_risk
from cubeguard.config import load_release
from cubeguard.methods import cell_key, identity, random_swap, registry, swap_section
from cubeguard.methods.cell_key.section import ptable_section
from cubeguard.methods.safe import section as safe_section
from cubeguard.methods.section import Heading, Picture, Section, Table, Text
from cubeguard.release import reporting
from cubeguard.report.section import render
from tests.conftest import CELL_KEY_STEP, TINY_CONFIG
from tests.unit.test_report_safe_section import _report

GOLDEN = Path(__file__).parent / "data" / "report_sections"
DATA_URI = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")

SWAPS: list[dict[str, Any]] = [
    {
        "name": "targeted_swap", "method": "targeted_swap", "households_swapped": 5, "persons_swapped": 12,
        "per_level": {
            "NUTS1": {"households": 2, "persons": 5, "areas": {"1": {"households": 2, "persons": 5}}},
            "NUTS2": {"households": 3, "persons": 7,
                      "areas": {"11": {"households": 1, "persons": 2}, "12": {"households": 2, "persons": 5}}},
        },
        "must_swap_households_per_level": {"NUTS1": 2, "NUTS2": 4, "none": 94},
        "not_swapped_by_reason": {"no partner": 1},
        "cube_effects": {"c1": {"rad@interior": 0.5, "swap_removed_share@cube": 1.0, "other@cube": 3.0}},
    },
    {
        "name": "r<s>", "method": "random_swap", "households_swapped": None, "persons_swapped": 1234,
        "per_level": {"geo": {"persons": 1234, "areas": {str(i): {"persons": i * 10} for i in range(15)}}},
        "not_swapped_by_reason": {}, "cube_effects": {},
    },
    {"name": "x", "method": "ons_communal_swap", "persons_swapped": 0},
]  # fmt: skip


def _safe(stopped_by: str | None) -> dict[str, Any]:
    report = _report("target" if stopped_by is None else stopped_by)  # the SAFE section test's report
    if stopped_by is None:
        del report["stopped_by"]
    return report


SAFES = [_safe("time_limit"), _safe("max_tightenings"), _safe("target"), _safe(None), {"name": "s2"}]
PTABLES = [
    ("steps[1] on c1, c<2>", create_cnt_ptable(PTableParams(D=5, V=3, js=2))),
    ("steps[3]", create_cnt_ptable(PTableParams(D=2, V=1.5, js=0))),
]


def _golden(name: str) -> str:
    return (GOLDEN / f"{name}.html").read_text().removesuffix("\n")  # the file ends its one line


def test_the_swap_section_renders_as_before() -> None:
    assert render(swap_section.section(SWAPS)) == _golden("swap")


def test_the_safe_section_renders_as_before() -> None:
    assert render(safe_section.section(SAFES)) == _golden("safe")


def test_the_cell_key_section_renders_as_before(tmp_path: Path) -> None:
    html = render(ptable_section(PTABLES))
    assert DATA_URI.sub("data:image/png;base64,PNG", html) == _golden("ckm")
    pictures = []
    for k, (_, table) in enumerate(PTABLES):
        pictures.append(plot_ptable(table, tmp_path / f"ptable{k}.png").read_bytes())
        pictures.append(plot_risk(posterior_probabilities(table), tmp_path / f"risk{k}.png").read_bytes())
    assert [base64.b64decode(m) for m in DATA_URI.findall(html)] == pictures


def test_every_part_renders_escaped() -> None:
    frame = pd.DataFrame({"n": [1234]}, index=pd.Index(["a<b"], name="k"))
    section = Section(
        "my-section",
        "Mine & yours",
        [Heading("<h>"), Text("x < y: ", "0.5", "!"), Text("plain"), Table(frame, caption="c'"),
         Picture(b"\x89PNG", 'a"lt', "cap")],
    )  # fmt: skip
    assert render(section) == (
        '<h2 id="my-section">Mine &amp; yours</h2><h3>&lt;h&gt;</h3><p>x &lt; y: <strong>0.5</strong>!</p>'
        '<p>plain</p><div class="scroll"><table><caption>c&#x27;</caption><thead><tr><th>k</th><th>n</th></tr>'
        '</thead><tbody><tr><th>a&lt;b</th><td class="num">1,234</td></tr></tbody></table></div>'
        '<figure><img src="data:image/png;base64,iVBORw==" alt="a&quot;lt"><figcaption>cap</figcaption></figure>'
    )
    assert render(None) == ""


# A release with three post-tabular steps (two methods) and three pre-tabular ones (s3 wrote no report).
STEPS = (
    "  - {method: cell_key, D: 5, V: 3, js: 2, cubes: [c1]}\n  - {method: identity}\n"
    "  - {method: cell_key, name: ck2, D: 2, V: 1.5, js: 0, cubes: [c2, hh]}\n"
)
PRE = "pre_tabular:\n" + "".join(
    f"  - {{method: random_swap, name: {n}, swap_columns: [region], swap_rate: 0.1, seed: {k}}}\n"
    for k, n in enumerate(["s1", "s2", "s3"])
)


def _context(folder: Path) -> Any:
    """What the report step reads of its context, for the release above with reports of s1 and s2 written."""
    (folder / "c.yaml").write_text(TINY_CONFIG.replace(CELL_KEY_STEP, STEPS).replace("steps:\n", PRE + "steps:\n"))
    release = load_release(folder / "c.yaml")
    internal = release.config.output.internal
    internal.mkdir(parents=True)
    for name in ("s1", "s2"):
        (internal / f"{name}_report.json").write_text(json.dumps({"name": name, "method": "random_swap"}))
    return SimpleNamespace(release=release, services=SimpleNamespace(resolver=None))


def _hooked(monkeypatch: pytest.MonkeyPatch, hooks: Mapping[Any, Any]) -> None:
    """The registry with some methods' ``section`` hooks replaced."""
    methods = {m: dataclasses.replace(m, section=hook) for m, hook in hooks.items()}
    monkeypatch.setattr(reporting, "METHODS", tuple(methods.get(m, m) for m in registry.METHODS))
    for method in methods.values():
        monkeypatch.setitem(registry.BY_NAME, method.name, method)


def test_the_report_shows_what_a_method_hook_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def steps_section(steps: Sequence[tuple[str, Any]]) -> Section:
        calls.append([f"{label}: {step.method}" for label, step in steps])
        return Section("fake-steps", "Fake <steps>", [Text(" | ".join(calls[-1]))])

    def reports_section(reports: Sequence[Mapping[str, Any]]) -> Section:
        calls.append([r["name"] for r in reports])
        return Section("fake-reports", "Fake reports", [Heading("h"), Text(", ".join(calls[-1]))])

    # cell_key and identity share one hook: one call, with the steps of both in step order
    _hooked(monkeypatch, {cell_key.METHOD: steps_section, identity.METHOD: steps_section,
                          random_swap.METHOD: reports_section})  # fmt: skip
    sections = reporting._method_sections(_context(tmp_path))
    assert calls == [["steps[0] on c1: cell_key", "steps[1]: identity", "steps[2] on c2, hh: cell_key"], ["s1", "s2"]]
    assert sections == [
        ("fake-steps", "Fake <steps>", "<h2 id=\"fake-steps\">Fake &lt;steps&gt;</h2><p>"
         "steps[0] on c1: cell_key | steps[1]: identity | steps[2] on c2, hh: cell_key</p>"),
        ("fake-reports", "Fake reports", '<h2 id="fake-reports">Fake reports</h2><h3>h</h3><p>s1, s2</p>'),
    ]  # fmt: skip


def test_a_hook_that_returns_none_adds_no_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _hooked(monkeypatch, {cell_key.METHOD: lambda steps: None, random_swap.METHOD: None})
    assert reporting._method_sections(_context(tmp_path)) == []


def test_the_real_hooks_get_resolved_steps_and_the_written_reports(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    given = reporting.section_steps(ctx)
    assert list(given) == [cell_key.section.section, swap_section.section]  # registry order; identity has none
    assert [(label, step.name) for label, step in given[cell_key.section.section]] == [
        ("steps[0] on c1", "cell_key"),
        ("steps[2] on c2, hh", "ck2"),
    ]
    assert [r["name"] for r in given[swap_section.section]] == ["s1", "s2"]
    assert reporting.step_reports(ctx.release, swap_section.section) == given[swap_section.section]
