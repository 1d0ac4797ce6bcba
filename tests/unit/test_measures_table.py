"""measure_cube and measure_cubes on the hand-made 3 x 4 cube of test_measures_deviations.

Interior original [[3, 0, 1], [2, 5, 0]] and protected [[3, 1, 0], [3, 4, 0]] are the table worked
by hand in test_measures_distance, _association, _risk; the expected values are copied from there.
"""

from __future__ import annotations

import typing

import numpy as np
import pytest
from pydantic import ValidationError

from cubeguard.cubes.tree import InvalidCubeError
from cubeguard.measures.errors import CubeMismatchError, MeasureConfigError
from cubeguard.measures.table import MEASURE_KEYS, MeasureName, MeasureSpec, measure_cube, measure_cubes
from tests.strategies import build_cube, flat_tree, override

ORIGINAL = build_cube(
    {"A": flat_tree("T", "a1", "a2"), "B": flat_tree("T", "b1", "b2", "b3")}, np.array([[3, 0, 1], [2, 5, 0]])
)
PROTECTED = override(ORIGINAL, np.array([[12, 5, 4, 1], [4, 3, 1, 0], [7, 3, 4, 0]]))


def test_default_measures_on_the_interior() -> None:
    out = measure_cube(ORIGINAL, PROTECTED, MeasureSpec())
    assert out["absolute_distance@interior"] == 4.0
    assert out["average_absolute_distance@interior"] == pytest.approx(4 / 6)
    assert out["rad@interior"] == pytest.approx(0.425)
    assert out["rad_sum@interior"] == pytest.approx(1.7)
    assert out["hellinger@interior"] == pytest.approx(0.3131039, abs=1e-7)
    assert out["max_abs_deviation@interior"] == 1.0
    assert out["spearman@interior"] == pytest.approx(0.850841, abs=1e-6)
    assert out["small_cells_unchanged@interior"] == 0.0
    assert out["zeros_kept@interior"] == 0.5
    assert out["entropy_risk_original@interior"] == pytest.approx(0.434634, abs=1e-6)
    assert out["entropy_risk_protected@interior"] == pytest.approx(0.305514, abs=1e-6)


def test_directly_disclosive_cells_of_the_cube() -> None:
    # k = 1 on the whole cube (12 cells). Original: (a1, b1) = 3 vs (a1, T) = 4, and (a2, b2) = 5
    # vs (T, b2) = 5. Protected: (a1, b1) = 3 vs (a1, T) = 4, and (a2, b2) = 4 vs (T, b2) = 4.
    out = measure_cube(ORIGINAL, PROTECTED, MeasureSpec(measures=("directly_disclosive",)))
    assert out == {
        "disclosive_original@cube": 2.0,
        "disclosive_protected@cube": 2.0,
        "disclosive_true@cube": 2.0,
        "disclosive_share_original@cube": pytest.approx(2 / 12),
        "disclosive_share_protected@cube": pytest.approx(2 / 12),
    }


def test_margin_scope_and_two_way_measures() -> None:
    spec = MeasureSpec(
        measures=("rad", "cramers_v", "median_entropy", "anova_r2", "avg_cell_size_variance"),
        scopes=("interior", ("B",)),
        entropy_groups=("A",),
        variance_by=("A",),
        anova_target="B",
    )
    out = measure_cube(ORIGINAL, PROTECTED, spec)
    # margin B: original [5, 5, 1], protected [5, 4, 1]: (0/5 + 1/5 + 0/1) / 3
    assert out["rad@B"] == pytest.approx(0.2 / 3)
    # two-way interior: Cramér's V 0.727029 -> 0.310530 (test_measures_association)
    assert out["cramers_v_original@interior"] == pytest.approx(0.727029, abs=1e-6)
    assert out["cramers_v_protected@interior"] == pytest.approx(0.310530, abs=1e-6)
    assert out["median_entropy_original@interior"] == pytest.approx(0.580302, abs=1e-6)
    assert out["anova_r2_original@interior"] == pytest.approx(0.025714, abs=1e-6)
    assert out["avg_cell_size_variance_original@interior"] == pytest.approx(0.25)
    # one-way margin: no Cramér's V, no ANOVA, no median entropy by A
    assert not [k for k in out if k.endswith("@B") and k != "rad@B"]


def test_cube_scope_has_no_entropy_risk() -> None:
    out = measure_cube(
        ORIGINAL, PROTECTED, MeasureSpec(measures=("entropy_risk", "absolute_distance"), scopes=("cube",))
    )
    # |deviations| over all 12 cells: 1 0 1 0 / 0 0 1 1 / 0 1 1 0 -> 6
    assert out == {"absolute_distance@cube": 6.0}


