"""ONS targeted record swapping of households, UK 2011 Census (Frend et al. 2011, section 2).

1. Risk score of a person at geography level ``g`` (Shlomo, Tudor and Groom 2010): the mean over
   the ``M`` risk variables of ``1 / N``, ``N`` = persons of the area at level ``g`` in the person's
   category of that variable (univariate counts). A person is *unique* at ``g`` if one of these
   counts is 1. Imputed households get no score (their persons still count in ``N``).
2. A household is high risk if a member's score exceeds the level's threshold at some level, and
   unique at ``g`` if a member is.
3. Sample, per delivery group: ``swap_rate`` of the eligible (non-imputed) households (with
   ``rate_by_imputation``, a rate inversely related to the group's imputation rate, see
   :mod:`~cubeguard.methods.ons_household_swap.rates`), randomly rounded; drawn without
   replacement with weight ``high_risk_weight`` for high-risk households and 1 for the others
   (every eligible household has a non-zero probability), taking no more than ``max_area_share``
   (rounded up) of any lowest-level area.
4. Matching, sampled households in random order: the partner is a household outside the sample
   with the same size and matching variables, drawn uniformly. The search starts inside the area
   one level up (e.g. same MSOA, other OA); a household unique at some level starts where the
   partner is outside its coarsest unique area. For each geography the matching profiles are
   relaxed (finest first) before moving one level up; the search never leaves the delivery group.

Choices where the paper is silent (documented, tunable): the sampling weight of high-risk
households, the area cap, that imputed households are not partners either, and the form of the
inverse relation between a group's swap rate and its imputation rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt
import pandas as pd

from cubeguard.methods.ons_household_swap.model import OnsHouseholdSwapStep
from cubeguard.methods.ons_household_swap.rates import group_rates
from cubeguard.swap import _donors, _ordering
from cubeguard.swap._donors import DonorIndex, FlagArray
from cubeguard.swap._households import (
    Households,
    IntArray,
    check_columns,
    check_household_level,
    dense_codes,
    encode_households,
    exchange,
    group_codes,
    household_values,
    nested_area_codes,
    raise_problems,
)
from cubeguard.swap.common import generator, id_column, number
from cubeguard.swap.risk import FloatArray, household_max


@dataclass(frozen=True)
class OnsSwapResult:
    """Outcome of :func:`ons_household_swap`; household tables are indexed by household id.

    Attributes:
        data: the swapped data (same rows and order; only the hierarchy and carry-along columns
            changed).
        partner: partner household id (own id when not swapped).
        sampled: whether the household was drawn into the sample.
        high_risk: whether a member's score exceeds a level's threshold.
        unique_level: coarsest level at which a member is unique (missing if none).
        swap_level: level at which the partners' areas differ (missing if not swapped).
        matched_profile: position in ``params.matching`` of the profile used (missing if not).
        household_risk: household score per level (maximum over members).
        no_partner: sampled households for which no partner was found.
        n_households_swapped: households that changed geography.
        n_persons_swapped: persons in those households.
    """

    data: pd.DataFrame
    partner: pd.Series
    sampled: pd.Series
    high_risk: pd.Series
    unique_level: pd.Series
    swap_level: pd.Series
    matched_profile: pd.Series
    household_risk: pd.DataFrame
    no_partner: pd.Index
    n_households_swapped: int
    n_persons_swapped: int


@dataclass(frozen=True)
class _Prepared:
    households: Households
    areas: IntArray  # levels x households
    stratum: IntArray  # delivery group per household (all 0 without groups)
    size_group: IntArray  # delivery group x household size
    profiles: list[tuple[IntArray, int]]
    eligible: npt.NDArray[np.bool_]
    risk: FloatArray  # households x levels
    unique_level: IntArray


def ons_household_swap(data: pd.DataFrame, params: OnsHouseholdSwapStep, seed: int) -> OnsSwapResult:
    """Swap households as the ONS did for the 2011 UK Census (Frend et al. 2011, section 2).

    See the module docstring for the steps and the choices made where the paper is silent.

    Raises:
        SwapDataError: a column is missing, has missing values or varies within a household.
        SwapSeedError: the seed is not a non-negative integer.
    """
    rng = generator(seed)
    prep = _prepare(data, params)
    high_risk = (prep.risk > np.asarray([number(t) for t in params.risk_thresholds])).any(axis=1) & prep.eligible
    sampled = _sample(prep, params, high_risk, rng)
    state = _match(prep, sampled, rng)
    return _result(data, params, prep, state, sampled, high_risk)


def _prepare(data: pd.DataFrame, params: OnsHouseholdSwapStep) -> _Prepared:
    optional = [c for c in (params.delivery_group, params.imputed) if c is not None]
    matching = list(dict.fromkeys(c for profile in params.matching for c in profile))
    household_columns = [*params.hierarchy, *params.carry_along, params.household_size, *matching, *optional]
    needed = [id_column(params.household_id), *household_columns, *params.risk_variables]
    raise_problems(check_columns(data, needed, "ONS swap"))
    households = encode_households(data, params.household_id)
    raise_problems(check_household_level(data, households, household_columns))
    areas = nested_area_codes(household_values(data, households, params.hierarchy))
    strata = [params.delivery_group] if params.delivery_group is not None else []
    stratum, _ = group_codes(household_values(data, households, strata), households.n)
    size_group, _ = group_codes([stratum, *household_values(data, households, [params.household_size])], households.n)
    eligible = np.ones(households.n, dtype=bool)
    if params.imputed is not None:
        eligible = ~household_values(data, households, [params.imputed])[0].astype(bool)
    risk, unique = _scores(data, params, households, areas)
    risk[~eligible] = 0.0
    unique[~eligible] = False
    n_levels = len(params.hierarchy)
    return _Prepared(
        households=households,
        areas=np.array([a for a, _ in areas], dtype=np.int64).reshape(n_levels, -1),
        stratum=stratum,
        size_group=size_group,
        profiles=[group_codes(household_values(data, households, p), households.n) for p in params.matching],
        eligible=eligible,
        risk=risk,
        unique_level=np.where(unique.any(axis=1), unique.argmax(axis=1), n_levels).astype(np.int64),
    )


def _scores(
    data: pd.DataFrame, params: OnsHouseholdSwapStep, households: Households, areas: list[tuple[IntArray, int]]
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """Household maximum of the person scores, and whether a member is unique, per level."""
    n_levels = len(areas)
    score = np.zeros((len(data), n_levels))
    unique = np.zeros((len(data), n_levels))
    codes = [dense_codes(data[c]) for c in params.risk_variables]
    for level, (area, _) in enumerate(areas):
        person_area = area[households.of_row]
        for code, n_values in codes:
            cell, _ = dense_codes(person_area * n_values + code)
            count = np.bincount(cell)[cell]
            score[:, level] += 1.0 / count
            unique[:, level] = np.maximum(unique[:, level], count == 1)
    score /= len(codes)
    return household_max(score, households), household_max(unique, households) > 0


def _sample(
    prep: _Prepared, params: OnsHouseholdSwapStep, high_risk: npt.NDArray[np.bool_], rng: np.random.Generator
) -> npt.NDArray[np.bool_]:
    """Weighted sample without replacement per delivery group, capped per lowest-level area."""
    n = prep.households.n
    stratum = prep.stratum
    groups = stratum.max(initial=-1) + 1
    eligible_per_stratum = np.bincount(stratum[prep.eligible], minlength=groups)
    rate = number(params.swap_rate)
    by_group = np.bincount(stratum, minlength=groups)
    rates = group_rates(by_group, eligible_per_stratum, rate) if params.rate_by_imputation else np.full(groups, rate)
    share = eligible_per_stratum * rates
    quota = (np.floor(share) + (rng.random(len(share)) < share - np.floor(share))).astype(np.int64)
    lowest = prep.areas[-1]
    cap = np.ceil(np.bincount(lowest[prep.eligible], minlength=lowest.max(initial=-1) + 1) * params.max_area_share)
    weight = np.where(high_risk, params.high_risk_weight, 1.0)
    keys = np.where(prep.eligible, weight / rng.standard_exponential(n), 0.0)
    order = np.argsort(-keys, kind="stable")
    return _take_capped(order, keys, stratum, quota, lowest, cap.astype(np.int64)).astype(bool)


@numba.njit(cache=True)
def _take_capped(
    order: IntArray, keys: FloatArray, stratum: IntArray, quota: IntArray, area: IntArray, cap: IntArray
) -> FlagArray:
    taken = np.zeros(order.shape[0], dtype=np.uint8)
    in_stratum = np.zeros(quota.shape[0], dtype=np.int64)
    in_area = np.zeros(cap.shape[0], dtype=np.int64)
    for s in order:
        if keys[s] <= 0.0:
            break
        if in_stratum[stratum[s]] < quota[stratum[s]] and in_area[area[s]] < cap[area[s]]:
            taken[s] = 1
            in_stratum[stratum[s]] += 1
            in_area[area[s]] += 1
    return taken


def _match(prep: _Prepared, sampled: npt.NDArray[np.bool_], rng: np.random.Generator) -> IntArray:
    """Partners for the sampled households, in a swap state (:mod:`cubeguard.swap._donors`)."""
    n = prep.households.n
    n_levels, n_profiles = len(prep.areas), len(prep.profiles)
    rows, n_groups = [], []
    for level in range(n_levels):
        parent = [prep.areas[level - 1]] if level else []
        for profile, _ in prep.profiles:
            code, count = group_codes([prep.size_group, profile, *parent], n)
            rows.append(code)
            n_groups.append(count)
    profiles = np.array(rows, dtype=np.int64).reshape(len(rows), n)
    keys = np.where(prep.eligible & ~sampled, rng.random(n) + np.finfo(np.float64).tiny, 0.0)
    share = min(1.0, 3.0 * int(sampled.sum()) / max(n, 1))
    orders, starts, ends = _ordering.donor_index(profiles, np.asarray(n_groups, dtype=np.int64), keys, share)
    parents = np.tile(np.arange(n, dtype=np.int64), (len(rows), 1))
    order = np.flatnonzero(sampled)[rng.permutation(int(sampled.sum()))]
    start = np.minimum(prep.unique_level, n_levels - 1)
    state = _donors.new_state(n)
    _match_sampled(order, start, prep.areas, n_profiles, profiles, (orders, starts, ends, parents, keys), state)
    return state


@numba.njit(cache=True)
def _match_sampled(
    order: IntArray,
    start: IntArray,
    areas: IntArray,
    n_profiles: int,
    profiles: IntArray,
    index: DonorIndex,
    state: IntArray,
) -> None:
    """For each sampled household: geography from ``start`` up, profiles finest first."""
    used = np.zeros(areas.shape[1], dtype=np.uint8)
    for s in order:
        used[s] = 1  # a sampled household is never a partner (its key is 0 anyway)
        for level in range(start[s], -1, -1):
            for p in range(n_profiles):
                d = _donors.find_in_profile(s, level * n_profiles + p, areas[level], profiles, index, used)
                if d >= 0:
                    used[d] = 1
                    _donors.record_pair(s, d, level, p, state)
                    state[_donors.SAMPLED, s] = 1
                    break
            if state[_donors.PARTNER, s] >= 0:
                break
        if state[_donors.PARTNER, s] < 0:
            state[_donors.NO_DONOR_AT, s] = 0  # tried every level down to the top one


def _result(
    data: pd.DataFrame,
    params: OnsHouseholdSwapStep,
    prep: _Prepared,
    state: IntArray,
    sampled: npt.NDArray[np.bool_],
    high_risk: npt.NDArray[np.bool_],
) -> OnsSwapResult:
    households = prep.households
    ids = households.ids
    swapped = state[_donors.PARTNER] >= 0
    partner = np.where(swapped, state[_donors.PARTNER], np.arange(households.n))
    names = pd.Index(list(params.hierarchy), dtype=object)
    n_levels = len(names)

    def levels(codes: IntArray, name: str) -> pd.Series:
        valid = np.where((codes >= 0) & (codes < n_levels), codes, -1)
        return pd.Series(pd.Categorical.from_codes(valid, categories=names), index=ids, name=name)

    return OnsSwapResult(
        data=exchange(data, households, partner, [*params.hierarchy, *params.carry_along]),
        partner=pd.Series(ids[partner], index=ids, name="partner"),
        sampled=pd.Series(sampled, index=ids, name="sampled"),
        high_risk=pd.Series(high_risk, index=ids, name="high_risk"),
        unique_level=levels(prep.unique_level, "unique_level"),
        swap_level=levels(state[_donors.LEVEL], "swap_level"),
        matched_profile=pd.Series(
            pd.arrays.IntegerArray(np.where(swapped, state[_donors.PROFILE], 0), mask=~swapped),
            index=ids,
            name="matched_profile",
        ),
        household_risk=pd.DataFrame(prep.risk, index=ids, columns=list(params.hierarchy)),
        no_partner=ids[np.flatnonzero(state[_donors.NO_DONOR_AT] >= 0)],
        n_households_swapped=int(swapped.sum()),
        n_persons_swapped=int(households.size[swapped].sum()),
    )
