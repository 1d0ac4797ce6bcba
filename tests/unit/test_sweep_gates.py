"""The sweep's gate checks: the core gates (cubeguard.gates) seen as one sweep row per cube."""

from __future__ import annotations

import doctest
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import cubeguard.sweep.gates as gates_module
from cubeguard.config.models import GateSpec
from cubeguard.measures.table import MeasureSpec, measure_cube
from cubeguard.sweep.gates import evaluate_gates
from tests.strategies import build_cube, flat_tree, override

SPEC = MeasureSpec(measures=("hellinger", "average_absolute_distance"))


def test_doctests() -> None:
    assert doctest.testmod(gates_module).failed == 0


def _pair() -> tuple:
    dims = {"GEO": flat_tree("G", "G1", "G2", "G3"), "SEX": flat_tree("S", "S1", "S2")}
    return build_cube(dims, np.array([[1, 2], [1, 9], [2, 5]]))


@settings(deadline=None)
@given(st.integers(0, 3), st.integers(0, 2))
def test_each_threshold_fails_exactly_when_crossed(row: int, col: int) -> None:
    original = _pair()
    counts = original["count"].values.copy()
    counts[row, col] += 1  # one cell one up: a planted non-additivity and a changed cell
    protected = override(original, counts)
    measures = measure_cube(original, protected, SPEC)
    o = original["count"].values
    small = o[np.isin(o, (1, 2))]
    unchanged = ((counts == o) & np.isin(o, (1, 2))).sum() / small.size
    gates = GateSpec(
        forbidden_values=[int(counts[row, col])],
        max_small_cells_unchanged=unchanged,
        require_additivity=True,
        max_hellinger=measures["hellinger@interior"],
        max_mean_absolute_deviation=measures["average_absolute_distance@interior"],
    )
    at_bounds = evaluate_gates(original, protected, measures, gates)
    assert at_bounds.failing == ("forbidden_values", "require_additivity")
    assert at_bounds.forbidden_cells == int((counts == counts[row, col]).sum())
    assert math.isclose(at_bounds.small_cells_unchanged, unchanged)
    # the changed cell if it is a total, and the totals above it (the grand total once)
    assert at_bounds.non_additive_cells == 1 + (row > 0 or col > 0)
    tighter = GateSpec(
        max_small_cells_unchanged=max(unchanged - 0.01, 0),
        max_hellinger=measures["hellinger@interior"] * 0.99,
        max_mean_absolute_deviation=measures["average_absolute_distance@interior"] * 0.99,
    )
    failing = evaluate_gates(original, protected, measures, tighter).failing
    expected = ("max_small_cells_unchanged",) if unchanged > 0 else ()
    interior = row > 0 and col > 0
    expected += ("max_hellinger", "max_mean_absolute_deviation") if interior else ()
    assert failing == expected
    assert evaluate_gates(original, protected, measures, tighter).row()["passes"] is (not expected)


def test_undefined_measures_and_no_small_cells_pass() -> None:
    dims = {"SEX": flat_tree("S", "S1", "S2")}
    original = build_cube(dims, np.array([5, 7]))
    gates = GateSpec(max_small_cells_unchanged=0.0, max_hellinger=0.0)
    result = evaluate_gates(original, original, {"hellinger@interior": math.nan}, gates)
    assert result.failing == () and math.isnan(result.small_cells_unchanged)
    assert result.row() == {
        "gate.forbidden_cells": None,
        "gate.small_cells_unchanged": result.small_cells_unchanged,
        "gate.non_additive_cells": None,
        "gate.recovered_by_attack": None,  # no attack bound set
        "passes": True,
        "failing": "",
    }
