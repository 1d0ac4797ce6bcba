"""The report's drill-down: level names, the section's tables and heat-map, and its Parquet file."""

from __future__ import annotations

import html.parser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from cubeguard.measures.table import MeasureSpec, measure_cubes
from cubeguard.report.drilldown import (
    SHOWN,
    drilldown_frame,
    drilldown_section,
    finest_levels,
    level_names,
    measures,
)
from cubeguard.report.errors import ReportError
from cubeguard.report.html import write_report
from tests.conftest import tiny_breakdowns
from tests.unit.test_measures_drilldown import _pair


def _labelled(cube: xr.Dataset, geo: list[str], sex: list[str]) -> xr.Dataset:
    return cube.assign_coords({"GEO.label": ("GEO", geo), "SEX.label": ("SEX", sex)})


GEO_LABELS = ["Country", "NUTS 1 region R1", "LAU x (5 people)", "LAU y", "NUTS 1 region R2", "LAU z"]


def test_levels_are_named_by_what_their_labels_share_before_the_code() -> None:
    o, _ = _pair()
    names = level_names(_labelled(o, GEO_LABELS, ["Total", "Males", "Females"]))
    assert names == {
        ("GEO", 0): "total",
        ("GEO", 1): "NUTS 1 region",
        ("GEO", 2): "LAU",
        ("SEX", 0): "total",
        ("SEX", 1): "e.g. Males",  # the labels do not hold their codes
    }
    mixed = level_names(_labelled(o, [*GEO_LABELS[:5], "Zed"], ["Total", "", ""]))
    assert mixed[("GEO", 2)] == "e.g. LAU x (5 people)" and mixed[("SEX", 1)] == ""
    assert level_names(o)[("GEO", 1)] == ""  # no labels at all


def test_levels_are_named_by_the_breakdowns_that_stop_there() -> None:
    finest = finest_levels(tiny_breakdowns())
    assert finest["GEO.2"] == {1: ["GEO.1"], 2: ["GEO.2"]} and finest["GEO.1"] == finest["GEO.2"]
    assert finest["AGE.M"] == {1: ["AGE.L"], 2: ["AGE.M"]} and finest["SEX"] == {1: ["SEX"]}
    o, _ = _pair()
    names = level_names(_labelled(o, GEO_LABELS, ["Total", "Males", "Females"]), {"GEO": {0: ["GEO.N"], 2: ["GEO.H"]}})
    assert names[("GEO", 0)] == "total (finest of GEO.N)" and names[("GEO", 2)] == "LAU (finest of GEO.H)"
    assert names[("GEO", 1)] == "NUTS 1 region"
    assert level_names(o, {"GEO": {1: ["GEO.L", "GEO.X"]}})[("GEO", 1)] == "finest of GEO.L, GEO.X"


class _Section(html.parser.HTMLParser):
    """The summaries of ``<details>`` blocks, the rows of each block's table, and image count."""

    def __init__(self) -> None:
        super().__init__()
        self.summaries: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.images = 0
        self._where: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images += 1
        elif tag == "details":
            self.tables.append([])
        elif tag == "summary":
            self._where = "summary"
            self.summaries.append("")
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables:
            self._where = "cell"
            self.tables[-1][-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("summary", "td", "th"):
            self._where = None

    def handle_data(self, data: str) -> None:
        if self._where == "summary":
            self.summaries[-1] += data
        elif self._where == "cell":
            self.tables[-1][-1][-1] += data


def _frame() -> pd.DataFrame:
    o, p = _pair()
    big = o.copy(deep=True)
    big["count"] = big["count"] * 10
    return drilldown_frame({"a": (o, p), "b": (big, p)}, {"GEO": {2: ["GEO.H"]}})


def test_section_has_a_collapsible_table_per_cube_with_the_hand_worked_values() -> None:
    page = _Section()
    page.feed(drilldown_section(_frame(), ["b", "a", "c"], "drilldown.parquet"))
    assert page.images == 1  # one heat-map of all cubes
    assert page.summaries == ["Cube b: GEO × SEX, 18 cells", "Cube a: GEO × SEX, 18 cells"]  # "c" has no rows
    head, *rows = page.tables[1]
    assert head == list(SHOWN)
    # cube a, as worked by hand in test_measures_drilldown (four significant digits)
    assert rows[1] == ["GEO", "1", "", "2", "6", "2", "0.5", "0.5", "2", "0.25"]
    assert rows[2] == ["GEO", "2", "finest of GEO.H", "3", "9", "1", "0.6667", "0.2222", "2", "0.125"]
    assert rows[0][6] == "n/a" and rows[4][-1] == "0.1932"


def test_section_defines_every_column_it_shows() -> None:
    html = drilldown_section(_frame(), ["a", "b"], "drilldown.parquet")
    defined = html[html.index('<dl class="definitions">') :]
    assert [defined.count(f"<dt><code>{c}</code></dt>") for c in SHOWN] == [1] * len(SHOWN)
    assert "Shlomo (2009), section 4" in defined


def test_report_writes_the_drilldown_and_its_parquet(tmp_path: Path) -> None:
    o, p = _pair()
    table = measure_cubes({"a": (o, p)}, MeasureSpec())
    levels = drilldown_frame({"a": (o, p)})
    path = write_report(tmp_path, ["a"], table, None, "t", levels=levels)
    text = path.read_text(encoding="utf-8")
    assert '<a href="#drilldown-section">Drill-down by breakdown and level</a>' in text
    assert text.count('<details class="drilldown">') == 1 and "<code>drilldown.parquet</code>" in text
    back = pd.read_parquet(tmp_path / "drilldown.parquet")
    pd.testing.assert_frame_equal(back, measures(levels))
    assert back.loc[back["breakdown"].eq("SEX") & back["level"].eq(1), "rad"].item() == pytest.approx(2.125 / 11)
    write_report(tmp_path, ["a"], table, None, "t")  # a report without a drill-down leaves no stale file
    assert not (tmp_path / "drilldown.parquet").exists()


def test_a_drilldown_that_does_not_fit_is_refused(tmp_path: Path) -> None:
    o, p = _pair()
    table = measure_cubes({"a": (o, p)}, MeasureSpec())
    stray = drilldown_frame({"a": (o, p), "z": (o, p)})
    with pytest.raises(ReportError, match=r"drilldown: cube\(s\) \['z'\] are not in cubes"):
        write_report(tmp_path, ["a"], table, None, "t", levels=stray)
    with pytest.raises(ReportError, match=r"drilldown: missing column\(s\) \['name', 'codes'\]; pass the frame"):
        write_report(tmp_path, ["a"], table, None, "t", levels=stray.drop(columns=["name", "codes"]))


def test_an_empty_programme_draws_a_placeholder() -> None:
    frame = drilldown_frame({})
    assert list(frame.columns) == ["cube", "breakdown", "level", "name", "codes"] and frame.empty
    o, p = _pair()
    zeros = drilldown_frame({"a": (o * 0, p)})
    assert np.isnan(measures(zeros)["rad"]).all()
    assert drilldown_section(zeros, ["a"], "d.parquet").count("<img") == 1
