"""The parameter sweep on the tiny release, tabulated by the pipeline: it is the release's protection."""

from __future__ import annotations

import datetime as dt
import math
import struct
from pathlib import Path

import pandas as pd
import pytest

from cubeguard.config import load_release
from cubeguard.config.load import Release
from cubeguard.cubes.store import list_cubes, open_cube
from cubeguard.errors import CubeguardError
from cubeguard.measures.table import measure_cube, measure_cubes
from cubeguard.pipeline.protection import protect_release
from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
from cubeguard.sweep import SweepGridError, SweepResult, grid_from_mapping, run_sweep, sweep_folder
from expectations.gates import run_gates
from tests.conftest import TINY_CONFIG, TINY_GATES, tiny_microdata

CKM = "{method: cell_key, D: 5, V: 3, js: 2}"
# Small enough for small cells (the default tiny census has none); gates that split the sets below.
HOUSEHOLDS = 200
GATES = "gates: {forbidden_values: [1, 2], max_small_cells_unchanged: 0.5, max_hellinger: 0.08}\n"
# Seed 001's sets vary D and V at js = 2; with js = 2 a p-table needs V >= 3 (D = 2, V = 1 is infeasible).
VARY = {"method": "cell_key", "base": {"js": 2}, "vary": {"D": [4, 8], "V": [3, 6]}}
EXPLICIT = {
    "method": "cell_key",
    "sets": [{"D": 0, "V": 1, "js": 0}, {"D": 3, "V": 0.5, "js": 0}, {"D": 4, "V": 3, "js": 2}],
}


def _config(step: str) -> str:
    return TINY_CONFIG.replace(CKM, step).replace(TINY_GATES, GATES)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    """The tiny release with gates, tabulated into its original store by the pipeline."""
    folder = tmp_path_factory.mktemp("sweep")
    (folder / "data").mkdir()
    tiny_microdata(n_households=HOUSEHOLDS).to_parquet(folder / "data" / "persons.parquet")
    (folder / "tiny.yaml").write_text(_config(CKM))
    rel = load_release(folder / "tiny.yaml")
    write_tabulation(rel, tabulate_release(rel), rel.config.output.original_store)
    return rel


def _sweep(release: Release, grid: dict, name: str, scheduler: object = None) -> SweepResult:
    folder = release.config.output.internal / "sweep" / name
    return run_sweep(release, grid_from_mapping(grid), release.config.output.original_store, folder, scheduler)


@pytest.fixture(scope="module")
def swept(release: Release) -> SweepResult:
    return _sweep(release, VARY, "vary")  # default: threads, two workers


@pytest.fixture(scope="module")
def explicit(release: Release) -> SweepResult:
    return _sweep(release, EXPLICIT, "explicit", "synchronous")


def _protected_by_release(release: Release, step: str, name: str) -> dict[str, tuple]:
    """Protect the tiny release's cubes with ``step`` through the normal pipeline; the stored pairs."""
    path = release.path.parent / f"{name}.yaml"
    path.write_text(_config(step))
    rel = load_release(path)
    store = release.path.parent / f"{name}.zarr"
    protect_release(rel, rel.config.output.original_store, store)
    original = rel.config.output.original_store
    return {c: (open_cube(original, c), open_cube(store, c)) for c in list_cubes(store)}


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_every_set_measures_exactly_as_a_release_with_that_step(release: Release, swept: SweepResult) -> None:
    assert list(swept.summary["name"]) == ["D=4 V=3", "D=4 V=6", "D=8 V=3", "D=8 V=6"]
    for s in swept.summary.itertuples(index=False):
        step = f"{{method: cell_key, D: {s.D}, V: {s.V}, js: 2}}"
        pairs = _protected_by_release(release, step, f"set{s.set}")
        rows = swept.cells[swept.cells["set"] == s.set].set_index("cube")
        assert list(rows.index) == ["c1", "c2", "hh"]
        for cube, (original, protected) in pairs.items():
            expected = measure_cube(original, protected, swept.spec)
            got = rows.loc[cube, list(expected)].to_dict()
            assert all(_same(float(got[k]), v) for k, v in expected.items()), (s.name, cube)
        # The gate verdict is the Great Expectations gates' on the release's own protected cubes.
        report = run_gates(pairs, measure_cubes(pairs, swept.spec), release.config.gates, None)
        assert bool(s.passes) == report.passed, s.name


def test_larger_V_gives_larger_mean_absolute_deviation(swept: SweepResult) -> None:
    mad = swept.cells.groupby(["D", "V"])["average_absolute_distance@interior"].mean()
    for d in (4, 8):
        assert mad[(d, 6.0)] > mad[(d, 3.0)] > 0


