"""Disclosure risk of a p-table: how likely a published count came from a small original count.

An intruder who knows the p-table and sees a published count ``j`` can compute the posterior
probability of every original count ``i`` (Enderle, Giessing and Tent 2020, "Calculation of risk
probabilities for the cell key method", PSD 2020, LNCS 12276, section 2):

    P(i | j) = p_ij * prior_i / sum_k p_kj * prior_k,

where ``p_ij`` is the p-table's probability of publishing ``j`` for original ``i`` (counts
``>= max i`` use the last block, shifted: ``p_ij = p(v = j - i)``). A high ``P(1 | j)`` or
``P(2 | j)`` means published figures reveal small counts (Handbook on SDC v2, 5.4 and 5.9).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from cubeguard.ckm.ptable import PTable
from cubeguard.errors import CubeguardError

if TYPE_CHECKING:
    import pandas as pd


class PriorError(CubeguardError):
    """A prior that cannot weight original counts."""


@dataclass(frozen=True, eq=False)
class RiskTable:
    """``probability[a, b] = P(original = original[a] | published = published[b])``.

    Columns of published values that cannot occur (e.g. ``1..js``) hold NaN.
    """

    original: npt.NDArray[np.int64]
    published: npt.NDArray[np.int64]
    probability: npt.NDArray[np.float64]

    def to_frame(self) -> pd.DataFrame:
        """Long format with columns ``i`` (original), ``j`` (published), ``probability``."""
        import pandas as pd

        i, j = np.meshgrid(self.original, self.published, indexing="ij")
        return pd.DataFrame({"i": i.ravel(), "j": j.ravel(), "probability": self.probability.ravel()})


def transition_matrix(ptable: PTable, n_original: int) -> npt.NDArray[np.float64]:
    """Transition matrix ``P[i, j]``: probability of publishing ``j`` for original ``i``.

    Rows ``i < n_original``, columns ``j < n_original + max_noise`` (all that they can reach).
    """
    matrix = np.zeros((n_original, n_original + ptable.max_noise))
    for count in range(n_original):
        rows = ptable.block(count)
        published = count + ptable.v[rows]  # i >= max_i: the last block, shifted
        np.add.at(matrix[count], published, ptable.p[rows])
    return matrix


def uniform_prior(n_original: int, *, include_zero: bool = False) -> npt.NDArray[np.float64]:
    """Equal weight for the original counts ``1..n_original - 1`` (and 0 if ``include_zero``).

    Leaving out 0 assumes the intruder knows a cell is not empty; 0 is never perturbed.
    """
    prior = np.ones(n_original)
    prior[0] = 1.0 if include_zero else 0.0
    return prior


def posterior_probabilities(
    ptable: PTable, prior: npt.ArrayLike | None = None, *, i_max: int | None = None
) -> RiskTable:
    """``P(i | j)`` for originals ``i = 0..i_max`` and published ``j = 0..i_max + D``.

    Args:
        ptable: the p-table; ``D`` is its largest absolute noise.
        prior: weight of each original count, index = count (e.g. ``np.bincount`` of the
            original counts of a table for the empirical prior); missing entries are 0.
            None means :func:`uniform_prior` over the counts ``1..i_max + 2D``.
        i_max: the largest original count shown; default ``max i`` of the p-table.

    Originals up to ``i_max + 2D`` can reach the columns shown, so the result is exact for
    any prior whose support is longer.
    """
    i_max = ptable.max_i if i_max is None else i_max
    n_original = i_max + 2 * ptable.max_noise + 1
    n_published = i_max + ptable.max_noise + 1
    joint = transition_matrix(ptable, n_original)[:, :n_published]
    joint *= _prior_weights(prior, n_original)[:, None]
    evidence = joint.sum(axis=0)  # P(j) up to a constant
    with np.errstate(invalid="ignore", divide="ignore"):
        probability = np.where(evidence > 0, joint[: i_max + 1] / evidence, np.nan)
    original = np.arange(i_max + 1, dtype=np.int64)
    return RiskTable(original, np.arange(n_published, dtype=np.int64), probability)


def _prior_weights(prior: npt.ArrayLike | None, n_original: int) -> npt.NDArray[np.float64]:
    if prior is None:
        return uniform_prior(n_original)
    given = np.asarray(prior, dtype=np.float64)
    if given.ndim != 1 or not np.all(np.isfinite(given)) or np.any(given < 0) or given.sum() == 0:
        raise PriorError(
            "the prior must be a 1-D array of finite, non-negative weights (index = original "
            "count) with a positive sum, e.g. np.bincount(original_counts)."
        )
    weights = np.zeros(n_original)
    weights[: min(given.size, n_original)] = given[:n_original]
    return weights


def max_disclosure_probability(ptable: PTable, prior: npt.ArrayLike | None = None, i_max: int = 2) -> float:
    """Largest ``P(i | j)`` over the small originals ``i = 1..i_max`` and every published ``j``.

    A release gate can require it to stay below a threshold (Enderle, Giessing, Tent 2020).
    """
    if i_max < 1:
        raise PriorError("i_max of max_disclosure_probability must be at least 1, e.g. 2.")
    risk = posterior_probabilities(ptable, prior, i_max=i_max)
    return float(np.nan_to_num(risk.probability[1:], nan=0.0).max())
