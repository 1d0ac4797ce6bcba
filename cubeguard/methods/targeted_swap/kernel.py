"""Targeted record swapping of households (Handbook on SDC v2, 5.6.1; sdcMicro ``recordSwap``).

The algorithm, as in sdcMicro 5.8.1 ``recordSwap`` (``R/recordSwap.R``, ``src/recordSwap/
recordSwap.cpp``; golden/README.md section 3.3), with geography levels ``0`` (top) to ``L-1``:

1. Household risk per level (:mod:`cubeguard.swap.risk`) and the must-swap level: the first level
   whose risk exceeds ``1/k_anonymity`` (or the user's threshold).
2. Donor keys ``risk_h / Exp(1)`` per household and level (weighted sampling, see ``_donors``).
3. Swap budget: ``ceil`` or ``floor`` (coin flip) of ``n_households * swap_rate / 2`` pairs, spread
   over the lowest-level areas in proportion to their households; the fractional parts are summed,
   rounded, and that many areas drawn uniformly without replacement get one more.
4. Levels top-down. Above the lowest level, every unused must-swap household of the level is
   swapped, area by area. At the lowest level each area swaps its must-swap households and, if its
   budget minus the households already swapped out of it (sampled side) is larger, tops up with
   households drawn with probability proportional to their lowest-level risk.
5. A swapped household takes a donor with the same similarity profile (profiles tried in order)
   from another area of that level; both exchange geography and carry-along columns.

Deliberate differences from ``recordSwap`` (the data-independent results, risks and must-swap
counts, are identical; the golden tests compare the mean swap counts over seeds with recordSwap's
mean over 501 seeds, within 1 %; households, persons and no-donor counts agree in distribution):

* **draw_excess quirk: not followed.** When the rounded fractional parts sum to 0, sdcMicro still
  gives the first area one extra draw with probability ``1/n_areas``; that makes ``swap_rate = 0``
  swap a pair sometimes. Here no area gets an extra draw, so rate 0 with ``k_anonymity = 0`` returns
  the data unchanged (Handbook step 7: top up *to* ``p N``).
* **IDnotUsed same-area quirk: not followed.** sdcMicro accepts a household of the *same* area as a
  donor if it failed to find a donor at a higher level. Here a donor is always from another area at
  the level of the swap (Handbook 5.6.1 step 3). Such households stay available as donors elsewhere.
* Households within an area are processed in a random order (sdcMicro: ``unordered_set`` hash
  order), and the random numbers come from numpy's PCG64, so partners differ from sdcMicro's.
* A household with risk 0 at a level is never a donor at that level (sdcMicro's key map keeps only
  one household per equal key, and documents that households with risk 0 are not swapped).
* Geography, similarity and carry-along columns must be constant within households (sdcMicro only
  warns for carry-along columns and uses each household's first record).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from cubeguard.errors import InternalError
from cubeguard.methods.targeted_swap.model import TargetedSwapStep
from cubeguard.swap import _donors, _ordering
from cubeguard.swap._donors import FlagArray
from cubeguard.swap._households import (
    Households,
    IntArray,
    check_columns,
    check_household_level,
    encode_households,
    exchange,
    group_codes,
    household_values,
    nested_area_codes,
    raise_problems,
)
from cubeguard.swap.common import generator, id_column, number
from cubeguard.swap.risk import (
    FloatArray,
    check_risk_columns,
    household_risk,
    must_swap_levels,
    risk_threshold,
)

NO_SIMILAR = "no household with the same similarity profile in another area"
SIMILAR_USED = "every similar household in another area was already swapped"


@dataclass(frozen=True)
class SwapResult:
    """Outcome of :func:`targeted_swap`; all household tables are indexed by household id.

    Attributes:
        data: the swapped data: same rows and order, only hierarchy and carry-along columns changed.
        partner: id of the partner household (the household's own id when not swapped).
        swap_level: hierarchy column of the level at which the household was swapped (missing if not).
        matched_profile: position in ``params.similar`` of the profile the pair matched on (missing
            if not swapped).
        must_swap_level: level at which the household had to be swapped (missing if not at risk).
        must_swap_counts: households per must-swap level, plus ``"none"`` for those not at risk.
        household_risk: household risk per level (columns named like the hierarchy columns).
        no_donor: households that had to or were drawn to be swapped but found no donor, with the
            ``level`` where that happened and the ``reason``.
        n_households_swapped: households that changed geography (both sides of every pair).
        n_persons_swapped: persons in those households.
    """

    data: pd.DataFrame
    partner: pd.Series
    swap_level: pd.Series
    matched_profile: pd.Series
    must_swap_level: pd.Series
    must_swap_counts: pd.Series
    household_risk: pd.DataFrame
    no_donor: pd.DataFrame
    n_households_swapped: int
    n_persons_swapped: int


@dataclass(frozen=True)
class _Prepared:
    households: Households
    areas: IntArray  # levels x households
    n_areas: tuple[int, ...]
    profiles: IntArray  # profiles x households
    n_groups: tuple[int, ...]
    risk: FloatArray  # households x levels
    must_level: IntArray


def targeted_swap(data: pd.DataFrame, params: TargetedSwapStep, seed: int) -> SwapResult:
    """Swap the geography of households by targeted record swapping (Handbook on SDC v2, 5.6.1).

    See the module docstring for the algorithm and how it relates to sdcMicro ``recordSwap``; in
    particular neither of its two quirks is followed (no extra draw when the rounded excess is 0,
    never a donor from the same area).

    Args:
        data: one row per person; columns as named in ``params``.
        params: the swap parameters.
        seed: seed of the PCG64 generator; the same seed and data give the same swaps.

    Raises:
        SwapDataError: a column is missing, has missing values or varies within a household.
        SwapSeedError: the seed is not a non-negative integer.
    """
    rng = generator(seed)
    prepared = _prepare(data, params)
    state = _swap(prepared, number(params.swap_rate), rng)
    return _result(data, params, prepared, state)


def _prepare(data: pd.DataFrame, params: TargetedSwapStep) -> _Prepared:
    household_columns = [*params.hierarchy, *params.similarity_columns, *params.carry_along]
    needed = [id_column(params.household_id), *household_columns, *params.risk_variables]
    problems = check_columns(data, [*needed, *(params.risk_columns or ())], "swap")
    problems += check_risk_columns(data, params)
    raise_problems(problems)
    households = encode_households(data, params.household_id)
    raise_problems(check_household_level(data, households, household_columns))
    areas = nested_area_codes(household_values(data, households, params.hierarchy))
    profiles = [group_codes(household_values(data, households, profile), households.n) for profile in params.similar]
    risk = household_risk(data, params, households, areas)
    return _Prepared(
        households=households,
        areas=np.array([codes for codes, _ in areas], dtype=np.int64).reshape(len(areas), -1),
        n_areas=tuple(n for _, n in areas),
        profiles=np.array([codes for codes, _ in profiles], dtype=np.int64).reshape(len(profiles), -1),
        n_groups=tuple(n for _, n in profiles),
        risk=risk,
        must_level=must_swap_levels(risk, risk_threshold(params)),
    )


def distribute_draws(area_sizes: IntArray, swap_rate: float, rng: np.random.Generator) -> IntArray:
    """Households to sample per lowest-level area (sdcMicro ``distributeDraws``, without its quirk).

    The total is ``n * swap_rate / 2`` pairs, rounded up or down with probability 1/2; each area
    gets the floor of its proportional share, and ``round(sum of fractional parts)`` areas drawn
    uniformly without replacement get one more.
    """
    n_households = int(area_sizes.sum())
    pairs = n_households * (swap_rate / 2)
    total = math.ceil(pairs) if rng.integers(2) == 0 else math.floor(pairs)
    share = area_sizes / n_households * total if n_households else np.zeros(len(area_sizes))
    draws = np.floor(share).astype(np.int64)
    excess = math.floor(float((share - draws).sum()) + 0.5)
    if excess > 0:
        draws[rng.choice(len(area_sizes), size=excess, replace=False)] += 1
    return draws


def _swap(prepared: _Prepared, swap_rate: float, rng: np.random.Generator) -> IntArray:
    """Run the level loop; returns the state matrix described in :mod:`cubeguard.swap._donors`.

    Random numbers, in this order: the swap budget (:func:`distribute_draws`); then per level that
    has work, a random order of its must-swap households within areas, one donor key per household
    and, at the lowest level, one sampling key per household.
    """
    n, n_levels = prepared.risk.shape
    lowest = prepared.areas[-1]
    draws = distribute_draws(np.bincount(lowest, minlength=prepared.n_areas[-1]), swap_rate, rng)
    state = _donors.new_state(n)
    used = np.zeros(n, dtype=np.uint8)
    for level in range(n_levels - 1):
        area = prepared.areas[level]
        must = np.flatnonzero(prepared.must_level == level)
        if len(must):
            must = must[np.lexsort((rng.random(len(must)), area[must]))]
            index = _donor_index(prepared, level, rng, len(must))
            _donors.match_upper(must, level, area, prepared.profiles, index, state, used)
    _swap_lowest(prepared, draws, rng, state, used)
    return state


def _swap_lowest(
    prepared: _Prepared, draws: IntArray, rng: np.random.Generator, state: IntArray, used: FlagArray
) -> None:
    """Lowest level: must-swap households plus a risk-weighted top-up to each area's quota."""
    level = len(prepared.n_areas) - 1
    area = prepared.areas[level]
    quota = np.maximum(draws - np.bincount(area[state[_donors.SAMPLED] == 1], minlength=len(draws)), 0)
    must = np.flatnonzero(prepared.must_level == level)
    if len(must) == 0 and not quota.any():
        return
    must = must[np.lexsort((rng.random(len(must)), area[must]))]
    index = _donor_index(prepared, level, rng, len(must) + int(quota.sum()))
    sample_keys = prepared.risk[:, level] / rng.standard_exponential(len(area))
    extra = np.flatnonzero((prepared.must_level == level + 1) & (sample_keys > 0))
    extra, extra_starts = _ordering.group_by(extra, area, len(draws))
    must_starts = np.searchsorted(area[must], np.arange(len(draws) + 1))
    _donors.match_lowest(
        must,
        must_starts,
        extra,
        extra_starts,
        sample_keys,
        quota,
        level,
        area,
        prepared.profiles,
        index,
        state,
        used,
    )


def _donor_index(prepared: _Prepared, level: int, rng: np.random.Generator, n_candidates: int) -> _donors.DonorIndex:
    """Donor keys ``risk / Exp(1)`` for one level and the donor index, pre-sorting ~3 per candidate."""
    keys = prepared.risk[:, level] / rng.standard_exponential(len(prepared.risk))
    n = len(keys)
    share = min(1.0, 3.0 * n_candidates / max(n, 1))
    n_groups = np.asarray(prepared.n_groups, dtype=np.int64)
    orders, starts, sorted_end = _ordering.donor_index(prepared.profiles, n_groups, keys, share)
    parents = np.tile(np.arange(n, dtype=np.int64), (len(n_groups), 1))
    return orders, starts, sorted_end, parents, keys


def _result(data: pd.DataFrame, params: TargetedSwapStep, prepared: _Prepared, state: IntArray) -> SwapResult:
    households = prepared.households
    n = households.n
    partner = state[_donors.PARTNER]
    swapped = partner >= 0
    if not np.array_equal(partner[partner[swapped]], np.flatnonzero(swapped)):
        raise InternalError("swap partners are not symmetric; this is a bug in cubeguard")
    partner_index = np.where(swapped, partner, np.arange(n))
    moved = [*params.hierarchy, *params.carry_along]
    ids = households.ids
    names = list(params.hierarchy)
    return SwapResult(
        data=exchange(data, households, partner_index, moved),
        partner=pd.Series(ids[partner_index], index=ids, name="partner"),
        swap_level=_level_names(state[_donors.LEVEL], names, ids, "swap_level"),
        matched_profile=pd.Series(
            pd.arrays.IntegerArray(np.where(swapped, state[_donors.PROFILE], 0), mask=~swapped),
            index=ids,
            name="matched_profile",
        ),
        must_swap_level=_level_names(prepared.must_level, names, ids, "must_swap_level"),
        must_swap_counts=pd.Series(
            np.bincount(prepared.must_level, minlength=len(names) + 1),
            index=pd.Index([*names, "none"], name="level"),
            name="must_swap_households",
        ),
        household_risk=pd.DataFrame(prepared.risk, index=ids, columns=names),
        no_donor=_no_donor(prepared, state, names),
        n_households_swapped=int(swapped.sum()),
        n_persons_swapped=int(households.size[swapped].sum()),
    )


def _level_names(levels: IntArray, names: list[str], ids: pd.Index, name: str) -> pd.Series:
    """Level numbers as a categorical of hierarchy names; numbers outside 0..L-1 become missing."""
    return pd.Series(_level_categorical(levels, names), index=ids, name=name)


def _level_categorical(levels: IntArray, names: list[str]) -> pd.Categorical:
    codes = np.where((levels >= 0) & (levels < len(names)), levels, -1)
    return pd.Categorical.from_codes(codes, categories=pd.Index(names, dtype=object))


def _no_donor(prepared: _Prepared, state: IntArray, names: list[str]) -> pd.DataFrame:
    """Households without donor, their level, and whether no similar household existed elsewhere.

    A household that found no donor at a level may still have been taken as a donor later; it is
    listed anyway (as sdcMicro's log does).
    """
    failed = np.flatnonzero(state[_donors.NO_DONOR_AT] >= 0)
    if len(failed) == 0:
        return pd.DataFrame(
            {"level": _level_categorical(failed, names), "reason": _reasons(np.zeros(0, bool))},
            index=prepared.households.ids[:0],
        )
    level = state[_donors.NO_DONOR_AT][failed]
    exists = np.zeros(len(failed), dtype=bool)
    for h in np.unique(level):
        rows = level == h
        exists[rows] = _similar_elsewhere(prepared, failed[rows], int(h))
    return pd.DataFrame(
        {"level": _level_categorical(level, names), "reason": _reasons(exists)},
        index=prepared.households.ids[failed],
    )


def _reasons(similar_exists: npt.NDArray[np.bool_]) -> pd.Categorical:
    categories = pd.Index([NO_SIMILAR, SIMILAR_USED], dtype=object)
    return pd.Categorical.from_codes(similar_exists.astype(np.int8), categories=categories)


def _similar_elsewhere(prepared: _Prepared, households: IntArray, level: int) -> npt.NDArray[np.bool_]:
    """Whether each household has, for some profile, a possible donor in another area at ``level``."""
    area = prepared.areas[level]
    eligible = prepared.risk[:, level] > 0
    found = np.zeros(len(households), dtype=bool)
    for profile, n_groups in zip(prepared.profiles, prepared.n_groups, strict=True):
        in_group = np.bincount(profile[eligible], minlength=n_groups)
        cell = profile * prepared.n_areas[level] + area
        cells, counts = np.unique(cell[eligible], return_counts=True)
        pos = np.minimum(np.searchsorted(cells, cell[households]), max(len(cells) - 1, 0))
        own = np.where(cells[pos] == cell[households], counts[pos], 0) if len(cells) else 0
        found |= in_group[profile[households]] - own > 0
    return found
