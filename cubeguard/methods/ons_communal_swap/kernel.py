"""ONS record swapping of communal-establishment residents, UK 2011 Census (Frend et al. 2011, sec. 3).

Individuals, not whole establishments, are swapped: a swapped resident takes the partner's place,
i.e. the partner's establishment id, CE type, geography (``hierarchy``), carry-along columns and,
by default, resident group, while keeping every person column. Pairs are exchanged both ways, so
the counts of establishments, of persons per establishment, CE type, resident group and area are
unchanged; private-household rows are never touched.

1. Protection scores per CE type in each ``score_area`` (the paper's MSOA; section 3.1). The factor
   scores are the paper's Tables 1 and 2 (:data:`CE_COUNT_SCORE`, ...). CPS = A * B * C * D1 * E,
   SPS = A * B * C * D2. Section 3.1's worked examples (their arithmetic is lost from the text; the
   results survive in section 3.2) check out: prison, 1 in MSOA and LAD, high impact, low turnover,
   250 clients, 12 staff: CPS = 3*2*2*1*2 = 24, SPS = 3*2*2*1 = 12; university, 6 in the MSOA, low
   impact, high turnover, 24 clients, 1 staff: CPS = 1*1*1*3*1 = 3, SPS = 1*1*1*2 = 2.
2. Swap-rate band from the score (Tables 3 and 4: 0, A%, B%, C%). Sample sizes per CE type and
   area: clients ``ceil(rate * n)``; staff ``floor(rate * n)`` plus the rounded-up record with
   probability ``min(1, SPS / staff_round_up_score)`` (section 3.2); family residents: one rate
   across all CE types of each ``family_area`` (the LAD; section 3.4), rounded up. ``n`` counts the
   eligible (non-imputed) records of the group.
3. Sampling weighted by a risk score (section 3.3): the mean over the risk variables of
   ``1 / N``, ``N`` = residents of the same ``score_area``, CE type and resident group with the
   record's category (imputed records count in ``N``); drawn without replacement with probability
   proportional to the score (keys ``score / Exp(1)``, Efraimidis and Spirakis 2006). A record is
   *unique* at a level if one of these counts, taken in its area of that level, is 1.
4. Matching (section 3.5; :mod:`cubeguard.methods.ons_communal_swap.match`): three matching groups (clients
   ``>= child_age``, clients ``< child_age``, staff); family under ``child_age`` join the child
   clients, adult family the staff if ``family_staff_column`` is in ``family_staff_values``, else
   the adult clients. A partner is an eligible unsampled resident of the same delivery group and
   matching group in another lowest-level area. Passes are tried from the strictest: same resident
   group, then (family) same matching group; matching profiles finest first; partners in the same
   area one level up, then higher; same CE type, then any CE type ("a coarser set of variable
   classifications before looking for matches at a higher geography and then outside of the CE
   Type"). ``relaxation`` sets this order.

Choices where the paper is silent (all parameters; see :class:`OnsCommunalSwapStep`):

* the rates A, B, C and the family rate (secret, footnote 3);
* which CE types are high impact / high turnover (the paper names prisons high impact and low
  turnover, hotels low impact, university halls low impact and high turnover);
* factor B is "the CE type has exactly one establishment in the LAD" (paper: "is the CE unique
  within the LAD"), counting establishments of all residents, imputed or not;
* the SPS has no turnover factor (Table 2 and the worked example; the text says turnover "affects
  the SPS", which contradicts both), and the staff probability rule (the paper gives only that it
  grows with the SPS);
* family sample sizes are rounded up like the CE type samples (``family_rounding``);
* how family are allocated to matching groups (age and one column), and that a same-resident-group
  partner is tried before a same-matching-group one at each step (``relaxation``);
* imputed records are not partners either; partners are drawn uniformly;
* uniques are swapped outside the area where they are unique, as households (section 2); when the
  delivery group lies inside that area the search starts at the coarsest level it allows;
* passes run pass-major (see the matching module), and the resident group moves with the place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from cubeguard.errors import InternalError
from cubeguard.methods.ons_communal_swap.match import Candidates, Matches, Pass, match, passes
from cubeguard.methods.ons_communal_swap.model import MATCHING_GROUPS, OnsCommunalSwapStep
from cubeguard.swap._households import (
    IntArray,
    copy_rows,
    dense_codes,
    first_rows,
    group_codes,
    nested_area_codes,
    raise_problems,
)
from cubeguard.swap.common import generator, id_column, number

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
ScoreTable = tuple[tuple[int, int], ...]

# Table 1 (client protection score) and Table 2 (staff protection score), section 3.1, as
# (lowest value, score) steps: a value takes the score of the last step at or below it.
#: A: count of establishments of the CE type in the MSOA (1-2: 3, 3-5: 2, 6+: 1). Tables 1, 2.
CE_COUNT_SCORE: Final[ScoreTable] = ((1, 3), (3, 2), (6, 1))
#: B: is the CE (type) unique within the LAD? Yes 2, No 1. Tables 1, 2.
UNIQUE_IN_LAD_SCORE: Final = {True: 2, False: 1}
#: C: is the CE type high impact? Yes 2, No 1. Tables 1, 2.
HIGH_IMPACT_SCORE: Final = {True: 2, False: 1}
#: D1: number of clients within the CE type (0: 0, 1-15: 4, 16-40: 3, 41-100: 2, 101+: 1). Table 1.
CLIENT_COUNT_SCORE: Final[ScoreTable] = ((0, 0), (1, 4), (16, 3), (41, 2), (101, 1))
#: E: client turnover (low 2, high 1). Table 1 only.
CLIENT_TURNOVER_SCORE: Final = {"low": 2, "high": 1}
#: D2: number of staff within the CE type (0: 0, 1-10: 2, 11+: 1). Table 2.
STAFF_COUNT_SCORE: Final[ScoreTable] = ((0, 0), (1, 2), (11, 1))
#: Swap-rate bands as (lowest score, band): Table 3 (clients: 0, 1-5, 6-25, 26+) ...
CLIENT_RATE_BANDS: Final = ((0, "0"), (1, "A"), (6, "B"), (26, "C"))
#: ... and Table 4 (staff: 0, 1-5, 6-11, 12+), section 3.2.
STAFF_RATE_BANDS: Final = ((0, "0"), (1, "A"), (6, "B"), (12, "C"))
BANDS: Final = ("0", "A", "B", "C")

CLIENT, STAFF, FAMILY = 0, 1, 2
RESIDENT_GROUPS: Final = ("client", "staff", "family")
NO_CANDIDATE = "no eligible unsampled resident of the matching group in another area of the delivery group"
CANDIDATES_USED = "every candidate was already sampled or swapped"


def step_score(values: npt.ArrayLike, table: ScoreTable) -> IntArray:
    """Score of each value in a (lowest value, score) step table; values below the first step: 0."""
    bounds = np.array([b for b, _ in table], dtype=np.int64)
    scores = np.array([s for _, s in table], dtype=np.int64)
    pos = np.searchsorted(bounds, np.asarray(values, dtype=np.int64), side="right") - 1
    out: IntArray = np.where(pos >= 0, scores[np.maximum(pos, 0)], 0)
    return out


def client_protection_score(
    ce_count: npt.ArrayLike,
    unique_in_lad: npt.ArrayLike,
    high_impact: npt.ArrayLike,
    n_clients: npt.ArrayLike,
    high_turnover: npt.ArrayLike,
) -> IntArray:
    """CPS = A * B * C * D1 * E (Frend et al. 2011, section 3.1, Table 1)."""
    b = np.where(np.asarray(unique_in_lad, bool), UNIQUE_IN_LAD_SCORE[True], UNIQUE_IN_LAD_SCORE[False])
    c = np.where(np.asarray(high_impact, bool), HIGH_IMPACT_SCORE[True], HIGH_IMPACT_SCORE[False])
    e = np.where(np.asarray(high_turnover, bool), CLIENT_TURNOVER_SCORE["high"], CLIENT_TURNOVER_SCORE["low"])
    out: IntArray = step_score(ce_count, CE_COUNT_SCORE) * b * c * step_score(n_clients, CLIENT_COUNT_SCORE) * e
    return out


def staff_protection_score(
    ce_count: npt.ArrayLike, unique_in_lad: npt.ArrayLike, high_impact: npt.ArrayLike, n_staff: npt.ArrayLike
) -> IntArray:
    """SPS = A * B * C * D2 (Frend et al. 2011, section 3.1, Table 2)."""
    b = np.where(np.asarray(unique_in_lad, bool), UNIQUE_IN_LAD_SCORE[True], UNIQUE_IN_LAD_SCORE[False])
    c = np.where(np.asarray(high_impact, bool), HIGH_IMPACT_SCORE[True], HIGH_IMPACT_SCORE[False])
    out: IntArray = step_score(ce_count, CE_COUNT_SCORE) * b * c * step_score(n_staff, STAFF_COUNT_SCORE)
    return out


def rate_band(score: npt.ArrayLike, bands: Sequence[tuple[int, str]]) -> IntArray:
    """Band index (0: no swapping, 1: A, 2: B, 3: C) of each score (Tables 3 and 4)."""
    bounds = np.array([b for b, _ in bands], dtype=np.int64)
    index = np.array([BANDS.index(name) for _, name in bands], dtype=np.int64)
    out: IntArray = index[np.searchsorted(bounds, np.asarray(score, dtype=np.int64), side="right") - 1]
    return out


@dataclass(frozen=True)
class CommunalSwapResult:
    """Outcome of :func:`ons_communal_swap`. Person tables cover CE residents, indexed by person id.

    Attributes:
        data: the swapped data (same rows and order; only the exchanged columns of swapped
            residents changed).
        partner: partner's person id (own id when not swapped).
        records: per resident: ``resident_group``, ``matching_group``, ``risk_score``,
            ``unique_level`` (coarsest level where unique), ``sampled``, ``swapped``,
            ``match_pass`` (index into ``passes``), ``swap_level`` (level at which the partners'
            areas differ), ``matched_profile`` (index into the group's profiles),
            ``same_resident_group_pass`` and ``same_ce_type_pass`` (what the pass required).
        passes: the matching passes in the order tried.
        cells: per ``score_area`` and CE type: establishments, the factor scores, CPS, SPS, the
            bands, residents per group, and sampled and swapped clients, staff and family.
        unmatched: sampled residents without partner, with their groups and the ``reason``.
        n_swapped: residents that changed place (both sides of every pair).
    """

    data: pd.DataFrame
    partner: pd.Series
    records: pd.DataFrame
    passes: pd.DataFrame
    cells: pd.DataFrame
    unmatched: pd.DataFrame
    n_swapped: int


@dataclass(frozen=True)
class _Residents:
    rows: IntArray  # positions of CE residents in the data
    ids: pd.Index
    frame: pd.DataFrame  # needed columns of the residents, positional index
    establishment: IntArray
    first_of_establishment: IntArray
    type_code: IntArray
    type_text: npt.NDArray[np.object_]
    role: IntArray
    group: IntArray
    areas: IntArray  # levels x residents
    delivery_group: IntArray
    eligible: BoolArray


def ons_communal_swap(data: pd.DataFrame, params: OnsCommunalSwapStep, seed: int) -> CommunalSwapResult:
    """Swap communal-establishment residents as the ONS did for the 2011 UK Census (Frend et al. 2011, section 3).

    See the module docstring for the steps, the paper's tables and the choices made where the
    paper is silent.

    Args:
        data: one row per person; private-household persons are passed through untouched.
        params: the swap parameters (rates are secret and never shown).
        seed: seed of the PCG64 generator; the same seed and data give the same swaps.

    Raises:
        SwapDataError: a column is missing or has missing values among CE residents, or an
            establishment-level column varies within an establishment.
        SwapSeedError: the seed is not a non-negative integer.
    """
    rng = generator(seed)
    res = _residents(data, params)
    cells, cell = _cells(res, params)
    risk, unique = _risk(res, params)
    sampled = _sample(res, params, cells, cell, risk, rng)
    levels = _swap_levels(res)
    steps = passes(params.relaxation, params.matching.n_profiles, levels)
    n_levels = len(params.hierarchy)
    start = np.full(len(res.rows), n_levels - 1, dtype=np.int64)
    if params.leave_unique_area and levels:
        start = np.where(unique < n_levels, np.maximum(unique, min(levels)), start)
    candidates = Candidates(
        delivery_group=res.delivery_group,
        matching_group=res.group,
        resident_group=res.role,
        ce_type=res.type_code,
        areas=res.areas,
        profiles=_profile_codes(res, params),
        eligible=res.eligible,
        sampled=sampled,
        start=start,
    )
    matches = match(candidates, steps, rng)
    return _result(data, params, res, cells, cell, risk, unique, sampled, steps, matches)


def _text(values: pd.Series) -> npt.NDArray[np.object_]:
    """Values as strings (via the distinct values, so categoricals stay cheap)."""
    codes, uniques = pd.factorize(values)
    labels = np.array([str(u) for u in uniques] + ["<NA>"], dtype=object)
    out: npt.NDArray[np.object_] = labels[codes]
    return out


def _residents(data: pd.DataFrame, params: OnsCommunalSwapStep) -> _Residents:
    p = params
    person = [p.age, *p.risk_variables, *p.matching.columns]
    person += [c for c in (p.imputed, p.family_staff_column, p.person_id) if c is not None]
    needed = list(dict.fromkeys([p.resident_group, p.establishment_id, *p.establishment_columns, *person]))
    problems: list[str] = []
    if missing := [c for c in needed if c not in data.columns]:
        known = ", ".join(map(str, data.columns[:12]))
        raise_problems([f"communal swap columns {missing} are not in the data (columns: {known})"])
    codes, uniques = pd.factorize(data[p.resident_group])
    role_of = np.array([_role(str(u), p) for u in uniques] + [-1], dtype=np.int64)
    role_all = role_of[codes]
    rows = np.flatnonzero(role_all >= 0)
    frame = data[needed].take(rows).reset_index(drop=True)
    n_missing = frame.isna().sum()
    problems += [
        f"column {c!r} has {k} missing values among CE residents; fill them" for c, k in n_missing.items() if k
    ]
    if problems:
        raise_problems(problems)
    establishment, _ = dense_codes(frame[p.establishment_id])
    first = first_rows(establishment, int(establishment.max(initial=-1)) + 1)
    problems += _varying(frame, establishment, first, p.establishment_columns, id_column(p.establishment_id))
    if not pd.api.types.is_numeric_dtype(frame[p.age]):
        problems.append(f"age column {p.age!r} must be numeric")
    if p.imputed is not None and not pd.api.types.is_numeric_dtype(frame[p.imputed]) and frame[p.imputed].dtype != bool:
        problems.append(f"imputed column {p.imputed!r} must be boolean or 0/1")
    ids = pd.Index(frame[p.person_id]) if p.person_id is not None else data.index[rows]
    if ids.has_duplicates:
        problems.append(
            f"person ids in {p.person_id or 'the row labels'!r} repeat among CE residents; make them unique"
        )
    raise_problems(problems)
    role = role_all[rows]
    age = frame[p.age].to_numpy(dtype=np.float64)
    group = np.where(role == STAFF, 2, np.where(age < p.child_age, 1, 0)).astype(np.int64)
    if p.family_staff_column is not None:
        as_staff = np.isin(_text(frame[p.family_staff_column]), list(p.family_staff_values))
        group = np.where((role == FAMILY) & (age >= p.child_age) & as_staff, 2, group)
    type_code, _ = dense_codes(frame[p.ce_type])
    areas = nested_area_codes([frame[c].to_numpy() for c in p.hierarchy])
    eligible = np.ones(len(rows), dtype=bool)
    if p.imputed is not None:
        eligible = ~frame[p.imputed].to_numpy().astype(bool)
    return _Residents(
        rows=rows,
        ids=ids.rename(p.person_id),
        frame=frame,
        establishment=establishment,
        first_of_establishment=first,
        type_code=type_code,
        type_text=_text(frame[p.ce_type]),
        role=role,
        group=group,
        areas=np.array([a for a, _ in areas], dtype=np.int64).reshape(len(areas), -1),
        delivery_group=dense_codes(frame[p.delivery_group])[0],
        eligible=eligible,
    )


def _role(value: str, params: OnsCommunalSwapStep) -> int:
    codes = {params.client_code: CLIENT, params.staff_code: STAFF, params.family_code: FAMILY}
    return codes.get(value, -1)


def _varying(
    frame: pd.DataFrame, establishment: IntArray, first: IntArray, columns: list[str], id_column: str
) -> list[str]:
    problems: list[str] = []
    for column in columns:
        values = frame[column].to_numpy()
        differs = values != values[first[establishment]]
        if differs.any():
            bad = frame[id_column].to_numpy()[first[np.unique(establishment[differs])]]
            examples = ", ".join(map(str, bad[:3]))
            problems.append(
                f"column {column!r} varies within {len(bad)} establishments (e.g. {examples}); "
                "give every resident the establishment's value"
            )
    return problems


def _cells(res: _Residents, params: OnsCommunalSwapStep) -> tuple[pd.DataFrame, IntArray]:
    """Protection scores and bands per CE type in each score area (Tables 1-4)."""
    hierarchy = list(params.hierarchy)
    score_level, lad_level = hierarchy.index(params.score_area), hierarchy.index(params.unique_area)
    n = len(res.rows)
    cell, n_cells = group_codes([res.areas[score_level], res.type_code], n)
    lad_cell, n_lad_cells = group_codes([res.areas[lad_level], res.type_code], n)
    est_rows = res.first_of_establishment
    ce_count = np.bincount(cell[est_rows], minlength=n_cells)
    in_lad = np.bincount(lad_cell[est_rows], minlength=n_lad_cells)
    first = first_rows(cell, n_cells)
    unique_in_lad = in_lad[lad_cell[first]] == 1
    type_text = res.type_text[first]
    high_impact = np.isin(type_text, list(params.high_impact_types))
    high_turnover = np.isin(type_text, list(params.high_turnover_types))
    counts = {
        name: np.bincount(cell[res.role == k], minlength=n_cells)
        for k, name in enumerate(("clients", "staff", "family"))
    }
    cps = client_protection_score(ce_count, unique_in_lad, high_impact, counts["clients"], high_turnover)
    sps = staff_protection_score(ce_count, unique_in_lad, high_impact, counts["staff"])
    labels = [res.frame[c].to_numpy()[first] for c in [*hierarchy[: score_level + 1], params.ce_type]]
    index = pd.MultiIndex.from_arrays(labels, names=[*hierarchy[: score_level + 1], params.ce_type])
    table = pd.DataFrame(
        {
            "establishments": ce_count,
            "unique_in_lad": unique_in_lad,
            "high_impact": high_impact,
            "high_turnover": high_turnover,
            **counts,
            "score_a": step_score(ce_count, CE_COUNT_SCORE),
            "score_d1": step_score(counts["clients"], CLIENT_COUNT_SCORE),
            "score_d2": step_score(counts["staff"], STAFF_COUNT_SCORE),
            "cps": cps,
            "sps": sps,
            "client_band": pd.Categorical.from_codes(rate_band(cps, CLIENT_RATE_BANDS), categories=list(BANDS)),
            "staff_band": pd.Categorical.from_codes(rate_band(sps, STAFF_RATE_BANDS), categories=list(BANDS)),
        },
        index=index,
    )
    return table, cell


def _risk(res: _Residents, params: OnsCommunalSwapStep) -> tuple[FloatArray, IntArray]:
    """Risk score at the score area (section 3.3) and the coarsest level where a record is unique."""
    n, n_levels = len(res.rows), len(params.hierarchy)
    values = [dense_codes(res.frame[c])[0] for c in params.risk_variables]
    unique = np.full(n, n_levels, dtype=np.int64)
    score = np.zeros(n)
    score_level = list(params.hierarchy).index(params.score_area)
    for level in range(n_levels):
        base, _ = group_codes([res.areas[level], res.type_code, res.role], n)
        hit = np.zeros(n, dtype=bool)
        for v in values:
            cell, _ = group_codes([base, v], n)
            count = np.bincount(cell)[cell]
            hit |= count == 1
            if level == score_level:
                score += 1.0 / count
        unique = np.where(hit & (unique == n_levels), level, unique)
    return score / len(values), unique


def _round(x: FloatArray) -> FloatArray:
    """``rate * n`` without floating-point noise (``0.07 * 100`` is ``7.000000000000001``)."""
    out: FloatArray = np.round(x, 9)
    return out


def _sample(
    res: _Residents,
    params: OnsCommunalSwapStep,
    cells: pd.DataFrame,
    cell: IntArray,
    risk: FloatArray,
    rng: np.random.Generator,
) -> BoolArray:
    """Risk-weighted samples: clients and staff per cell, family per family area (sections 3.2-3.4).

    Random numbers, in this order: one uniform per cell (staff round-up), one per family area
    (random rounding), one Exp(1) per resident (sampling keys).
    """
    n, n_cells = len(res.rows), len(cells)
    rates = np.array([0.0, *(number(r) for r in (params.rate_a, params.rate_b, params.rate_c))])
    eligible_count = [np.bincount(cell[res.eligible & (res.role == k)], minlength=n_cells) for k in (CLIENT, STAFF)]
    clients = np.ceil(_round(rates[cells["client_band"].cat.codes.to_numpy()] * eligible_count[CLIENT]))
    staff_x = _round(rates[cells["staff_band"].cat.codes.to_numpy()] * eligible_count[STAFF])
    staff_p = np.minimum(1.0, cells["sps"].to_numpy() / params.staff_round_up_score)
    staff = np.floor(staff_x) + ((staff_x > np.floor(staff_x)) & (rng.random(n_cells) < staff_p))
    family_level = list(params.hierarchy).index(params.family_area)
    family_area, n_family = dense_codes(res.areas[family_level])
    family_x = _round(
        np.asarray(
            number(params.family_rate)
            * np.bincount(family_area[res.eligible & (res.role == FAMILY)], minlength=n_family),
            dtype=np.float64,
        )
    )
    u = rng.random(n_family)
    up = (u < family_x - np.floor(family_x)) if params.family_rounding == "random" else family_x > np.floor(family_x)
    family = np.floor(family_x) + up
    quota = np.concatenate([clients, staff, family]).astype(np.int64)
    stratum = np.where(res.role == CLIENT, cell, np.where(res.role == STAFF, n_cells + cell, 2 * n_cells + family_area))
    keys = risk / rng.standard_exponential(n)
    candidates = np.flatnonzero(res.eligible)
    order = candidates[np.lexsort((-keys[candidates], stratum[candidates]))]
    starts = np.searchsorted(stratum[order], np.arange(len(quota)))
    rank = np.arange(len(order)) - starts[stratum[order]]
    sampled = np.zeros(n, dtype=bool)
    sampled[order[rank < quota[stratum[order]]]] = True
    return sampled


def _swap_levels(res: _Residents) -> list[int]:
    """Levels at which partners may differ, finest first.

    A level qualifies if some area one level up (within a delivery group) holds two of its areas.
    """
    n = len(res.rows)
    levels: list[int] = []
    for level in range(len(res.areas) - 1, -1, -1):
        parent = [res.areas[level - 1]] if level else []
        _, n_parent = group_codes([res.delivery_group, *parent], n)
        _, n_here = group_codes([res.delivery_group, res.areas[level]], n)
        if n_here > n_parent:
            levels.append(level)
    return levels


def _profile_codes(res: _Residents, params: OnsCommunalSwapStep) -> list[IntArray]:
    """Per profile step, each resident's code in its matching group's profile (last one reused)."""
    out: list[IntArray] = []
    for step in range(params.matching.n_profiles):
        code = np.zeros(len(res.rows), dtype=np.int64)
        for g in range(len(MATCHING_GROUPS)):
            profiles = params.matching.of(g)
            columns = profiles[min(step, len(profiles) - 1)]
            rows = np.flatnonzero(res.group == g)
            code[rows] = group_codes([res.frame[c].to_numpy()[rows] for c in columns], len(rows))[0]
        out.append(code)
    return out


def _result(
    data: pd.DataFrame,
    params: OnsCommunalSwapStep,
    res: _Residents,
    cells: pd.DataFrame,
    cell: IntArray,
    risk: FloatArray,
    unique: IntArray,
    sampled: BoolArray,
    steps: list[Pass],
    matches: Matches,
) -> CommunalSwapResult:
    partner, pass_of = matches.partner, matches.pass_of
    swapped = partner >= 0
    if not np.array_equal(partner[partner[swapped]], np.flatnonzero(swapped)):
        raise InternalError("swap partners are not symmetric; this is a bug in cubeguard")
    n_levels = len(params.hierarchy)
    level_names = pd.Index(list(params.hierarchy), dtype=object)
    step_level = np.array([s.level for s in steps] + [-1], dtype=np.int64)
    step_profile = np.array([s.profile for s in steps] + [0], dtype=np.int64)
    step_role = np.array([s.same_resident_group for s in steps] + [False])
    step_type = np.array([s.same_ce_type for s in steps] + [False])
    n_profiles = np.array([len(params.matching.of(g)) for g in range(len(MATCHING_GROUPS))])
    profile = np.minimum(step_profile[pass_of], n_profiles[res.group] - 1)
    mask = ~swapped
    records = pd.DataFrame(
        {
            "resident_group": pd.Categorical.from_codes(res.role, categories=list(RESIDENT_GROUPS)),
            "matching_group": pd.Categorical.from_codes(res.group, categories=list(MATCHING_GROUPS)),
            "risk_score": risk,
            "unique_level": pd.Categorical.from_codes(np.where(unique < n_levels, unique, -1), categories=level_names),
            "sampled": sampled,
            "swapped": swapped,
            "match_pass": pd.arrays.IntegerArray(np.where(swapped, pass_of, 0), mask=mask),
            "swap_level": pd.Categorical.from_codes(step_level[pass_of], categories=level_names),
            "matched_profile": pd.arrays.IntegerArray(profile, mask=mask),
            "same_resident_group_pass": pd.arrays.BooleanArray(step_role[pass_of], mask=mask),
            "same_ce_type_pass": pd.arrays.BooleanArray(step_type[pass_of], mask=mask),
        },
        index=res.ids,
    )
    counts = cells.copy()
    for k, name in enumerate(("clients", "staff", "family")):
        of_group = res.role == k
        counts[f"{name}_sampled"] = np.bincount(cell[of_group & sampled], minlength=len(cells))
        counts[f"{name}_swapped"] = np.bincount(cell[of_group & swapped], minlength=len(cells))
    failed = np.flatnonzero(sampled & ~swapped)
    reasons = pd.Categorical.from_codes(
        matches.had_candidate[failed].astype(np.int8), categories=[NO_CANDIDATE, CANDIDATES_USED]
    )
    unmatched = records.iloc[failed][["resident_group", "matching_group"]].assign(reason=reasons)
    ids = res.ids.to_numpy()
    own = np.arange(len(ids))
    moved = np.flatnonzero(swapped)
    return CommunalSwapResult(
        data=copy_rows(data, res.rows[moved], res.rows[partner[moved]], params.moved_columns),
        partner=pd.Series(ids[np.where(swapped, partner, own)], index=res.ids, name="partner"),
        records=records,
        passes=pd.DataFrame(
            {
                "same_resident_group": step_role[:-1],
                "same_ce_type": step_type[:-1],
                "profile": step_profile[:-1],
                "level": pd.Categorical.from_codes(step_level[:-1], categories=level_names),
            },
            index=pd.RangeIndex(len(steps), name="pass"),
        ),
        cells=counts,
        unmatched=unmatched,
        n_swapped=int(swapped.sum()),
    )
