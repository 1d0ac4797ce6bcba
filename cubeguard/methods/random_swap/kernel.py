"""Random record swapping within strata (Shlomo 2009, SDC for European Census Dissemination, 3.1).

In each stratum (control variables such as NUTS2 and household size) a simple random sample of
``swap_rate`` of the units is drawn (``n * swap_rate`` rounded up or down at random, unbiased); each
sampled unit is paired with a unit drawn uniformly from the unsampled, not yet paired units of the
same stratum whose swap columns differ (e.g. another LAU2), and the two exchange their swap and
carry-along columns. About ``2 * swap_rate`` of the units change. Units are records, or whole
households when ``unit_id`` is given (then strata and swapped columns must be household-level).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cubeguard.methods.random_swap.model import RandomSwapStep
from cubeguard.swap import _donors, _ordering
from cubeguard.swap._households import (
    IntArray,
    check_columns,
    check_household_level,
    encode_households,
    exchange,
    group_codes,
    household_values,
    raise_problems,
)
from cubeguard.swap.common import generator, number


@dataclass(frozen=True)
class RandomSwapResult:
    """Outcome of :func:`random_swap`.

    Attributes:
        data: the swapped data: same rows and order, only swap and carry-along columns changed.
        partner: partner unit per unit (itself when not swapped), indexed by unit id (row position
            when units are records).
        no_partner: sampled units for which the stratum had no unit with other swap values left.
        n_units_swapped: units that changed (both sides of every pair).
        n_rows_swapped: rows in those units.
    """

    data: pd.DataFrame
    partner: pd.Series
    no_partner: pd.Index
    n_units_swapped: int
    n_rows_swapped: int


def random_swap(data: pd.DataFrame, params: RandomSwapStep, seed: int) -> RandomSwapResult:
    """Swap ``params.swap_columns`` between random pairs of units of the same stratum.

    Args:
        data: one row per record.
        params: the swap parameters.
        seed: seed of the PCG64 generator; the same seed and data give the same swaps.

    Raises:
        SwapDataError: a column is missing, has missing values or varies within a household.
        SwapSeedError: the seed is not a non-negative integer.
    """
    rng = generator(seed)
    moved = [*params.swap_columns, *params.carry_along]
    unit_columns = [*params.strata, *moved]
    id_columns = [params.unit_id] if params.unit_id is not None else []
    raise_problems(check_columns(data, [*id_columns, *unit_columns], "random swap"))
    units = encode_households(data, params.unit_id)
    raise_problems(check_household_level(data, units, unit_columns) if params.unit_id else [])
    stratum, n_strata = group_codes(household_values(data, units, params.strata), units.n)
    values, _ = group_codes(household_values(data, units, params.swap_columns), units.n)
    sampled = _sample(stratum, n_strata, number(params.swap_rate), rng)
    state = _pair(stratum, n_strata, values, sampled, rng)
    partner = np.where(state[_donors.PARTNER] >= 0, state[_donors.PARTNER], np.arange(units.n))
    swapped = state[_donors.PARTNER] >= 0
    return RandomSwapResult(
        data=exchange(data, units, partner, moved),
        partner=pd.Series(units.ids[partner], index=units.ids, name="partner"),
        no_partner=units.ids[np.flatnonzero(state[_donors.NO_DONOR_AT] >= 0)],
        n_units_swapped=int(swapped.sum()),
        n_rows_swapped=int(units.size[swapped].sum()),
    )


def _sample(stratum: IntArray, n_strata: int, rate: float, rng: np.random.Generator) -> IntArray:
    """Units sampled per stratum, ``n * rate`` randomly rounded; returned in random order."""
    sizes = np.bincount(stratum, minlength=n_strata)
    share = sizes * rate
    take = (np.floor(share) + (rng.random(n_strata) < share - np.floor(share))).astype(np.int64)
    order, starts = _ordering.group_by(rng.permutation(len(stratum)), stratum, n_strata)
    rank = np.arange(len(stratum)) - starts[stratum[order]]
    chosen = order[rank < take[stratum[order]]]
    shuffled: IntArray = chosen[rng.permutation(len(chosen))]
    return shuffled


def _pair(stratum: IntArray, n_strata: int, values: IntArray, sampled: IntArray, rng: np.random.Generator) -> IntArray:
    """Pair each sampled unit with a uniformly drawn unsampled unit of its stratum, other values.

    Reuses the donor search of targeted swapping with one "profile" (the stratum), the swap values
    as "areas" and uniform keys (zero for sampled units, which are never partners).
    """
    n = len(stratum)
    keys = rng.random(n) + np.finfo(np.float64).tiny
    keys[sampled] = 0.0
    profiles = stratum[None, :]
    orders, starts, ends = _ordering.donor_index(profiles, np.array([n_strata]), keys, 1.0)
    index = (orders, starts, ends, np.arange(n, dtype=np.int64)[None, :], keys)
    state = _donors.new_state(n)
    used = np.zeros(n, dtype=np.uint8)
    _donors.match_upper(sampled, 0, values, profiles, index, state, used)
    return state
