"""A swap step's report on its cubes: unit transitions for r#, imputed records in the success measures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from cubeguard.config import load_release
from cubeguard.config.load import Release
from cubeguard.errors import CubeguardError
from cubeguard.pipeline.swap_effect import _tabulate, cube_effects
from cubeguard.pipeline.unit_moves import interior_cells, paired_rows, unit_transitions
from tests.conftest import TINY_CONFIG, tiny_microdata


@pytest.fixture
def release(tmp_path: Path) -> Release:
    (tmp_path / "c.yaml").write_text(TINY_CONFIG)
    return load_release(tmp_path / "c.yaml")


def _persons(households: list[tuple[str, list[int]]], imputed: frozenset[int] = frozenset()) -> pd.DataFrame:
    """One row per person: household ``h`` (1-based) in its region with the listed ages."""
    rows = [
        {"hid": h, "is_ref": n == 0, "region": region, "sex": "1", "age": age, "imp": h in imputed}
        for h, (region, ages) in enumerate(households, start=1)
        for n, age in enumerate(ages)
    ]
    frame = pd.DataFrame(rows)
    frame.insert(0, "pid", np.arange(len(frame)) + 100)
    return frame


def test_interior_cells_are_the_cells_the_tabulator_counts(release: Release) -> None:
    frame = tiny_microdata(n_households=400)
    tab = _tabulate(release, [c.id for c in release.config.hypercubes], frame)
    batch = pa.RecordBatch.from_pandas(frame, preserve_index=False)
    for c, plan in enumerate(tab.plans):
        cells = interior_cells(plan, release.config.populations, "is_ref", batch)
        counts = np.bincount(cells[cells >= 0], minlength=int(np.prod(plan.shape)))
        np.testing.assert_array_equal(counts, tab.bottom(c)[0].ravel(), err_msg=plan.cube_id)


def test_swap_that_keeps_the_counts_lowers_r_sharp_by_hand(release: Release) -> None:
    """Cube c2 = GEO.1 x AGE.L, interior (A, B) x (Y_LT15, Y15-64, Y_GE65).

    Before: A1 [30, 40], A2 [50], B1 [30], B1 [20], A1 [10] -> interior [1, 3, 0, 0, 2, 0].
    The swap exchanges the regions of households 2 (A2, 50) and 3 (B1, 30): the counts stay.
    k = 6, |D| = |Q| = 3 (exponent 1), N = 6; H = ln 6 - (3 ln 3 + 2 ln 2)/6 = 1.011404;
    1 - H / ln 6 = 0.435524; size term (1 + 0.5 ln 6)/sqrt 6 = 0.773990.
    r = (3/6 + 0.435524 + 0.773990) / 3 = 0.569838 (and r# with cell-value transitions, which all stay).
    Unit transitions: (A,15-64) -> (A,15-64) 2, -> (B,15-64) 1; (B,15-64) -> (A,15-64) 1,
    -> (B,15-64) 1; (A,LT15) stays 1. H(X|Y) = (3/6)(ln 3 - (2/3) ln 2) + (2/6) ln 2 = 0.549306,
    kept 1 - 0.549306 / 1.011404 = 0.456888; r# = (0.5 + 0.435524 * 0.456888 + 0.773990) / 3 = 0.490992.
    """
    households = [("A1", [30, 40]), ("A2", [50]), ("B1", [30]), ("B1", [20]), ("A1", [10])]
    before = _persons(households)
    after = before.copy()
    after.loc[after["hid"] == 2, "region"], after.loc[after["hid"] == 3, "region"] = "B1", "A2"
    effects = cube_effects(release, ["c2"], before, after.iloc[::-1])["c2"]  # rows paired by person id
    assert effects["unit_transitions@interior"] == 1.0
    assert effects["absolute_distance@interior"] == 0.0
    assert effects["entropy_risk_original@interior"] == pytest.approx(0.569838, abs=1e-6)
    assert effects["entropy_risk_protected@interior"] == pytest.approx(0.490992, abs=1e-6)


def test_disclosive_cell_of_imputed_records_only_is_not_a_real_case(release: Release) -> None:
    """Cube hh = GEO.2 of households: A1 2, A2 0, B1 1 (B1 is B's sole child, so B is skipped).

    With k = 0 the only directly disclosive cell is A1 (= A = 2). Unswapped, it stays apparent:
    without imputation it is real and kept, removed 0 of 1 and false 0 of 1. Both A1 households
    imputed: no real case (removed share undefined) and the one apparent case is false (1 of 1).
    """
    before = _persons([("A1", [30]), ("A1", [40]), ("B1", [50])], imputed=frozenset({1, 2}))
    plain = cube_effects(release, ["hh"], before, before)["hh"]
    assert (plain["swap_removed_share@cube"], plain["swap_false_share@cube"]) == (0.0, 0.0)
    real = cube_effects(release, ["hh"], before, before, imputed="imp")["hh"]
    assert real["swap_removed_share@cube"] is None
    assert real["swap_false_share@cube"] == 1.0


def test_persons_entering_the_cube_leave_cell_value_transitions() -> None:
    assert unit_transitions(np.array([0, 1, -1]), np.array([1, 0, 1]), 2) is None
    moves = unit_transitions(np.array([0, 1, -1]), np.array([1, 0, -1]), 2)
    assert moves is not None and moves.persons.tolist() == [1, 1]


def test_person_ids_that_do_not_pair_the_records_are_refused() -> None:
    before = pd.DataFrame({"pid": [1, 2, 3]})
    with pytest.raises(CubeguardError, match="the person ids in column 'pid' do not pair the records"):
        paired_rows(before, pd.DataFrame({"pid": [1, 2, 2]}), "pid")
    with pytest.raises(CubeguardError, match="different rows; keep every record"):
        paired_rows(before, pd.DataFrame({"x": [1]}), None)
