"""Posterior probabilities of original counts (Enderle, Giessing and Tent 2020), worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from cubeguard.ckm.risk import (
    PriorError,
    max_disclosure_probability,
    posterior_probabilities,
    transition_matrix,
    uniform_prior,
)
from tests.ckm_tables import HANDBOOK_TABLE

TABLE = HANDBOOK_TABLE  # Handbook on SDC v2, Table 5.16 (tests/ckm_tables.py)


def test_transition_matrix_shifts_the_last_block() -> None:
    m = transition_matrix(TABLE, 6)
    assert m.shape == (6, 7)
    np.testing.assert_allclose(m.sum(axis=1), 1.0)
    assert m[5].tolist() == [0, 0, 0, 0, 0.3, 0.4, 0.3]
    assert m[1].tolist() == [0.5, 0, 0.5, 0, 0, 0, 0]


def test_uniform_prior_by_hand() -> None:
    # j = 2 comes from i = 1 (0.5), 2 (0.8), 3 (0.3): posteriors 0.5/1.6, 0.8/1.6, 0.3/1.6.
    # j = 3 comes from i = 2 (0.2), 3 (0.4), 4 (0.3); j = 0 only from i = 1 (0 excluded).
    risk = posterior_probabilities(TABLE, i_max=3)
    assert risk.original.tolist() == [0, 1, 2, 3] and risk.published.tolist() == [0, 1, 2, 3, 4]
    p = risk.probability
    assert p[1, 0] == pytest.approx(1.0)
    assert np.isnan(p[:, 1]).all()  # 1 is never published
    np.testing.assert_allclose(p[1:, 2], [0.5 / 1.6, 0.8 / 1.6, 0.3 / 1.6])
    np.testing.assert_allclose(p[2:, 3], [0.2 / 0.9, 0.4 / 0.9])
    assert p[3, 4] == pytest.approx(0.3 / 1.0)
    assert max_disclosure_probability(TABLE) == pytest.approx(1.0)


def test_uniform_prior_with_zero() -> None:
    # Zeros count as possible originals: P(1 | 0) = 0.5 / (1 + 0.5); the worst small case is
    # then P(2 | 2) = 0.5.
    prior = uniform_prior(20, include_zero=True)
    p = posterior_probabilities(TABLE, prior, i_max=2).probability
    assert p[1, 0] == pytest.approx(1 / 3)
    assert max_disclosure_probability(TABLE, prior) == pytest.approx(0.5)
    # only i = 1: max(P(1 | 0), P(1 | 2)) = max(1/3, 0.3125)
    assert max_disclosure_probability(TABLE, prior, i_max=1) == pytest.approx(1 / 3)


def test_empirical_prior_by_hand() -> None:
    # 10 empty cells, 2 ones, 4 twos, 6 threes, 8 of each larger count.
    prior = [10, 2, 4, 6, 8, 8, 8, 8, 8, 8]
    p = posterior_probabilities(TABLE, prior, i_max=3).probability
    assert p[0, 0] == pytest.approx(10 / 11)
    np.testing.assert_allclose(p[1:, 2], [1 / 6, 3.2 / 6, 1.8 / 6])  # 2*.5, 4*.8, 6*.3 of 6
    assert p[2, 3] == pytest.approx(0.8 / 5.6)  # 4*.2 / (4*.2 + 6*.4 + 8*.3)
    assert p[3, 4] == pytest.approx(1.8 / 7.4)  # 6*.3 / (6*.3 + 8*.4 + 8*.3)
    np.testing.assert_allclose(np.nansum(p, axis=0)[[0, 2]], 1.0)
    assert max_disclosure_probability(TABLE, prior) == pytest.approx(3.2 / 6)


@pytest.mark.parametrize("prior", [[-1, 2], [[1, 2]], [0, 0], [1, np.inf]])
def test_bad_priors_are_rejected(prior: list[float]) -> None:
    with pytest.raises(PriorError, match="non-negative weights"):
        posterior_probabilities(TABLE, prior)


def test_i_max_must_be_positive() -> None:
    with pytest.raises(PriorError, match="at least 1"):
        max_disclosure_probability(TABLE, None, i_max=0)


def test_to_frame() -> None:
    frame = posterior_probabilities(TABLE, i_max=2).to_frame()
    assert list(frame.columns) == ["i", "j", "probability"] and len(frame) == 3 * 4
