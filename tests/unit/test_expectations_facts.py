"""The facts frame GX validates: compact, exact, and checked against itself by the metrics."""

from __future__ import annotations

import numpy as np
import pytest

from cubeguard.config.models import GateSpec
from cubeguard.gates import evaluate_cube
from expectations.additivity import additivity_summary
from expectations.facts import ADDITIVITY, PUBLISHED_VALUES, SMALL_CELLS, cube_frame, rows
from tests.strategies import build_cube, flat_tree, override

ALL = GateSpec(forbidden_values=[1, 2], max_small_cells_unchanged=0.5)


def _result():
    dims = {"GEO": flat_tree("G", "G1", "G2", "G3"), "SEX": flat_tree("S", "S1", "S2")}
    original = build_cube(dims, np.array([[1, 2], [1, 9], [2, 5]]))
    counts = original["count"].values.copy()
    counts[1, 1] = 0
    return evaluate_cube(original, override(original, counts), {}, ALL, additivity=True)


def test_one_row_per_value_small_value_and_group() -> None:
    result = _result()
    frame = cube_frame(result)
    values = rows(frame, PUBLISHED_VALUES)
    listed = result.forbidden.values <= 2
    assert values["published"].tolist() == [*result.forbidden.values[listed].tolist(), 3]
    assert values["above"].tolist() == [False] * int(listed.sum()) + [True]
    assert int(values["cells"].sum()) == 12
    assert rows(frame, SMALL_CELLS)[["original", "cells", "unchanged"]].values.tolist() == [[1, 2, 1], [2, 2, 2]]
    groups = rows(frame, ADDITIVITY)
    assert list(zip(groups["dimension"], groups["parent"], strict=True)) == [("SEX", "S"), ("GEO", "G")]
    assert str(groups["parent_total"].dtype) == "Int64"


def test_the_summary_adds_up_what_the_core_found() -> None:
    result = _result()
    summary = additivity_summary(rows(cube_frame(result), ADDITIVITY))
    found = result.additivity
    assert summary == {
        "checked": found.checked,
        "violations": found.violations,
        "max_gap": found.max_gap,
        "examples": list(found.examples),
    }


def test_a_group_that_hides_its_violations_is_refused() -> None:
    groups = rows(cube_frame(_result()), ADDITIVITY).copy()
    groups["non_additive"] = 0
    with pytest.raises(ValueError, match=r"2 group\(s\) reported additive have unequal sums, e\.g\. SEX=S: 40 != 39"):
        additivity_summary(groups)


def test_more_violations_than_cells_are_refused() -> None:
    groups = rows(cube_frame(_result()), ADDITIVITY).copy()
    groups["non_additive"] = groups["cells"] + 1
    with pytest.raises(ValueError, match="more non-additive cells than it has"):
        additivity_summary(groups)


def test_a_forbidden_value_hidden_above_the_listed_ones_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    import expectations.forbidden as forbidden_module

    frame = cube_frame(_result())
    metric = forbidden_module.CubeForbiddenCells._pandas.__wrapped__  # the plain function GX wraps

    class Engine:
        def get_compute_domain(self, *_args, **_kwargs):
            return frame, None, None

    found = metric(None, Engine(), {}, {"column": "published", "value_set": [1, 2]}, {}, {})
    assert found["cells"] == int(np.isin(_result().forbidden.values, [1, 2]) @ _result().forbidden.counts)
    with pytest.raises(ValueError, match="may hide a forbidden value"):
        metric(None, Engine(), {}, {"column": "published", "value_set": [1, 2, 5]}, {}, {})