def test_gate_verdicts_follow_the_thresholds(swept: SweepResult, explicit: SweepResult) -> None:
    for result in (swept, explicit):
        cells = result.cells
        small = cells["gate.small_cells_unchanged"].astype(float)
        fails = {
            "forbidden_values": cells["gate.forbidden_cells"] > 0,
            "max_small_cells_unchanged": small.fillna(0) > 0.5,
            "max_hellinger": cells["hellinger@interior"] > 0.08,
        }
        for check, failing in fails.items():
            assert list(cells["failing"].str.contains(check)) == list(failing), check
        expected = ~pd.concat(fails, axis=1).any(axis=1).groupby(cells["set"]).any()
        assert list(result.summary["passes"]) == list(expected)
    # The sets split: small V passes, large V fails the Hellinger bound, js = 0 publishes 1s and 2s.
    assert list(swept.summary["passes"]) == [True, False, True, False]
    assert list(swept.summary["failing"][[1, 3]]) == ["max_hellinger (c1)"] * 2
    assert list(explicit.summary["passes"]) == [False, False, True]
    identity = explicit.summary["failing"][0]
    assert identity.startswith("forbidden_values (c1") and "max_small_cells_unchanged (c1)" in identity
    assert swept.passing == [1, 3] and explicit.passing == [3]


def test_the_identity_set_loses_no_information(release: Release, explicit: SweepResult) -> None:
    cells = explicit.cells[explicit.cells["set"] == 1]
    for column in ("absolute_distance@cube", "rad_sum@cube", "hellinger@cube", "max_abs_deviation@cube"):
        assert (cells[column] == 0).all(), column
    assert (cells["spearman@cube"] == 1).all()
    # Every original small cell is published unchanged: full risk, as the map shows.
    assert explicit.summary.loc[0, ["risk", "utility"]].tolist() == [1.0, 0.0]
    others = explicit.summary.loc[1:, "utility"]
    assert (others > 0).all() and (explicit.summary.loc[1:, "risk"] < 1).all()


def test_threaded_and_synchronous_runs_give_identical_frames(release: Release, swept: SweepResult) -> None:
    again = _sweep(release, VARY, "vary-sync", "synchronous")
    pd.testing.assert_frame_equal(again.cells, swept.cells)
    pd.testing.assert_frame_equal(again.summary, swept.summary)
    threads = _sweep(release, EXPLICIT, "explicit-threads", "threads")
    assert len(threads.cells) == 3 * 3
    pd.testing.assert_frame_equal(threads.cells, _sweep(release, EXPLICIT, "explicit-sync", "synchronous").cells)


def test_files_are_written_inside_internal(release: Release, swept: SweepResult) -> None:
    internal = release.config.output.internal
    assert swept.folder == (internal / "sweep" / "vary").resolve()
    assert sorted(p.name for p in swept.folder.iterdir()) == [
        "ru_map.png",
        "summary.parquet",
        "sweep.html",
        "sweep.parquet",
    ]
    pd.testing.assert_frame_equal(pd.read_parquet(swept.sweep_file), swept.cells)
    pd.testing.assert_frame_equal(pd.read_parquet(swept.summary_file), swept.summary)
    assert len(swept.cells) == 4 * 3 and len(swept.summary) == 4
    assert {"D", "V", "js", "cube", "hellinger@interior", "small_cells_unchanged@cube"} <= set(swept.cells.columns)
    # Nothing outside internal/ changed: the release's folder holds only the original store and internal/.
    assert sorted(p.name for p in internal.parent.iterdir()) == ["internal", "original.zarr"]
    assert "D=4" not in repr(swept)


def test_the_ru_map_is_a_png_of_the_summary(swept: SweepResult) -> None:
    data = swept.ru_map.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (576, 422)  # 6 x 4.4 inches at 96 dpi (cubeguard.report.plots)
    assert 10_000 < len(data) < 500_000
    html = swept.html.read_text(encoding="utf-8")
    assert html.count('<img src="data:image/png;base64,') == 1
    assert "http://" not in html and "https://" not in html
    assert "D=4 V=6" in html and "Internal." in html


def test_secret_free_lines_name_sets_by_place(swept: SweepResult) -> None:
    assert swept.lines() == [
        "set 1 (vary.D[0], vary.V[0]): passes the gates",
        "set 2 (vary.D[0], vary.V[1]): fails: max_hellinger (c1)",
        "set 3 (vary.D[1], vary.V[0]): passes the gates",
        "set 4 (vary.D[1], vary.V[1]): fails: max_hellinger (c1)",
    ]


