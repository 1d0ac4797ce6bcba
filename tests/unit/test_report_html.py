"""report.html is self-contained and escaped; the Parquet files beside it round-trip."""

from __future__ import annotations

import html.parser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cubeguard.measures.table import MeasureSpec, measure_cubes
from cubeguard.report.errors import ReportError
from cubeguard.report.html import choose_cubes, write_report
from cubeguard.report.summary import CubeSummary, summarise
from tests.strategies import build_cube, flat_tree, override

EVIL = "<script>alert(\"x\")</script> & 'quotes'"


def _pair(seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    dims = {"GEO": flat_tree("T", "g1", "g2", "g3"), "SEX": flat_tree("0", "1", "2")}
    original = build_cube(dims, rng.integers(0, 30, (3, 2)))
    noise = np.where(original["count"].values > 0, rng.integers(-2, 3, original["count"].shape), 0)
    protected = override(original, np.maximum(original["count"].values + noise, 0))
    return original, protected.assign(noise=protected["count"] - original["count"]).drop_vars("key_sum")


def _inputs(ids: list[str]) -> tuple[pd.DataFrame, dict[str, CubeSummary]]:
    pairs = {cube: _pair(k) for k, cube in enumerate(ids)}
    measures = measure_cubes(pairs, MeasureSpec())
    return measures, {cube: summarise(o, p) for cube, (o, p) in pairs.items()}


class _Links(html.parser.HTMLParser):
    """Every URL-bearing attribute, every tag name, and the text of #js-errors."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in {"src", "href", "srcset", "poster", "data", "action", "formaction"}:
                self.urls.append((tag, name, value or ""))


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    ids = ["c1", EVIL]
    measures, summaries = _inputs(ids)
    gates = [
        {"gate": "no published 1s and 2s", "passed": True, "value": 0},
        {"gate": EVIL, "passed": False, "value": 0.31, "threshold": 0.2},
    ]
    sweep = pd.DataFrame({"name": ["D=5 V=3", EVIL], "risk": [0.1, 0.2], "utility": [0.02, 0.01], "passes": [1, 0]})
    folder = tmp_path_factory.mktemp("report")
    path = write_report(folder, ids, measures, gates, f"Report {EVIL}", sweep, summaries=summaries)
    return path, measures


def test_report_is_self_contained(report: tuple[Path, pd.DataFrame]) -> None:
    path, _ = report
    parsed = _parse(path)
    assert parsed.urls, "the page has images and links"
    for tag, name, url in parsed.urls:
        assert url.startswith(("data:image/png;base64,", "#")), f"<{tag} {name}={url[:40]!r}> leaves the page"
    assert "link" not in parsed.tags and "iframe" not in parsed.tags
    text = path.read_text(encoding="utf-8")
    assert "@import" not in text and "url(" not in text and "@font-face" not in text
    assert sum(1 for tag, name, _ in parsed.urls if tag == "img" and name == "src") == 3 * 3 + 1  # 2 cubes, pooled, R-U


def test_text_is_escaped(report: tuple[Path, pd.DataFrame]) -> None:
    path, _ = report
    text = path.read_text(encoding="utf-8")
    assert '<script>alert("x")' not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;quotes&#x27;" in text
    assert _parse(path).tags.count("script") == 1  # only the error recorder


def test_error_recorder_is_registered_first(report: tuple[Path, pd.DataFrame]) -> None:
    text = report[0].read_text(encoding="utf-8")
    body = text[text.index("<body") :]
    assert body.index('<div id="js-errors" hidden></div>') < body.index("<script>") < body.index("<h1>")
    assert "window.onerror" in body


def test_gates_are_shown_as_pass_and_fail(report: tuple[Path, pd.DataFrame]) -> None:
    text = report[0].read_text(encoding="utf-8")
    assert text.count('<td class="pass">pass</td>') == 1 and text.count('<td class="fail">fail</td>') == 1
    assert "1 of 2 gate(s) failed." in text


def test_measures_parquet_round_trips(report: tuple[Path, pd.DataFrame]) -> None:
    path, measures = report
    back = pd.read_parquet(path.parent / "measures.parquet").set_index("cube")
    pd.testing.assert_frame_equal(back, measures)


def test_deviation_tables_per_cube_and_pooled(report: tuple[Path, pd.DataFrame]) -> None:
    folder = report[0].parent
    t3 = pd.read_parquet(folder / "deviations_by_dimension.parquet")
    t4a = pd.read_parquet(folder / "deviations_by_size.parquet")
    t4b = pd.read_parquet(folder / "deviations_by_size_cumulative.parquet")
    for cube in ("c1", EVIL):  # Höhne's Tables 3 and 4a cover the same cells
        assert t3[t3.cube == cube]["cells"].sum() == t4a[t4a.cube == cube]["cells"].sum() > 0
    assert set(t4b["cube"]) == {"c1", EVIL} and t4b["cum_pct"].between(0, 100).all()
    pooled = pd.read_parquet(folder / "programme_by_size.parquet")
    assert pooled["cells"].sum() == t4a["cells"].sum()
    assert pd.read_parquet(folder / "programme_by_dimension.parquet")["cells"].sum() == t3["cells"].sum()
    assert list(pd.read_parquet(folder / "sweep.parquet")["name"]) == ["D=5 V=3", EVIL]


def test_placeholders_without_gates_and_summaries(tmp_path: Path) -> None:
    measures, _ = _inputs(["c1"])
    path = write_report(tmp_path, ["c1"], measures, None, "No gates")
    text = path.read_text(encoding="utf-8")
    assert "the release has not been gated yet" in text and "<img" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["measures.parquet", "report.html"]
    assert "No gates are configured" in write_report(tmp_path, ["c1"], measures, [], "t").read_text(encoding="utf-8")


def test_rewriting_replaces_old_deviation_tables(tmp_path: Path) -> None:
    measures, summaries = _inputs(["c1", "c2"])
    write_report(tmp_path, ["c1", "c2"], measures, None, "t", summaries=summaries)
    write_report(tmp_path, ["c1"], measures.loc[["c1"]], None, "t", summaries={"c1": summaries["c1"]})
    assert set(pd.read_parquet(tmp_path / "deviations_by_size.parquet")["cube"]) == {"c1"}
    write_report(tmp_path, ["c1"], measures.loc[["c1"]], None, "t")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["measures.parquet", "report.html"]


def test_big_programmes_plot_a_subset_and_pool_all(tmp_path: Path) -> None:
    ids = [f"c{k}" for k in range(100)]
    measures, summaries = _inputs(ids)
    path = write_report(tmp_path, ids, measures, None, "t", summaries=summaries, plot_cubes=["c7"])
    text = path.read_text(encoding="utf-8")
    assert "Plots for 1 of 100 cubes" in text and "All 100 cubes pooled" in text
    assert text.count("<img") == 3 + 3
    assert pd.read_parquet(tmp_path / "deviations_by_size.parquet")["cube"].nunique() == 100


def test_subset_takes_the_largest_and_the_worst_cubes() -> None:
    ids = [f"c{k}" for k in range(120)]
    measures = pd.DataFrame(
        {"hellinger@interior": np.linspace(0, 1, 120), "rad@interior": np.linspace(1, 0, 120)},
        index=pd.Index(ids, name="cube"),
    )
    sizes = {c: 10 for c in ids} | {"c5": 1000}
    empty = pd.DataFrame()
    summaries = {c: CubeSummary(n, pd.Series(), pd.Series(), (1, 2), empty, empty, None) for c, n in sizes.items()}  # type: ignore[arg-type]
    chosen = choose_cubes(ids, measures, summaries, limit=5)
    # in turn: largest, worst Hellinger, worst RAD; then the next of each (c0 is taken already)
    assert [c for c, _ in chosen] == ["c5", "c119", "c0", "c118", "c1"]
    assert dict(chosen)["c119"].startswith("highest Hellinger distance")
    assert choose_cubes(ids[:99], measures, summaries) == [(c, "") for c in ids[:99]]


def test_inconsistent_arguments_are_listed_together(tmp_path: Path) -> None:
    measures, summaries = _inputs(["c1", "c2"])
    with pytest.raises(ReportError) as err:
        write_report(
            tmp_path,
            ["c1", "c9", "c9"],
            measures,
            None,
            "t",
            pd.DataFrame({"name": ["a"]}),
            summaries=summaries,
            plot_cubes=["c3"],
        )
    message = str(err.value)
    assert message.startswith("the report cannot be written: cubes: list each cube once")
    assert "measures has no row for cube(s) ['c9']" in message
    assert "summaries: cube(s) ['c2'] are not in cubes" in message
    assert "plot_cubes: no summary for cube(s) ['c3']" in message
    assert "sweep: missing column(s) ['risk', 'utility', 'passes']" in message


def test_reported_only_checks_are_named_as_such(tmp_path) -> None:
    from cubeguard.report.html import _gates_section

    rows = [{"cube": "a", "status": "pass"}, {"cube": "a", "status": "warn"}, {"cube": "b", "status": "pass"}]
    html = _gates_section(rows)
    assert "All 2 blocking gate(s) passed. 1 check(s) are reported only" in html
    assert "no result" not in html
