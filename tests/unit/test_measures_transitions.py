"""Entropy risk r# with the unit transitions of record swapping (Handbook on SDC v2, 5.9)."""

from __future__ import annotations

import numpy as np
import pytest

from cubeguard.measures import risk
from cubeguard.measures.errors import MeasureConfigError
from cubeguard.measures.transitions import Transitions, check_transitions, merged

TABLE = [3, 2, 1, 0]
# a swap exchanges one person of cell 0 with one of cell 1: the counts stay [3, 2, 1, 0]
SWAP = Transitions.of([0, 0, 1, 1, 2], [0, 1, 0, 1, 2], [2, 1, 1, 1, 1])


def test_unit_transitions_lower_r_sharp_of_a_swap_that_keeps_the_counts() -> None:
    """Hand-worked: k = 4, |D| = |Q| = 1 (D = Q, exponent 1), N = 6.

    H = ln 6 - (3 ln 3 + 2 ln 2) / 6 = 1.791759 - 0.780355 = 1.011404
    1 - H / ln 4 = 1 - 1.011404 / 1.386294 = 0.270426; size term (1 + 0.5 ln 6) / sqrt 6 = 0.773990
    r = (1/4 + 0.270426 + 0.773990) / 3 = 0.431472.

    Cell-value transitions: every cell keeps its value, so H(X|Y) = 0 and r# = r = 0.431472.

    Unit transitions F = {0->0: 2, 0->1: 1, 1->0: 1, 1->1: 1, 2->2: 1}: cell 0 after holds two
    persons from cell 0 and one from cell 1, cell 1 one from each, cell 2 its own person:
    H(X|Y) = (3/6)(ln 3 - (2/3) ln 2) + (2/6) ln 2 = 0.318257 + 0.231049 = 0.549306;
    H#/H = 0.543112, kept 0.456888; r# = (1/4 + 0.270426 * 0.456888 + 0.773990) / 3 = 0.382515.
    """
    assert risk.entropy_risk(TABLE) == pytest.approx(0.431472, abs=1e-6)
    assert risk.entropy_risk_protected(TABLE, TABLE) == pytest.approx(0.431472, abs=1e-6)
    assert risk.entropy_risk_protected(TABLE, TABLE, transitions=SWAP) == pytest.approx(0.382515, abs=1e-6)


def test_sparse_transitions_agree_with_the_dense_matrix_and_repeated_pairs_add_up() -> None:
    dense = np.array([[2, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]])
    split = Transitions.of([0, 1, 0, 2, 1, 0], [0, 1, 1, 2, 0, 0], [1, 1, 1, 1, 1, 1])  # 0->0 given twice
    want = risk.entropy_risk_protected(TABLE, TABLE, transitions=SWAP)
    assert risk.entropy_risk_protected(TABLE, TABLE, transitions=dense) == pytest.approx(want)
    assert risk.entropy_risk_protected(TABLE, TABLE, transitions=split) == pytest.approx(want)
    m = merged(split, 4)
    assert list(zip(m.before.tolist(), m.after.tolist(), m.persons.tolist(), strict=True)) == [
        (0, 0, 2),
        (0, 1, 1),
        (1, 0, 1),
        (1, 1, 1),
        (2, 2, 1),
    ]


def test_transitions_that_do_not_give_the_tables_are_refused() -> None:
    lost = Transitions.of([0, 1], [0, 1], [3, 2])  # the person of cell 2 is missing
    with pytest.raises(MeasureConfigError, match="must move the original table into the protected one"):
        risk.entropy_risk_protected(TABLE, TABLE, transitions=lost)


def test_transitions_outside_the_table_are_refused() -> None:
    with pytest.raises(MeasureConfigError, match="transitions must name cells 0 to 3 and non-negative persons"):
        check_transitions(Transitions.of([0, 4], [0, 1], [3, 2]), TABLE, TABLE)
    with pytest.raises(MeasureConfigError, match="transitions must name cells 0 to 3 and non-negative persons"):
        check_transitions(Transitions.of([0, 1], [0, 1], [4, -1]), TABLE, TABLE)


def test_misaligned_transitions_are_refused() -> None:
    bad = Transitions(np.array([0, 1]), np.array([0]), np.array([1, 1]))
    with pytest.raises(MeasureConfigError, match="three aligned one-dimensional arrays"):
        check_transitions(bad, TABLE, TABLE)
