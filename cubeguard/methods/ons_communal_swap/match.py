"""Matching passes of communal-establishment swapping (Frend et al. 2011, section 3.5).

A *pass* fixes how strict the match is: same resident group or only same matching group, same CE
type or any, the matching profile, and the geography level ``l`` at which partners differ (they
share the area one level up, ``l - 1``, and always the delivery group and matching group).
Passes run one after the other over every sampled record still without a partner, in one random
order fixed up front (pass-major), so an early coarse match never takes a partner a later record
could have had at a finer pass. Within a pass a record takes an unused, unsampled, eligible
candidate drawn uniformly (largest of uniform keys), reusing the donor search of targeted swapping
(:func:`cubeguard.swap._donors.find_in_profile`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt

from cubeguard.swap import _ordering
from cubeguard.swap._donors import DonorIndex, FlagArray, find_in_profile
from cubeguard.swap._households import IntArray, dense_codes, group_codes

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Pass:
    """One matching step: what partners must share, and the level at which they differ."""

    same_resident_group: bool
    same_ce_type: bool
    profile: int
    level: int


def passes(relaxation: Sequence[str], n_profiles: int, levels: Sequence[int]) -> list[Pass]:
    """Every pass in order: the first entry of ``relaxation`` varies fastest.

    ``levels`` are the levels at which partners may differ, finest first. A dimension missing from
    ``relaxation`` is never relaxed (always same resident group / same CE type).
    """
    values: dict[str, list[int]] = {  # 1 = same resident group / CE type, 0 = relaxed
        "resident_group": [1, 0] if "resident_group" in relaxation else [1],
        "ce_type": [1, 0] if "ce_type" in relaxation else [1],
        "profile": list(range(n_profiles)),
        "level": list(levels),
    }
    outer_first = [d for d in values if d not in relaxation] + [d for d in reversed(relaxation) if d in values]
    out: list[Pass] = []
    for combo in itertools.product(*(values[d] for d in outer_first)):
        spec = dict(zip(outer_first, combo, strict=True))
        out.append(Pass(bool(spec["resident_group"]), bool(spec["ce_type"]), spec["profile"], spec["level"]))
    return out


@dataclass(frozen=True)
class Candidates:
    """Per CE resident (all arrays have one entry per resident).

    Attributes:
        delivery_group: delivery-group code.
        matching_group: matching-group code (0 adult clients, 1 child clients, 2 staff).
        resident_group: resident-group code (0 client, 1 staff, 2 family).
        ce_type: CE-type code.
        areas: nested area codes, levels x residents (top level first).
        profiles: per profile step, the code of the record's matching-group profile.
        eligible: may be sampled or be a partner (not imputed).
        sampled: drawn into the sample.
        start: finest level at which the record may be swapped (uniques start coarser).
    """

    delivery_group: IntArray
    matching_group: IntArray
    resident_group: IntArray
    ce_type: IntArray
    areas: IntArray
    profiles: list[IntArray]
    eligible: BoolArray
    sampled: BoolArray
    start: IntArray


@dataclass(frozen=True)
class Matches:
    """Outcome of :func:`match`, one entry per resident.

    Attributes:
        partner: partner's index, -1 if none.
        pass_of: index of the pass that paired the record, -1 if none.
        had_candidate: a sampled record had some candidate at one of its passes (used or not).
    """

    partner: IntArray
    pass_of: IntArray
    had_candidate: BoolArray


def match(cand: Candidates, steps: Sequence[Pass], rng: np.random.Generator) -> Matches:
    """Run the passes; random numbers: one uniform donor key per resident, then one permutation."""
    n = len(cand.eligible)
    donor = cand.eligible & ~cand.sampled
    keys = np.where(donor, rng.random(n) + np.finfo(np.float64).tiny, 0.0)
    sampled = np.flatnonzero(cand.sampled)
    order = sampled[rng.permutation(len(sampled))]
    partner = np.full(n, -1, dtype=np.int64)
    pass_of = np.full(n, -1, dtype=np.int64)
    had_candidate = np.zeros(n, dtype=bool)
    used = cand.sampled.astype(np.uint8)
    for k, step in enumerate(steps):
        todo = order[(partner[order] < 0) & (cand.start[order] >= step.level)]
        if len(todo) == 0:
            continue
        key, n_groups = _pass_key(cand, step)
        area = cand.areas[step.level]
        todo = todo[_has_candidate(key, n_groups, area, donor, todo)]
        had_candidate[todo] = True
        if len(todo) == 0:
            continue
        profile = key[None, :]
        orders, starts, ends = _ordering.donor_index(
            profile, np.array([n_groups], dtype=np.int64), keys, min(1.0, 3.0 * len(todo) / n)
        )
        index: DonorIndex = (orders, starts, ends, np.arange(n, dtype=np.int64)[None, :], keys)
        _pair(todo, area, profile, index, used, partner, pass_of, k)
    return Matches(partner=partner, pass_of=pass_of, had_candidate=had_candidate)


def _pass_key(cand: Candidates, step: Pass) -> tuple[IntArray, int]:
    """Group code of what partners must share in ``step``."""
    columns = [cand.delivery_group, cand.matching_group, cand.profiles[step.profile]]
    if step.same_resident_group:
        columns.append(cand.resident_group)
    if step.same_ce_type:
        columns.append(cand.ce_type)
    if step.level > 0:
        columns.append(cand.areas[step.level - 1])
    return group_codes(columns, len(cand.eligible))


def _has_candidate(key: IntArray, n_groups: int, area: IntArray, donor: BoolArray, todo: IntArray) -> BoolArray:
    """Whether some donor shares the record's key in another area (before any donor is used)."""
    per_group = np.bincount(key[donor], minlength=n_groups)
    cell, n_cells = dense_codes(key * (int(area.max()) + 1) + area)
    per_cell = np.bincount(cell[donor], minlength=n_cells)
    found: BoolArray = per_group[key[todo]] - per_cell[cell[todo]] > 0
    return found


@numba.njit(cache=True)
def _pair(
    todo: IntArray,
    area: IntArray,
    profile: IntArray,
    index: DonorIndex,
    used: FlagArray,
    partner: IntArray,
    pass_of: IntArray,
    k: int,
) -> None:
    for s in todo:
        d = find_in_profile(s, 0, area, profile, index, used)
        if d >= 0:
            used[d] = 1
            partner[s], partner[d] = d, s
            pass_of[s], pass_of[d] = k, k
