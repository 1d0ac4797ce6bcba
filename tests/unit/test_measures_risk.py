"""Small cells unchanged, zeros kept, and the entropy risk r and r# (Handbook on SDC v2, 5.9)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cubeguard.measures import risk
from cubeguard.measures.errors import MeasureConfigError

ORIG = np.array([3, 0, 1, 2, 5, 0])
PROT = np.array([3, 1, 0, 3, 4, 0])


def test_small_cells_unchanged_by_hand() -> None:
    # originals 1 (-> 1), 2 (-> 0), 2 (-> 3): one of three small cells unchanged
    assert risk.small_cells_unchanged([1, 2, 2, 5], [1, 0, 3, 5]) == pytest.approx(1 / 3)
    # ORIG, PROT: the 1 became 0 and the 2 became 3
    assert risk.small_cells_unchanged(ORIG, PROT) == 0.0
    # with small = {3}: the 3 stayed 3
    assert risk.small_cells_unchanged(ORIG, PROT, small={3}) == 1.0


def test_small_cells_unchanged_without_small_cells_is_nan() -> None:
    assert math.isnan(risk.small_cells_unchanged([5, 6], [5, 6]))


def test_zeros_kept_by_hand() -> None:
    # two original zeros; the first became 1, the second stayed 0
    assert risk.zeros_kept(ORIG, PROT) == 0.5


def test_entropy_risk_r_by_hand() -> None:
    # k = 6 cells, |D| = 2 zeros, N = 11.
    # H = ln 11 - (3 ln 3 + 1 ln 1 + 2 ln 2 + 5 ln 5) / 11 = 2.397895 - 1.157211 = 1.240684
    # 1 - H / ln 6 = 1 - 1.240684 / 1.791759 = 0.307561
    # size term (1 + 0.5 ln 11) / sqrt(11) = 2.198948 / 3.316625 = 0.663009
    # r = (2/6 + 0.307561 + 0.663009) / 3 = 0.434634
    assert risk.entropy_risk(ORIG) == pytest.approx(0.434634, abs=1e-6)


def test_entropy_risk_r_sharp_by_hand() -> None:
    # Q (zeros of PROT) = {2, 5}, D = {1, 5}: |D u Q| = 3, |D n Q| = 1 -> (2/6)^3 = 0.037037
    # value transitions (o, p): (3,3) (0,1) (1,0) (2,3) (5,4) (0,0), one cell each:
    # H(X) over originals 0,0,1,2,3,5 = ln 6 - 2 ln 2 / 6 = 1.560710
    # H(X|Y): Y = 3 from X in {3, 2}, Y = 0 from X in {1, 0}, Y = 1 and Y = 4 from one value:
    #   (2/6) ln 2 + (2/6) ln 2 = 0.462098; ratio 0.296083; kept 1 - 0.296083 = 0.703917
    # r# = (0.037037 + 0.307561 * 0.703917 + 0.663009) / 3 = (0.037037 + 0.216497 + 0.663009) / 3 = 0.305514
    assert risk.entropy_risk_protected(ORIG, PROT) == pytest.approx(0.305514, abs=1e-6)


def test_entropy_risk_with_person_transitions_by_hand() -> None:
    # table [2, 1, 0]; a swap moves one person from cell 0 to cell 1 and one from cell 1 to cell 0,
    # so the published table is the same. k = 3, |D| = 1, N = 3.
    # H = ln 3 - 2 ln 2 / 3 = 0.636514; 1 - H / ln 3 = 0.420620; size term (1 + 0.5 ln 3)/sqrt 3 = 0.894492
    # r = (1/3 + 0.420620 + 0.894492) / 3 = 0.549482
    # F = [[1, 1, 0], [1, 0, 0], [0, 0, 0]]: H(X) = H = 0.636514; column 0 holds one person from
    # each of cells 0 and 1, column 1 one from cell 0: H(X|Y) = (2/3) ln 2 = 0.462098; kept 0.274019
    # D = Q = {2}: exponent 1 -> 1/3.  r# = (1/3 + 0.420620 * 0.274019 + 0.894492) / 3 = 0.447694
    f = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0]])
    assert risk.entropy_risk([2, 1, 0]) == pytest.approx(0.549482, abs=1e-6)
    assert risk.entropy_risk_protected([2, 1, 0], [2, 1, 0], transitions=f) == pytest.approx(0.447694, abs=1e-6)


def test_identity_protection_keeps_the_risk() -> None:
    # no perturbation: D = Q (exponent 1), H(X|Y) = 0 (kept 1), so r# = r
    assert risk.entropy_risk_protected(ORIG, ORIG) == pytest.approx(risk.entropy_risk(ORIG))


def test_value_transitions_with_large_values() -> None:
    i, j, f = risk.value_transitions([0, 5000, 5000, 2], [1, 5001, 5001, 2])
    assert list(zip(i.tolist(), j.tolist(), f.tolist(), strict=True)) == [(0, 1, 1), (2, 2, 1), (5000, 5001, 2)]


def test_bad_weights() -> None:
    with pytest.raises(MeasureConfigError, match="three non-negative numbers summing to 1"):
        risk.entropy_risk(ORIG, (0.5, 0.5, 0.5))


def test_empty_table() -> None:
    with pytest.raises(MeasureConfigError, match="needs a table with a positive total"):
        risk.entropy_risk([0, 0])


def test_bad_transition_matrix() -> None:
    with pytest.raises(MeasureConfigError, match=r"transitions must be a non-negative 6 x 6 matrix"):
        risk.entropy_risk_protected(ORIG, PROT, transitions=np.ones((2, 2)))
