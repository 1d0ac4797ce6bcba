"""Communal establishments (CE) and their residents.

Types follow the census notion of institutional households / collective living quarters: care homes
for the elderly, hospitals, student halls, prisons, military barracks, religious communities,
homeless shelters, children's homes and other CEs (workers' hostels). Residents are clients, staff
living in, or family of staff (Frend et al. 2011, section 3). Each type fixes the
clients' age and sex profile and their activity (care-home clients are pensioners, students are
students, soldiers are employed in the armed forces, prisoners are outside the labour force),
which makes CE populations as homogeneous as they are in real censuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from cubeguard.synth.persons import (
    CAS_EMPLOYED,
    CAS_OTHER,
    CAS_PENSION,
    CAS_STUDENT,
    CAS_UNEMPLOYED,
    EDU_GENERAL,
    EDU_HIGH,
    EDU_LOW,
    LMS_ADULT,
    LMS_CHILD,
    OCC_ARMED,
)
from cubeguard.synth.sampling import IntArray, age_density, categorical, cumulative

CLIENT, STAFF, FAMILY = 1, 2, 3  # indices into codes.CE_ROLE

# Per type "1".."9": establishment share, size (median, log-sd), staff share, client age density,
# client male share, education profile, immigrant share, industry of staff (index into codes.IND).
_TYPES: Final = (
    (0.36, 35, 0.5, 0.05, {60: 0, 70: 0.3, 80: 1, 88: 1.2, 95: 0.6, 103: 0}, 0.30, EDU_GENERAL, 0.01, 16),
    (0.05, 60, 0.7, 0.03, {18: 0, 30: 0.4, 50: 0.7, 70: 1.0, 85: 1.0, 98: 0}, 0.45, EDU_GENERAL, 0.02, 16),
    (0.09, 180, 0.6, 0.02, {17: 0, 18: 1, 21: 1, 24: 0.5, 28: 0.1, 32: 0}, 0.50, EDU_HIGH, 0.12, 15),
    (0.02, 350, 0.7, 0.01, {17: 0, 19: 0.6, 25: 1, 35: 1, 45: 0.5, 60: 0.15, 75: 0}, 0.95, EDU_LOW, 0.06, 14),
    (0.025, 250, 0.6, 0.03, {18: 0, 19: 1, 25: 1, 35: 0.4, 50: 0}, 0.90, EDU_GENERAL, 0.0, 14),
    (0.12, 18, 0.6, 0.0, {18: 0, 22: 0.5, 35: 1, 60: 1, 80: 0.8, 95: 0}, 0.40, EDU_GENERAL, 0.03, 18),
    (0.08, 30, 0.5, 0.03, {18: 0, 25: 0.6, 40: 1, 55: 1, 70: 0.3, 80: 0}, 0.80, EDU_LOW, 0.10, 16),
    (0.13, 14, 0.4, 0.12, {0: 0.3, 6: 0.8, 12: 1, 17: 1, 18: 0}, 0.55, EDU_GENERAL, 0.03, 16),
    (0.125, 45, 0.6, 0.03, {18: 0, 22: 1, 35: 1, 55: 0.5, 65: 0}, 0.75, EDU_LOW, 0.35, 8),
)  # fmt: skip
_TYPE_CUM: Final = cumulative([t[0] for t in _TYPES])
_CLIENT_AGE_CUM: Final = np.stack([np.cumsum(age_density(t[4])) for t in _TYPES])
_STAFF_AGE_CUM: Final = np.cumsum(age_density({22: 0, 25: 1, 55: 1, 65: 0}))
_CHILD_AGE_CUM: Final = np.cumsum(age_density({0: 1, 17: 1, 18: 0}))
_STAFF_MALE: Final = np.array([0.2, 0.3, 0.4, 0.7, 0.85, 0.5, 0.4, 0.25, 0.5])


@dataclass(frozen=True)
class Establishments:
    """Communal establishments of one block and their residents (members contiguous)."""

    size: IntArray
    start: IntArray
    ce_type: IntArray  # index into codes.CE_TYPE ("1".."9" -> 1..9)
    ce: IntArray  # person -> establishment
    role: IntArray  # index into codes.CE_ROLE
    age: IntArray
    sex: IntArray
    cas: IntArray  # forced activity status, -1 to draw
    occ: IntArray  # forced occupation, -1 to draw
    ind: IntArray  # forced industry, -1 to draw
    edu_profile: IntArray
    lms_class: IntArray
    union: IntArray  # 0 (married) for spouses of staff, else -1
    p_immigrant: npt.NDArray[np.float64]


def establishments(rng: np.random.Generator, n_persons: int) -> Establishments:
    """Communal establishments holding exactly ``n_persons`` residents (the last one is cut to fit)."""
    sizes: list[IntArray] = []
    types: list[IntArray] = []
    total = 0
    while total < n_persons:
        m = max(4, (n_persons - total) // 40)
        t = categorical(rng, _TYPE_CUM, m)
        med = np.array([_TYPES[i][1] for i in t], dtype=np.float64)
        sd = np.array([_TYPES[i][2] for i in t], dtype=np.float64)
        s = np.maximum(np.rint(med * np.exp(sd * rng.standard_normal(m))).astype(np.int64), 3)
        sizes.append(s)
        types.append(t)
        total += int(s.sum())
    size = np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)
    kind = np.concatenate(types) if types else np.zeros(0, dtype=np.int64)
    cum = np.cumsum(size)
    k = int(np.searchsorted(cum, n_persons, side="left")) + 1 if n_persons > 0 else 0
    size, kind = size[:k].copy(), kind[:k]
    if k:
        size[-1] -= int(cum[k - 1]) - n_persons
    return _residents(rng, size, kind)


def _residents(rng: np.random.Generator, size: IntArray, kind: IntArray) -> Establishments:
    nc = size.size
    start = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
    ce = np.repeat(np.arange(nc), size)
    n = ce.size
    pos = np.arange(n) - start[ce]
    staff_share = np.array([t[3] for t in _TYPES])[kind]
    n_staff = np.minimum(np.floor(size * staff_share + rng.random(nc)).astype(np.int64), size - 1)
    n_family = np.minimum(np.floor(n_staff * 0.4 + rng.random(nc)).astype(np.int64), size - 1 - n_staff)
    role = np.where(pos < n_staff[ce], STAFF, np.where(pos < (n_staff + n_family)[ce], FAMILY, CLIENT))
    t = kind[ce]

    u = rng.random((4, n))
    client_age = (u[0][:, None] >= _CLIENT_AGE_CUM[t, :-1]).sum(axis=1)
    staff_age = np.searchsorted(_STAFF_AGE_CUM, u[1], side="right")
    child_age = np.searchsorted(_CHILD_AGE_CUM, u[1], side="right")
    spouse = u[2] < 0.5
    age = np.where(role == STAFF, staff_age, client_age)
    age = np.where(role == FAMILY, np.where(spouse, staff_age, child_age), age).astype(np.int64)
    p_male = np.where(role == CLIENT, np.array([x[5] for x in _TYPES])[t], _STAFF_MALE[t])
    sex = (u[3] >= np.where(role == FAMILY, 0.5, p_male)).astype(np.int64)

    # forced activity, occupation and industry
    typ = t + 1  # CE type code
    cas = np.full(n, -1, dtype=np.int64)
    client = role == CLIENT
    cas = np.where(client & (typ == 1), CAS_PENSION, cas)
    cas = np.where(client & (typ == 2), np.where(age >= 60, CAS_PENSION, CAS_OTHER), cas)
    cas = np.where(client & (typ == 3), CAS_STUDENT, cas)
    cas = np.where(client & (typ == 4), CAS_OTHER, cas)
    cas = np.where(client & ((typ == 5) | (typ == 9)), CAS_EMPLOYED, cas)
    cas = np.where(client & (typ == 7), np.where(rng.random(n) < 0.4, CAS_UNEMPLOYED, CAS_OTHER), cas)
    cas = np.where(client & (typ == 8) & (age >= 15), CAS_STUDENT, cas)
    cas = np.where(role == STAFF, CAS_EMPLOYED, cas)
    occ = np.where(client & (typ == 5), OCC_ARMED, -1)
    ind = np.where(role == STAFF, np.array([x[8] for x in _TYPES])[t], -1)
    ind = np.where(client & (typ == 5), 14, ind)  # O: public administration and defence

    profile = np.where(client, np.array([x[6] for x in _TYPES])[t], EDU_GENERAL)
    lms_class = np.where(age < 18, LMS_CHILD, LMS_ADULT)
    union = np.where((role == FAMILY) & spouse, 0, -1)
    p_imm = np.where(client, np.array([x[7] for x in _TYPES])[t], 0.04)
    return Establishments(size=size, start=start, ce_type=kind + 1, ce=ce, role=role, age=age, sex=sex,
                          cas=cas, occ=occ, ind=ind, edu_profile=profile, lms_class=lms_class, union=union,
                          p_immigrant=p_imm)  # fmt: skip
