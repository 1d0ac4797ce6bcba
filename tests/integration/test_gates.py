"""Release gates through Great Expectations on cubes made by cubeguard's own pipeline."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import expectations.gates as gates_module
from cubeguard.config import load_release
from cubeguard.config.models import GateSpec
from cubeguard.cubes.store import list_cubes, open_cube
from cubeguard.errors import InternalError
from cubeguard.measures.table import MeasureSpec, measure_cubes
from cubeguard.pipeline.protection import protect_release
from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
from expectations.gates import run_gates
from tests.conftest import TINY_CONFIG, tiny_microdata
from tests.strategies import build_cube, flat_tree, override

Pairs = dict[str, tuple[xr.Dataset, xr.Dataset]]
CKM = "{method: cell_key, D: 5, V: 3, js: 2}"
IDENTITY = "{method: cell_key, D: 0, V: 1}"
SPEC = MeasureSpec(measures=("hellinger", "average_absolute_distance"))
PROMISES = GateSpec(forbidden_values=[1, 2], max_hellinger=0.05, max_mean_absolute_deviation=3.0)


def _release(folder: Path, step: str) -> Pairs:
    """Tabulate and protect the tiny release in ``folder``; the cubes open lazily from Zarr."""
    (folder / "data").mkdir(parents=True)
    tiny_microdata().to_parquet(folder / "data" / "persons.parquet")
    (folder / "c.yaml").write_text(TINY_CONFIG.replace(CKM, step))
    rel = load_release(folder / "c.yaml")
    out = rel.config.output
    write_tabulation(rel, tabulate_release(rel), out.original_store)
    protect_release(rel, out.original_store, out.protected_store)
    return {
        c: (open_cube(out.original_store, c), open_cube(out.protected_store, c))
        for c in list_cubes(out.protected_store)
    }


@pytest.fixture(scope="module")
def ckm(tmp_path_factory: pytest.TempPathFactory) -> Pairs:
    return _release(tmp_path_factory.mktemp("ckm"), CKM)


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> Pairs:
    return _release(tmp_path_factory.mktemp("identity"), IDENTITY)


def _planted(pairs: Pairs, cube: str, at: tuple[int, ...], delta: int = 0, value: int | None = None) -> Pairs:
    original, protected = pairs[cube]
    counts = protected["count"].values.copy()
    counts[at] = value if value is not None else counts[at] + delta
    return {**pairs, cube: (original, override(protected.load(), counts))}


def test_a_protected_release_passes_and_reports_additivity(ckm: Pairs, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # nothing but the docs folder may be written
    report = run_gates(ckm, measure_cubes(ckm, SPEC), PROMISES, tmp_path / "docs")
    assert report.passed and not report.errored
    assert dict(report.suite_lengths) == {"cube_gates": 2, "measures_gates": 2}
    assert len(report.outcomes) == 3 * 2 + 2 * 3
    c1 = report.for_cube("c1")
    assert c1["ExpectPublishedCountsOutsideForbiddenSet"].observed == 0
    additivity = c1["ExpectTotalsEqualSumOfChildren"]
    assert not additivity.success and not additivity.blocking and additivity.observed > 0  # CKM is not additive
    assert all(line.startswith("warn ") for line in report.failures())
    assert [p.name for p in tmp_path.iterdir()] == ["docs"]


def test_the_noise_free_path_is_additive_when_promised(identity: Pairs) -> None:
    gates = PROMISES.model_copy(update={"require_additivity": True, "forbidden_values": []})
    report = run_gates(identity, measure_cubes(identity, SPEC), gates, None)
    assert report.passed and report.failures() == []
    assert report.for_cube("c1")["ExpectTotalsEqualSumOfChildren"].blocking
    assert report.for_cube("c1")["ExpectDistanceWithinBound[hellinger@interior]"].observed == 0.0


def test_a_planted_one_fails_the_forbidden_values_gate(ckm: Pairs) -> None:
    planted = _planted(ckm, "c2", (1, 1), value=1)
    report = run_gates(planted, measure_cubes(planted, SPEC), PROMISES, None)
    assert not report.passed and not report.errored
    outcome = report.for_cube("c2")["ExpectPublishedCountsOutsideForbiddenSet"]
    assert not outcome.success and outcome.observed == 1
    assert report.for_cube("c1")["ExpectPublishedCountsOutsideForbiddenSet"].success
    assert (
        "FAIL c2: ExpectPublishedCountsOutsideForbiddenSet: observed 1, required no cell in {1, 2}" in report.failures()
    )


def test_a_broken_subtotal_fails_only_when_additivity_is_promised(identity: Pairs) -> None:
    broken = _planted(identity, "c2", (1, 0), delta=7)  # region A, total age
    promised = GateSpec(require_additivity=True)
    report = run_gates(broken, measure_cubes(broken, SPEC), promised, None)
    assert not report.passed
    outcome = report.for_cube("c2")["ExpectTotalsEqualSumOfChildren"]
    assert outcome.blocking and outcome.observed == 2  # A = sum of ages; country = A + B
    assert report.failures() == ["FAIL c2: ExpectTotalsEqualSumOfChildren: observed 2, required 0 non-additive cells"]
    assert run_gates(broken, measure_cubes(broken, SPEC), GateSpec(), None).passed  # reported only


def test_a_cube_whose_method_promises_additivity_is_blocked_by_a_broken_subtotal(identity: Pairs) -> None:
    """Controlled rounding, small cell adjustment and the like promise additive cubes: additivity blocks on them."""
    broken = _planted(identity, "c2", (1, 0), delta=7)
    report = run_gates(broken, measure_cubes(broken, SPEC), GateSpec(), None, additive=frozenset({"c2"}))
    assert not report.passed
    assert report.for_cube("c2")["ExpectTotalsEqualSumOfChildren"].blocking
    assert not report.for_cube("c1")["ExpectTotalsEqualSumOfChildren"].blocking  # c1 promised nothing
    assert report.failures() == ["FAIL c2: ExpectTotalsEqualSumOfChildren: observed 2, required 0 non-additive cells"]
    fine = run_gates(identity, measure_cubes(identity, SPEC), GateSpec(), None, additive=frozenset({"c1", "c2"}))
    assert fine.passed


def test_a_too_large_distance_fails_for_that_cube(ckm: Pairs) -> None:
    measures = measure_cubes(ckm, SPEC)
    measures.loc["hh", "hellinger@interior"] = 0.5
    report = run_gates(ckm, measures, PROMISES, None)
    assert not report.passed
    hh = report.for_cube("hh")["ExpectDistanceWithinBound[hellinger@interior]"]
    assert not hh.success and hh.observed == 0.5
    assert report.for_cube("c1")["ExpectDistanceWithinBound[hellinger@interior]"].success
    assert (
        report.failures()[0] == "FAIL hh: ExpectDistanceWithinBound[hellinger@interior]: observed 0.5, required <= 0.05"
    )
    assert all(line.startswith("warn ") for line in report.failures()[1:])


def test_small_cells_published_unchanged_fail_the_gate() -> None:
    dims = {"GEO": flat_tree("G", "G1", "G2", "G3"), "SEX": flat_tree("S", "S1", "S2")}
    original = build_cube(dims, np.array([[1, 2], [1, 9], [2, 5]]))
    counts = original["count"].values.copy()
    counts[1, 1] = 0  # G1 x S1: an original 1 published as 0; the other small cells are unchanged
    pairs = {"t": (original, override(original, counts))}
    gates = GateSpec(max_small_cells_unchanged=0.5)
    report = run_gates(pairs, measure_cubes(pairs, SPEC), gates, None)
    outcome = report.for_cube("t")["ExpectSmallCellsUnchangedShareToBeAtMost"]
    assert not report.passed and outcome.observed == pytest.approx(3 / 4)
    assert run_gates(pairs, measure_cubes(pairs, SPEC), GateSpec(max_small_cells_unchanged=0.75), None).passed


def test_an_expectation_that_errors_fails_the_gate(ckm: Pairs) -> None:
    measures = measure_cubes(ckm, SPEC).drop(columns="hellinger@interior")
    report = run_gates(ckm, measures, PROMISES, None)
    assert report.errored and not report.passed
    errors = [o for o in report.outcomes if o.errored]
    assert {o.cube for o in errors} == {"c1", "c2", "hh"}
    assert all(o.expectation == "ExpectDistanceWithinBound[hellinger@interior]" for o in errors)
    assert report.failures()[0] == (
        'ERROR c1: ExpectDistanceWithinBound[hellinger@interior]: Error: The column "hellinger@interior" in '
        "BatchData does not exist."
    )


def test_a_cube_missing_from_the_measures_table_fails_the_gate(ckm: Pairs) -> None:
    measures = measure_cubes(ckm, SPEC).drop(index="hh")
    report = run_gates(ckm, measures, PROMISES, None)
    assert not report.passed
    assert "ERROR hh: ExpectDistanceWithinBound[hellinger@interior]: the cube has no row in the measures table" in (
        report.failures()
    )


def test_data_docs_read_offline(ckm: Pairs, tmp_path: Path) -> None:
    docs = tmp_path / "internal" / "gates"
    report = run_gates(ckm, measure_cubes(ckm, SPEC), PROMISES, docs)
    assert report.docs_index == docs / "index.html" and report.docs_index.exists()
    pages = sorted(docs.rglob("*.html"))
    assert len(pages) == 1 + 2 + 4  # index, two suites, three cubes and the measures table
    remote = re.compile(
        r"""<(link|script)\b[^>]*(href|src)=["']https?://|url\(\s*["']?https?://|<img\b[^>]*src=["']https?://"""
    )
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert not remote.search(html), page
        assert "cubeguard: offline" in html
    index = report.docs_index.read_text(encoding="utf-8")
    assert "bootstrapTable" in index and "cube_gates" in index and "measures_gates" in index
    assert (docs / "static" / "images" / "logo-long.png").exists()
    c1 = next(p for p in pages if p.name.endswith("-c1.html")).read_text(encoding="utf-8")
    assert "Forbidden values: no published count is in {1, 2}" in c1
    assert "reported only" in c1
    assert report.passed and any(o.cube == "c1" and not o.success and not o.blocking for o in report.outcomes)
    status = re.compile(r'Status:</span>\s*<i class="[^"]*"[^>]*></i>\s*(\w+)')
    assert status.findall(c1) == ["Succeeded"]  # a failed warning does not make the page say "Failed"


