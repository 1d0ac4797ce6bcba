"""The report's cell key section: the p-table and the risk it leaves, and no parameter as text."""

from __future__ import annotations

from cubeguard.ckm.ptable import PTable, PTableParams, create_cnt_ptable
from cubeguard.ckm.risk import max_disclosure_probability
from cubeguard.methods.cell_key.section import ANCHOR, ptable_section
from cubeguard.report.section import render


def cell_key_section(steps: list[tuple[str, PTable]]) -> str:
    return render(ptable_section(steps))


def test_a_cell_key_step_gets_both_pictures_and_its_worst_small_cell_risk() -> None:
    table = create_cnt_ptable(PTableParams(D=5, V=3, js=2))
    html = cell_key_section([("steps[0]", table)])
    assert f'id="{ANCHOR}"' in html and "<h3>steps[0]</h3>" in html
    assert html.count('<img src="data:image/png;base64,') == 2
    assert f"<strong>{max_disclosure_probability(table, i_max=2):.3f}</strong>" in html
    assert "D=5" not in html and "V=3" not in html  # no parameter value as text


def test_no_cell_key_step_means_no_section() -> None:
    assert cell_key_section([]) == ""
