"""The release's measures of a swap release: against the cubes of the microdata as delivered.

``original.zarr`` is tabulated after the pre-tabular steps; the measure step compares the published
cubes with the true original, derived from it and the units the steps moved (Handbook on SDC v2,
5.9), and says per cube whether ``r#`` used unit or cell-value transitions.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from cubeguard.config import load_release
from cubeguard.config.load import Release
from cubeguard.cubes.store import open_cube
from cubeguard.errors import CubeguardError
from cubeguard.measures import risk
from cubeguard.measures.errors import MeasureConfigError
from cubeguard.measures.table import MeasureSpec, measure_cubes
from cubeguard.measures.transitions import Transitions, check_transitions, with_stayers
from cubeguard.pipeline import true_original as true_original_module
from cubeguard.pipeline.measure import BASIS_COLUMN, cube_pairs, measure_release, stored_pairs
from cubeguard.pipeline.pretabular import apply_pre_tabular
from cubeguard.pipeline.protection import protect_release
from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
from cubeguard.pipeline.true_original import ORIGIN_ATTR, _aligned, _changed, release_moves
from cubeguard.pipeline.unit_moves import CellMoves, check_moves, undo_moves
from tests.conftest import CELL_KEY_STEP, TINY_CONFIG, tiny_microdata

SWAP = "pre_tabular:\n  - {method: random_swap, swap_columns: [region], swap_rate: 0.2, seed: 3}\n"
IDENTITY = "  - {method: identity}\n"


def _config(folder: Path, steps: str = CELL_KEY_STEP, pre_tabular: str = SWAP, name: str = "c.yaml") -> Release:
    text = TINY_CONFIG.replace(CELL_KEY_STEP, steps).replace("steps:\n", pre_tabular + "steps:\n")
    (folder / name).write_text(text)
    return load_release(folder / name)


def _tabulate_and_protect(release: Release) -> None:
    out = release.config.output
    write_tabulation(release, tabulate_release(release), out.original_store)
    protect_release(release, out.original_store, out.protected_store)


def _delivered_tabulation(release: Release) -> dict[str, np.ndarray]:
    """Every cube of ``release`` tabulated from the delivered microdata (its pre-tabular steps left out)."""
    plain = type(release)(
        release.config.model_copy(update={"pre_tabular": []}), release.path, release.breakdowns, release.config_hash
    )
    tab = tabulate_release(plain)
    return {plan.cube_id: tab.cube(c, {})["count"].values for c, plan in enumerate(tab.plans)}


@pytest.fixture
def swapped(tmp_path: Path) -> Release:
    """TINY_CONFIG (cell key) with a random swap of regions, swapped, tabulated and protected."""
    (tmp_path / "data").mkdir()
    tiny_microdata(n_households=800).to_parquet(tmp_path / "data" / "persons.parquet", row_group_size=700)
    release = _config(tmp_path)
    apply_pre_tabular(release)
    _tabulate_and_protect(release)
    return release


def test_true_originals_are_the_cubes_of_the_delivered_microdata(swapped: Release) -> None:
    want = _delivered_tabulation(swapped)
    pairs, stored = cube_pairs(swapped), stored_pairs(swapped)
    assert set(pairs) == set(want) == {"c1", "c2", "hh"}
    for cube_id, (original, protected) in pairs.items():
        np.testing.assert_array_equal(original["count"].values, want[cube_id], err_msg=cube_id)
        np.testing.assert_array_equal(protected["count"].values, stored[cube_id][1]["count"].values)
        assert original.attrs[ORIGIN_ATTR].startswith("the microdata as delivered")
    # the swap moved households between regions: the region cubes differ from original.zarr
    assert not np.array_equal(pairs["c1"][0]["count"].values, stored["c1"][0]["count"].values)


def test_true_originals_are_derived_only_when_read(swapped: Release, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    derive = true_original_module.delivered_counts

    def counted(release: Release, plan: object, moves: CellMoves) -> np.ndarray:
        calls.append(plan.cube_id)  # type: ignore[attr-defined]
        return derive(release, plan, moves)  # type: ignore[arg-type]

    monkeypatch.setattr(true_original_module, "delivered_counts", counted)
    pairs = cube_pairs(swapped)
    assert calls == [] and isinstance(pairs["c1"][0]["count"].data, da.Array)
    pairs["c2"][0]["count"].values  # noqa: B018  # reading one cube derives that cube only
    assert calls == ["c2"]


def _persons() -> pd.DataFrame:
    """Households h1 A1 (10, 30, 40), h2 A2 (50), h3 B1 (35, a woman), h4 B1 (20, 70); men unless said."""
    households = [("A1", [10, 30, 40]), ("A2", [50]), ("B1", [35]), ("B1", [20, 70])]
    rows = [
        {"hid": h, "is_ref": n == 0, "region": region, "sex": "2" if h == 3 else "1", "age": age}
        for h, (region, ages) in enumerate(households, start=1)
        for n, age in enumerate(ages)
    ]
    frame = pd.DataFrame(rows)
    frame.insert(0, "pid", np.arange(len(frame), dtype=np.int64) + 100)
    frame["age"] = frame["age"].astype(np.int16)
    frame["rkey"] = np.linspace(0.1, 0.9, len(frame))
    return frame


def _exchange(folder: Path, steps: str) -> Release:
    """A release of :func:`_persons` whose pre-tabular step exchanged the regions of h2 and h3.

    The swapped file is written here as the step would write it (rows in order), so the exchange
    is known by hand; the cubes are then tabulated from it and protected by ``steps``.
    """
    (folder / "data").mkdir()
    before = _persons()
    before.to_parquet(folder / "data" / "persons.parquet")
    release = _config(folder, steps)
    after = before.copy()
    after.loc[after["hid"] == 2, "region"], after.loc[after["hid"] == 3, "region"] = "B1", "A2"
    target = release.config.output.swapped_microdata
    target.parent.mkdir(parents=True)
    after.to_parquet(target)
    _tabulate_and_protect(release)
    return release


def test_one_household_exchange_that_keeps_the_counts_gives_r_sharp_from_unit_transitions(tmp_path: Path) -> None:
    """Cube c2 = GEO.1 x AGE.L, interior (A, B) x (Y_LT15, Y15-64, Y_GE65), published unchanged.

    Delivered: A holds 10 | 30, 40, 50 | -, B holds - | 35, 20 | 70: interior [1, 3, 0, 0, 2, 1].
    Exchanging the regions of h2 (A2, 50) and h3 (B1, 35) keeps these counts, so cell values
    show no change at all. k = 6, N = 7, D = Q = {(A, Y_GE65), (B, Y_LT15)} (exponent 1):
    first term 2/6 = 0.333333; H = ln 7 - (3 ln 3 + 2 ln 2)/7 = 1.945910 - 0.668876 = 1.277034,
    1 - H / ln 6 = 0.287274; size term (1 + 0.5 ln 7) / sqrt 7 = 0.745707.
    r = (0.333333 + 0.287274 + 0.745707) / 3 = 0.455438, and r# = r with cell-value transitions.
    Units: (A, 15-64) -> (A, 15-64) 2, -> (B, 15-64) 1; (B, 15-64) -> (A, 15-64) 1, -> (B, 15-64) 1;
    (A, LT15) and (B, GE65) stay. After, (A, 15-64) holds 2 + 1 (entropy ln 3 - (2/3) ln 2 =
    0.636514) and (B, 15-64) 1 + 1 (ln 2): H(X|Y) = (3/7) 0.636514 + (2/7) 0.693147 = 0.470834,
    kept 1 - 0.470834 / 1.277034 = 0.631306; r# = (0.333333 + 0.287274 * 0.631306 + 0.745707) / 3
    = 0.420133.

    Cube c1 = GEO.2 x SEX x AGE.M is published unchanged too, but against the delivered data four
    of its cells are one off: (A2, men) and (B1, women) aged 15-64 lose one, (A2, women) and
    (B1, men) gain one.
    """
    release = _exchange(tmp_path, IDENTITY)
    measures = pd.read_parquet(measure_release(release))
    c2 = measures.loc["c2"]
    assert c2["absolute_distance@interior"] == 0.0
    assert c2["entropy_risk_original@interior"] == pytest.approx(0.455438, abs=1e-6)
    assert c2["entropy_risk_protected@interior"] == pytest.approx(0.420133, abs=1e-6)
    assert measures[BASIS_COLUMN].to_dict() == {"c1": 1.0, "c2": 1.0, "hh": 1.0}
    assert measures.loc["c1", "absolute_distance@interior"] == 4.0
    stored = stored_pairs(release)["c1"]  # what the measures compared before: no change at all
    np.testing.assert_array_equal(stored[0]["count"].values, stored[1]["count"].values)


def test_a_cube_a_post_tabular_step_protects_uses_cell_value_transitions(tmp_path: Path) -> None:
    """c1 is perturbed by the cell key method: its r# compares the delivered and the published cell values."""
    release = _exchange(tmp_path, "  - {method: cell_key, D: 5, V: 3, js: 2, cubes: [c1]}\n")
    measures = pd.read_parquet(measure_release(release))
    assert measures[BASIS_COLUMN].to_dict() == {"c1": 0.0, "c2": 1.0, "hh": 1.0}
    original, protected = (x["count"].values for x in cube_pairs(release)["c1"])
    interior = np.ix_([2, 3, 5], [1, 2], [2, 3, 4, 5])  # GEO.2 A1 A2 B1, SEX 1 2, AGE.M bottom codes
    want = risk.entropy_risk_protected(original[interior], protected[interior])
    assert measures.loc["c1", "entropy_risk_protected@interior"] == pytest.approx(want, rel=1e-12)
    assert measures.loc["c2", "entropy_risk_protected@interior"] == pytest.approx(0.420133, abs=1e-6)