def test_frames_with_string_cube_index_work(ckm: Pairs) -> None:
    measures = measure_cubes(ckm, SPEC).reset_index()
    assert isinstance(measures, pd.DataFrame) and "cube" in measures.columns
    assert run_gates(ckm, measures, PROMISES, None).passed


def test_a_suite_that_lost_an_expectation_stops_the_run(ckm: Pairs, monkeypatch: pytest.MonkeyPatch) -> None:
    build = gates_module.build_suites

    def lossy(gates: GateSpec, scope: str = "interior") -> dict:
        suites = build(gates, scope)
        suites["cube_gates"].expectations.pop(0)  # as a saved suite loaded without its custom classes
        return suites

    monkeypatch.setattr(gates_module, "build_suites", lossy)
    with pytest.raises(InternalError, match=r"suite 'cube_gates' holds 1 expectations, expected 2"):
        run_gates(ckm, measure_cubes(ckm, SPEC), PROMISES, None)


def test_gx_disagreeing_with_the_core_is_a_bug(ckm: Pairs, monkeypatch: pytest.MonkeyPatch) -> None:
    evaluate = gates_module.evaluate_cube

    def flipped(*args, **kwargs):
        result = evaluate(*args, **kwargs)
        checks = tuple(
            dataclasses.replace(c, passed=not c.passed) if c.check == "require_additivity" else c for c in result.checks
        )
        return dataclasses.replace(result, checks=checks)

    monkeypatch.setattr(gates_module, "evaluate_cube", flipped)
    with pytest.raises(InternalError, match=r"ExpectTotalsEqualSumOfChildren says success=False, blocking=False, but"):
        run_gates(ckm, measure_cubes(ckm, SPEC), PROMISES, None)


def test_facts_that_contradict_themselves_error_the_gate(ckm: Pairs, monkeypatch: pytest.MonkeyPatch) -> None:
    frame_of = gates_module.cube_frame

    def tampered(result):
        frame = frame_of(result)
        groups = frame["table"] == "additivity"
        frame.loc[groups, ["non_additive", "new_non_additive"]] = 0  # hide the violations, keep the sums
        return frame

    monkeypatch.setattr(gates_module, "cube_frame", tampered)
    report = run_gates(ckm, measure_cubes(ckm, SPEC), PROMISES, None)
    assert not report.passed and report.errored
    error = report.for_cube("c1")["ExpectTotalsEqualSumOfChildren"].error or ""
    assert "reported additive have unequal sums" in error