def test_cubes_subset_and_other_axes(release: Release) -> None:
    grid = {**VARY, "cubes": ["c2"], "risk": "disclosive_share_protected", "utility": "rad@GEO.1"}
    result = _sweep(release, grid, "subset", "synchronous")
    assert list(result.cells["cube"]) == ["c2"] * 4
    assert result.risk == "disclosive_share_protected@cube" and result.utility == "rad@GEO.1"
    assert list(result.summary["utility"]) == list(result.cells["rad@GEO.1"])


def test_unfit_cubes_and_scopes_are_reported_before_any_cube_is_read(release: Release) -> None:
    grid = {**VARY, "cubes": ["c1", "c2", "c3"], "utility": "rad@SEX*AGE.M"}
    with pytest.raises(SweepGridError) as info:
        run_sweep(release, grid_from_mapping(grid), Path("/nonexistent"), sweep_folder(release))
    assert info.value.problems == [
        "cubes[2] (grid): unknown hypercube 'c3'; known: c1, c2, hh",
        "utility (grid): rad@SEX*AGE.M needs dimension(s) ['AGE.M', 'SEX'], which cube c2 lacks; "
        "choose a scope every cube has",
    ]


def test_infeasible_sets_are_reported_before_any_cube_is_read(release: Release) -> None:
    grid = {
        "method": "cell_key",
        "sets": [{"D": 2, "V": 1, "js": 2}, {"D": 4, "V": 3, "js": 2}, {"D": 0, "V": 1, "js": 2}],
    }
    with pytest.raises(SweepGridError) as info:
        run_sweep(release, grid_from_mapping(grid), Path("/nonexistent"), sweep_folder(release))
    first, third = info.value.problems
    assert first.startswith("sets[0] (grid): set 1 (sets[0]): No noise distribution for original count")
    assert third.startswith("sets[2] (grid): set 3 (sets[2]): ") and "js > 0 needs noise" in third


def test_outputs_outside_internal_are_refused(release: Release, tmp_path: Path) -> None:
    with pytest.raises(CubeguardError, match=r"is outside .*internal; its files hold the secret parameters"):
        run_sweep(release, grid_from_mapping(VARY), release.config.output.original_store, tmp_path / "sweep")
    assert not (tmp_path / "sweep").exists()


def test_a_missing_store_says_to_run_the_release(release: Release) -> None:
    with pytest.raises(CubeguardError, match=r"does not exist; run the release first"):
        run_sweep(release, grid_from_mapping(VARY), Path("/nonexistent"), sweep_folder(release))


def test_sweep_folders_are_new_and_internal(release: Release) -> None:
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    first = sweep_folder(release, when)
    assert first == release.config.output.internal / "sweep" / "20260102T030405Z"
    first.mkdir(parents=True)
    assert sweep_folder(release, when).name == "20260102T030405Z-2"


def test_secret_references_are_resolved_into_the_internal_tables(
    release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWEEP_TEST_V", "3")
    grid = {"method": "cell_key", "base": {"js": 2, "V": {"env": "SWEEP_TEST_V"}}, "vary": {"D": [4]}, "cubes": ["hh"]}
    result = _sweep(release, grid, "secret", "synchronous")
    assert result.cells["V"].tolist() == [3] and result.summary["name"].tolist() == ["D=4"]
    plain = _sweep(release, {**grid, "base": {"js": 2, "V": 3}}, "plain", "synchronous")
    measures = [c for c in plain.cells.columns if "@" in c]
    pd.testing.assert_frame_equal(result.cells[measures], plain.cells[measures])


def test_the_attack_is_a_risk_axis_and_tells_a_weak_set_from_a_strong_one(release: Release) -> None:
    """D = 0 publishes the originals: every small cell recovered; D = 4, js = 2: none (same cubes)."""
    result = _sweep(release, {**EXPLICIT, "risk": "recovered_by_attack"}, "attacked", "synchronous")
    assert result.risk == "recovered_by_attack@cube"
    exact, weak, strong = (result.cells[result.cells["set"] == n] for n in (1, 2, 3))
    small = exact["recovered_by_attack@cube"]
    assert (small > 0).any() and (exact["attack_self_test_missed@cube"] == 0).all()
    assert (strong["recovered_by_attack@cube"] == 0).all()
    assert list(result.summary["risk"]) == [float(small.mean()), float(weak["recovered_by_attack@cube"].mean()), 0.0]