def test_a_release_without_pre_tabular_steps_measures_as_before(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    tiny_microdata(n_households=800).to_parquet(tmp_path / "data" / "persons.parquet")
    release = _config(tmp_path, pre_tabular="")
    _tabulate_and_protect(release)
    measures = pd.read_parquet(measure_release(release))
    before = measure_cubes(stored_pairs(release), MeasureSpec(), workers=2)  # the measure step until now
    pd.testing.assert_frame_equal(measures, before, check_exact=True)
    assert BASIS_COLUMN not in measures.columns
    out = release.config.output
    for cube_id, (original, _) in cube_pairs(release).items():
        assert original.identical(open_cube(out.original_store, cube_id)) and ORIGIN_ATTR not in original.attrs


def test_a_swap_at_rate_zero_published_unchanged_measures_no_loss_and_no_risk_reduction(tmp_path: Path) -> None:
    """The noise-free path: nothing moves, so the true original is original.zarr and r# = r."""
    (tmp_path / "data").mkdir()
    tiny_microdata(n_households=800).to_parquet(tmp_path / "data" / "persons.parquet")
    release = _config(tmp_path, IDENTITY, SWAP.replace("swap_rate: 0.2", "swap_rate: 0.0"))
    apply_pre_tabular(release)
    _tabulate_and_protect(release)
    measures = pd.read_parquet(measure_release(release))
    plain = measure_cubes(stored_pairs(release), MeasureSpec(), workers=2)
    pd.testing.assert_frame_equal(measures.drop(columns=BASIS_COLUMN), plain, check_exact=True)
    assert (measures["absolute_distance@interior"] == 0).all() and (measures[BASIS_COLUMN] == 1).all()
    r, r_sharp = measures["entropy_risk_original@interior"], measures["entropy_risk_protected@interior"]
    pd.testing.assert_series_equal(r, r_sharp, check_names=False)


def test_swapped_microdata_that_do_not_pair_with_the_delivered_ones_are_refused(swapped: Release) -> None:
    target = swapped.config.output.swapped_microdata
    after = pd.read_parquet(target)
    after.iloc[:-1].to_parquet(target)
    with pytest.raises(
        CubeguardError, match=r"do not pair with the delivered microdata \(they hold different numbers of records\)"
    ):
        release_moves(swapped)
    after.assign(pid=after["pid"][::-1].to_numpy()).to_parquet(target)
    with pytest.raises(
        CubeguardError, match=r"\(the person ids in column 'pid' differ row by row\); rerun the release with --fresh"
    ):
        release_moves(swapped)


def test_an_original_store_older_than_the_swapped_microdata_is_refused(tmp_path: Path) -> None:
    release = _exchange(tmp_path, IDENTITY)
    plain = load_release(tmp_path / "c.yaml", {"pre_tabular": []})
    write_tabulation(plain, tabulate_release(plain), release.config.output.original_store)  # not swapped
    after = pd.read_parquet(release.config.output.swapped_microdata)
    after.loc[after["hid"] == 4, "age"] = np.int16(2)  # h4 moves into (B, Y_LT15), empty in the store
    after.to_parquet(release.config.output.swapped_microdata)
    with pytest.raises(
        CubeguardError,
        match=r"cube 'c2' in .* does not hold the units the pre-tabular steps moved .*rerun the release with --fresh",
    ):
        cube_pairs(release)["c2"][0]["count"].values  # noqa: B018


def test_stores_that_do_not_fit_the_config_are_refused(swapped: Release, tmp_path: Path) -> None:
    text = swapped.path.read_text()
    folder = swapped.path.parent
    (folder / "narrow.yaml").write_text(text.replace("  - {id: hh, population: households, breakdowns: [GEO.2]}\n", ""))
    with pytest.raises(CubeguardError, match=r"holds cube\(s\) \['hh'\] the release config does not tabulate"):
        cube_pairs(load_release(folder / "narrow.yaml"))
    (folder / "other.yaml").write_text(text.replace("breakdowns: [GEO.1, AGE.L]", "breakdowns: [GEO.1, AGE.M]"))
    with pytest.raises(
        CubeguardError, match=r"cube 'c2' in .* has other dimensions than the release config tabulates; rerun"
    ):
        cube_pairs(load_release(folder / "other.yaml"))["c2"][0]["count"].values  # noqa: B018


def test_undoing_moves_by_hand() -> None:
    """Interior [2, 1, 1] after: one unit moved from cell 0 to 1, one came into cell 2 from outside the population.

    Before = after - arrivals + departures = [2 + 1, 1 - 1, 1 - 1] = [3, 0, 0]; the outside holds the
    newcomer before and no moved unit after. A store whose cell 1 is empty although a unit moved
    into it gives cell 1 a stayer count of -1, which the check refuses.
    """
    moves = CellMoves(np.array([0, -1]), np.array([1, 2]))
    after = np.array([2, 1, 1])
    before = undo_moves(after, moves)
    assert before.tolist() == [3, 0, 0]
    check_moves(before, after, moves)
    assert not moves.within and CellMoves(np.array([0]), np.array([1])).within
    stale = np.array([2, 0, 1])
    with pytest.raises(MeasureConfigError, match="non-negative persons"):
        check_moves(undo_moves(stale, moves), stale, moves)


def test_with_stayers_completes_the_transitions_and_refuses_a_cell_left_by_more_than_it_held() -> None:
    moved = Transitions.of([0, 1], [1, 0], [1, 1])
    full = with_stayers(moved, [3, 1, 2])
    assert sorted(zip(full.before.tolist(), full.after.tolist(), full.persons.tolist(), strict=True)) == [
        (0, 0, 2),
        (0, 1, 1),
        (1, 0, 1),
        (2, 2, 2),
    ]
    check_transitions(full, [3, 1, 2], [3, 1, 2])
    with pytest.raises(MeasureConfigError, match="non-negative persons"):
        check_transitions(with_stayers(Transitions.of([0, 0], [1, 1], [1, 1]), [1, 0]), [1, 0], [0, 1])


def test_changed_rows_compare_values_whatever_the_encoding() -> None:
    codes = pa.array(["A1", "A2", None, None, "B1"]).dictionary_encode()
    other = pa.array(["A1", "B1", None, "A1", "B1"])  # plain strings, as another writer may give them
    before = pa.RecordBatch.from_arrays([codes, pa.array([1, 2, 3, 4, 5])], ["region", "age"])
    after = pa.RecordBatch.from_arrays([other, pa.array([1, 2, 3, 4, 6])], ["region", "age"])
    assert _changed(before, after, ["region"]).tolist() == [False, True, False, True, False]
    assert _changed(before, after, ["region", "age"]).tolist() == [False, True, False, True, True]


def test_batches_split_differently_are_paired_row_by_row() -> None:
    def batches(sizes: list[int]) -> list[pa.RecordBatch]:
        starts = np.cumsum([0, *sizes])
        return [pa.RecordBatch.from_arrays([pa.array(range(a, b))], ["x"]) for a, b in itertools.pairwise(starts)]

    pairs = list(_aligned(iter(batches([3, 0, 4])), iter(batches([2, 5]))))
    assert [len(a) for a, _ in pairs] == [2, 1, 4]
    assert all(a.column(0).equals(b.column(0)) for a, b in pairs)