def test_swap_success_measure() -> None:
    out = measure_cube(ORIGINAL, ORIGINAL, MeasureSpec(measures=("swap_success",)))
    # identical cubes: every real case stays (0 removed) and every apparent one is real (0 false)
    assert out == {"swap_removed_share@cube": 0.0, "swap_false_share@cube": 0.0}


def test_spec_problems_are_reported_together() -> None:
    spec = MeasureSpec(scopes=("interior", ("A", "X")), sensitive_dims=("Y",))
    with pytest.raises(
        MeasureConfigError,
        match=r"scopes\[1\]: unknown dimension\(s\) \['X'\]; sensitive_dims: unknown dimension\(s\) \['Y'\]; known: A, B",
    ):
        measure_cube(ORIGINAL, PROTECTED, spec)


def test_anova_needs_a_target() -> None:
    with pytest.raises(ValidationError, match="measure 'anova_r2' needs 'anova_target'"):
        MeasureSpec(measures=("anova_r2",))


def test_spec_is_frozen_and_strict() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        MeasureSpec(measure=("rad",))  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="risk_weights must be three non-negative numbers summing to 1"):
        MeasureSpec(risk_weights=(1.0, 1.0, 0.0))


def test_mismatched_cubes() -> None:
    other = ORIGINAL.assign_coords(B=["T", "x", "y", "z"])
    with pytest.raises(CubeMismatchError, match="codes differ between original and protected along B"):
        measure_cube(ORIGINAL, other, MeasureSpec())


def test_measure_cubes_gives_one_row_per_cube() -> None:
    spec = MeasureSpec(measures=("absolute_distance",))
    frame = measure_cubes({"c1": (ORIGINAL, PROTECTED), "c2": (ORIGINAL, ORIGINAL)}, spec, workers=2)
    assert frame.index.name == "cube"
    assert frame["absolute_distance@interior"].to_dict() == {"c1": 4.0, "c2": 0.0}


def test_measure_cubes_reports_every_failing_cube() -> None:
    bad = ORIGINAL.drop_vars("A.depth")
    with pytest.raises(MeasureConfigError, match=r"2 cube\(s\) could not be measured: x: .*A.depth.*; y: .*A.depth"):
        measure_cubes([("x", (bad, bad)), ("ok", (ORIGINAL, PROTECTED)), ("y", (bad, bad))], MeasureSpec())


def test_measure_cube_needs_cubes() -> None:
    with pytest.raises(InvalidCubeError, match="measure_cube needs cubes"):
        measure_cube(np.ones(2), np.ones(2), MeasureSpec())  # type: ignore[arg-type]


def test_each_measure_once() -> None:
    with pytest.raises(ValidationError, match="list each measure once"):
        MeasureSpec(measures=("rad", "rad"))


@pytest.mark.parametrize("measure", typing.get_args(MeasureName))
def test_every_key_a_measure_writes_is_listed_under_that_measure(measure: str) -> None:
    """MEASURE_KEYS (what the sweep's risk and utility keys may name) matches what the table writes."""
    spec = MeasureSpec(
        measures=(measure,),
        scopes=("interior", "cube", ("B",)),
        entropy_groups=("A",),
        variance_by=("A",),
        anova_target="B" if measure == "anova_r2" else None,
    )
    keys = {k.partition("@")[0] for k in measure_cube(ORIGINAL, PROTECTED, spec)}
    assert keys
    if measure == "anova_r2":  # not offered to sweeps
        assert not keys & set(MEASURE_KEYS)
        return
    assert {MEASURE_KEYS[k][0] for k in keys} == {measure}
    assert keys == {k for k, (m, _) in MEASURE_KEYS.items() if m == measure}


def test_the_default_measures_hold_the_log_linear_fit_of_each_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two-way interior: the model without the highest-order interaction is independence, X2 = n V^2."""
    out = measure_cube(ORIGINAL, PROTECTED, MeasureSpec())
    assert out["loglinear_fit_original@interior"] == pytest.approx(11 * 0.727029**2, rel=1e-5)
    assert out["loglinear_fit_protected@interior"] == pytest.approx(11 * 0.310530**2, rel=1e-5)
    assert not [k for k in out if k.startswith("loglinear") and k.endswith("@cube")]  # totals are no table
    monkeypatch.setattr("cubeguard.measures.table.LOGLINEAR_MAX_CELLS", 5)  # the interior has 6 cells
    too_big = measure_cube(ORIGINAL, PROTECTED, MeasureSpec())
    assert np.isnan(too_big["loglinear_fit_original@interior"]) and np.isnan(
        too_big["loglinear_fit_protected@interior"]
    )
