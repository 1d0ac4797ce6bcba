"""Person variables that depend on age, sex, place and each other.

Education (ISCED 2011) is drawn from age cohort, sex and urbanity; current activity status from age,
sex and education; occupation (ISCO-08 major group) only for employed persons, from education, sex,
urbanity and age; industry (NACE Rev. 2 section) from occupation; status in employment from
occupation; legal marital status from age, sex and the person's place in the household. The
shares are rough European census figures (Eurostat census hub 2011 / 2021 orders of magnitude), not
any country's published values.

All functions return indices into the code tuples of :mod:`cubeguard.synth.codes`.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from cubeguard.synth.sampling import MAX_AGE, FloatArray, IntArray, by_age, categorical_by, cumulative

_AGES: Final = MAX_AGE + 1

# Education profiles: general population, low-skewed (prisons, shelters), high-skewed (students),
# immigrants (more often low and more often high than natives).
EDU_GENERAL, EDU_LOW, EDU_HIGH, EDU_MIGRANT = range(4)
_N_PROFILES: Final = 4
EDU_NOT_STATED, EDU_NOT_APPLICABLE = 9, 10
CAS_EMPLOYED, CAS_UNEMPLOYED, CAS_BELOW_AGE, CAS_PENSION, CAS_STUDENT, CAS_OTHER = range(6)
OCC_ARMED, OCC_NOT_STATED, OCC_NA_CHILD, OCC_NA_OTHER = 9, 10, 11, 12
IND_NOT_STATED, IND_NOT_APPLICABLE = 21, 22
SIE_NOT_APPLICABLE = 5
LMS_NEVER, LMS_MARRIED, LMS_REGISTERED, LMS_WIDOWED, LMS_DIVORCED, LMS_NOT_STATED = range(6)
# LMS classes of persons who are not married / registered partners.
LMS_CHILD, LMS_LONE_PARENT, LMS_ADULT, LMS_CONSENSUAL = range(4)


def _education_table() -> FloatArray:
    """Cumulative P(edu | age, sex, urbanity, profile) with shape (111*2*3*4, 11)."""
    low = by_age({15: 0.97, 16: 0.9, 17: 0.8, 18: 0.6, 19: 0.4, 20: 0.25, 22: 0.18, 25: 0.15,
                  35: 0.16, 45: 0.20, 55: 0.25, 65: 0.32, 75: 0.45, 85: 0.55, 100: 0.6})  # fmt: skip
    high = by_age({20: 0.0, 21: 0.03, 22: 0.10, 23: 0.2, 25: 0.33, 35: 0.33, 45: 0.26, 55: 0.20,
                   65: 0.16, 75: 0.12, 85: 0.09, 100: 0.08})  # fmt: skip
    low_split = np.stack([by_age({15: 0.02, 25: 0.06, 55: 0.08, 70: 0.10, 85: 0.12}),
                          by_age({15: 0.45, 17: 0.20, 25: 0.25, 55: 0.32, 70: 0.45, 85: 0.50}),
                          by_age({15: 0.53, 17: 0.78, 25: 0.69, 55: 0.60, 70: 0.45, 85: 0.38})], axis=1)  # fmt: skip
    high_split = np.where(
        (np.arange(_AGES) < 24)[:, None],
        [0.10, 0.90, 0.0, 0.0],
        np.where((np.arange(_AGES) < 30)[:, None], [0.08, 0.42, 0.48, 0.02], [0.08, 0.28, 0.57, 0.07]),
    )
    age = np.arange(_AGES)
    out = np.zeros((_AGES, 2, 3, _N_PROFILES, 11))
    for sex in range(2):
        for urb in range(3):
            for prof in range(_N_PROFILES):
                h = high.copy()
                lo = low.copy()
                if sex == 1:
                    h = h * np.where(age < 60, 1.3, np.where(age >= 70, 0.8, 1.0))
                else:
                    h = h * np.where(age < 60, 0.85, 1.0)
                h = h * (0.65, 1.0, 1.4)[urb]
                lo = lo * np.where(age < 25, 1.0, (1.3, 1.0, 0.8)[urb])
                if prof == EDU_LOW:
                    lo, h = lo * 3.0, h * 0.3
                elif prof == EDU_HIGH:
                    lo, h = lo * 0.3, h * 2.5
                elif prof == EDU_MIGRANT:
                    lo, h = lo * 1.8, h * 1.2
                lo, h = np.minimum(lo, 0.95), np.minimum(h, 0.95)
                mid = np.maximum(1.0 - lo - h, 0.02)
                tot = lo + mid + h
                ns = np.where(age >= 80, 0.05, 0.03) * (1.0 if prof in (EDU_GENERAL, EDU_HIGH) else 2.0)
                scale = (1.0 - ns) / tot
                cell = out[:, sex, urb, prof]
                cell[:, 0:3] = (lo * scale)[:, None] * low_split
                cell[:, 3] = mid * scale * 0.75
                cell[:, 4] = mid * scale * 0.25
                cell[:, 5:9] = (h * scale)[:, None] * high_split
                cell[:, 9] = ns
                cell[age < 15] = 0.0
                cell[age < 15, EDU_NOT_APPLICABLE] = 1.0
    return cumulative(out.reshape(-1, 11))


_EDU_CUM: Final = _education_table()


def education(rng: np.random.Generator, age: IntArray, sex: IntArray, urban: IntArray, profile: IntArray) -> IntArray:
    """Highest level of education completed (index into codes.EDU)."""
    g = ((age * 2 + sex) * 3 + urban) * _N_PROFILES + profile
    return categorical_by(rng, _EDU_CUM, g)


def edu_band(edu: IntArray) -> IntArray:
    """0 low (ISCED 0-2), 1 medium (ISCED 3-4 and not stated), 2 high (ISCED 5-8)."""
    return np.select([edu <= 2, (edu >= 5) & (edu <= 8)], [0, 2], 1).astype(np.int64)


def _activity_table() -> FloatArray:
    """Cumulative P(cas | age, sex, education band) with shape (111*2*3, 6)."""
    student = by_age({14: 1.0, 15: 0.9, 16: 0.8, 18: 0.68, 19: 0.54, 20: 0.46, 22: 0.38, 24: 0.24,
                      26: 0.10, 28: 0.05, 32: 0.02, 45: 0.005, 60: 0.0})  # fmt: skip
    pension = [
        by_age({15: 0.0, 40: 0.02, 50: 0.05, 58: 0.1, 62: 0.2, 64: 0.35, 65: 0.75, 70: 0.87, 75: 0.93,
                85: 0.98}),
        by_age({15: 0.0, 40: 0.02, 50: 0.05, 55: 0.1, 58: 0.25, 59: 0.35, 60: 0.7, 65: 0.84, 70: 0.9,
                75: 0.94, 85: 0.98}),
    ]  # fmt: skip
    active = [
        by_age({15: 0.4, 20: 0.8, 25: 0.92, 50: 0.92, 60: 0.75, 65: 0.5, 75: 0.3}),
        by_age({15: 0.35, 20: 0.7, 25: 0.78, 35: 0.82, 50: 0.85, 60: 0.6, 65: 0.4, 75: 0.25}),
    ]
    unemployed = by_age({15: 0.2, 20: 0.15, 25: 0.08, 30: 0.05, 60: 0.04})
    age = np.arange(_AGES)
    out = np.zeros((_AGES, 2, 3, 6))
    for sex in range(2):
        for band, (fa, fu) in enumerate(((0.75, 1.8), (1.0, 1.0), (1.07, 0.55))):
            s = np.where(age < 15, 0.0, student)
            # some elderly people (more women) have no pension of their own: homemakers and others
            pen = pension[sex] * np.where(age >= 65, (0.96, 0.9)[sex], 1.0)
            p = pen * (1.0 - s)
            rest = (1.0 - s) * (1.0 - pen)
            a = np.minimum(active[sex] * fa, 0.98)
            u = np.minimum(unemployed * fu, 0.5)
            cell = out[:, sex, band]
            cell[:, CAS_EMPLOYED] = rest * a * (1.0 - u)
            cell[:, CAS_UNEMPLOYED] = rest * a * u
            cell[:, CAS_PENSION] = p
            cell[:, CAS_STUDENT] = s
            cell[:, CAS_OTHER] = rest * (1.0 - a)
            cell[age < 15] = 0.0
            cell[age < 15, CAS_BELOW_AGE] = 1.0
    return cumulative(out.reshape(-1, 6))


_CAS_CUM: Final = _activity_table()


def activity(rng: np.random.Generator, age: IntArray, sex: IntArray, edu: IntArray) -> IntArray:
    """Current activity status (index into codes.CAS)."""
    return categorical_by(rng, _CAS_CUM, (age * 2 + sex) * 3 + edu_band(edu))


# Occupation by education: ISCED 0-2, 3 (and not stated), 4, 5-6, 7-8. Columns: ISCO-08 major
# groups 1-9, armed forces (0), not stated.
_OCC_BY_EDU: Final = np.array([
    [0.010, 0.005, 0.020, 0.040, 0.170, 0.100, 0.220, 0.180, 0.255, 0.002],
    [0.040, 0.030, 0.120, 0.110, 0.170, 0.050, 0.200, 0.150, 0.120, 0.006],
    [0.050, 0.060, 0.220, 0.140, 0.170, 0.030, 0.140, 0.100, 0.080, 0.006],
    [0.100, 0.300, 0.240, 0.120, 0.100, 0.020, 0.050, 0.030, 0.030, 0.006],
    [0.120, 0.515, 0.160, 0.070, 0.050, 0.015, 0.025, 0.015, 0.020, 0.004],
])  # fmt: skip
_OCC_SEX: Final = np.array([
    [1.1, 0.8, 0.9, 0.6, 0.8, 1.1, 1.8, 1.7, 0.9, 1.9],
    [0.9, 1.25, 1.1, 1.5, 1.25, 0.85, 0.25, 0.35, 1.1, 0.1],
])  # fmt: skip
_OCC_NOT_STATED_SHARE: Final = 0.025


def _occupation_table() -> FloatArray:
    """Cumulative P(occ | education group, sex, urbanity, young) with shape (5*2*3*2, 11)."""
    out = np.zeros((5, 2, 3, 2, 11))
    for e in range(5):
        for sex in range(2):
            for urb in range(3):
                for young in range(2):
                    w = (0.7 * _OCC_BY_EDU[e] + 0.3 * _OCC_BY_EDU.mean(axis=0)) * _OCC_SEX[sex]
                    w[5] *= (4.0, 1.0, 0.25)[urb]  # skilled agricultural workers live in the country
                    w[0] *= 0.35 if young else 1.15  # managers are seldom young
                    w = w / w.sum() * (1.0 - _OCC_NOT_STATED_SHARE)
                    out[e, sex, urb, young, :10] = w
                    out[e, sex, urb, young, OCC_NOT_STATED] = _OCC_NOT_STATED_SHARE
    return cumulative(out.reshape(-1, 11))


_OCC_CUM: Final = _occupation_table()


def occupation(
    rng: np.random.Generator, cas: IntArray, age: IntArray, sex: IntArray, edu: IntArray, urban: IntArray
) -> IntArray:
    """Occupation (index into codes.OCC): a major group only for employed persons."""
    group5 = np.select([edu <= 2, edu == 4, (edu == 5) | (edu == 6), (edu == 7) | (edu == 8)], [0, 2, 3, 4], 1)
    g = ((group5 * 2 + sex) * 3 + urban) * 2 + (age < 30)
    occ = categorical_by(rng, _OCC_CUM, g)
    na = np.where(age < 15, OCC_NA_CHILD, OCC_NA_OTHER)
    return np.where(cas == CAS_EMPLOYED, occ, na).astype(np.int64)


# Industry (NACE Rev. 2 sections A-U) by occupation; unlisted sections get a small weight.
_IND_BY_OCC: Final = (
    {"A": 1, "C": 15, "F": 5, "G": 20, "H": 4, "I": 5, "J": 6, "K": 7, "L": 2, "M": 8, "N": 3, "O": 8,
     "P": 4, "Q": 6, "R": 2, "S": 2},
    {"C": 6, "D": 1, "F": 2, "G": 3, "J": 12, "K": 7, "M": 18, "O": 7, "P": 25, "Q": 16, "R": 2, "S": 1},
    {"C": 14, "D": 1, "E": 1, "F": 5, "G": 9, "H": 5, "J": 6, "K": 8, "L": 2, "M": 10, "N": 4, "O": 9,
     "P": 3, "Q": 12, "R": 2, "S": 2},
    {"C": 8, "G": 12, "H": 9, "J": 4, "K": 12, "L": 3, "M": 8, "N": 10, "O": 18, "P": 5, "Q": 8, "R": 1,
     "S": 2},
    {"C": 3, "G": 42, "H": 3, "I": 14, "N": 6, "O": 8, "P": 3, "Q": 12, "R": 3, "S": 5, "T": 1},
    {"A": 90, "C": 2, "N": 4, "O": 1},
    {"A": 1, "B": 3, "C": 48, "D": 2, "E": 2, "F": 30, "G": 6, "H": 3, "N": 2, "S": 3},
    {"A": 2, "B": 4, "C": 50, "D": 1, "E": 3, "F": 5, "G": 6, "H": 25, "N": 3},
    {"A": 12, "C": 18, "E": 3, "F": 10, "G": 12, "H": 8, "I": 10, "N": 15, "O": 3, "P": 2, "Q": 4, "S": 2,
     "T": 1},
    {"O": 1},
)  # fmt: skip
_IND_NOT_STATED_SHARE: Final = 0.015


def _industry_table() -> FloatArray:
    """Cumulative P(ind | occupation) with shape (11, 22): sections A-U, not stated."""
    letters = "ABCDEFGHIJKLMNOPQRSTU"
    out = np.zeros((11, 22))
    for o, weights in enumerate(_IND_BY_OCC):
        w = np.array([weights.get(x, 0.0) for x in letters], dtype=np.float64)
        if o != OCC_ARMED:
            w += np.where(np.isin(list(letters), ["T", "U"]), 0.01, 0.15)
        out[o, :21] = w / w.sum() * (1.0 - _IND_NOT_STATED_SHARE)
    out[OCC_NOT_STATED, :21] = out[:9, :21].mean(axis=0) * 0.65 / (1.0 - _IND_NOT_STATED_SHARE)
    out[:, IND_NOT_STATED] = _IND_NOT_STATED_SHARE
    out[OCC_NOT_STATED, IND_NOT_STATED] = 0.35
    return cumulative(out)


_IND_CUM: Final = _industry_table()


def industry(rng: np.random.Generator, occ: IntArray) -> IntArray:
    """Industry (index into codes.IND); not applicable unless employed (occupation <= not stated)."""
    employed = occ <= OCC_NOT_STATED
    ind = categorical_by(rng, _IND_CUM, np.where(employed, occ, 0))
    return np.where(employed, ind, IND_NOT_APPLICABLE).astype(np.int64)


# Status in employment by occupation: employees, employers, own-account, contributing family.
_SIE_BY_OCC: Final = np.array([
    [0.75, 0.20, 0.05, 0.00], [0.85, 0.03, 0.12, 0.00], [0.88, 0.02, 0.10, 0.00],
    [0.97, 0.005, 0.02, 0.005], [0.82, 0.04, 0.12, 0.02], [0.12, 0.06, 0.62, 0.20],
    [0.78, 0.04, 0.17, 0.01], [0.92, 0.01, 0.07, 0.0], [0.93, 0.005, 0.05, 0.015],
    [1.0, 0.0, 0.0, 0.0], [0.85, 0.03, 0.10, 0.02],
])  # fmt: skip
_SIE_CUM: Final = cumulative(np.hstack([_SIE_BY_OCC / _SIE_BY_OCC.sum(1, keepdims=True) * 0.99,
                                        np.full((11, 1), 0.01)]))  # fmt: skip


def status_in_employment(rng: np.random.Generator, occ: IntArray) -> IntArray:
    """Status in employment (index into codes.SIE); not applicable unless employed."""
    employed = occ <= OCC_NOT_STATED
    sie = categorical_by(rng, _SIE_CUM, np.where(employed, occ, 0))
    return np.where(employed, sie, SIE_NOT_APPLICABLE).astype(np.int64)


def _lms_table() -> FloatArray:
    """Cumulative P(lms | class, age, sex) with shape (4*111*2, 6) for non-partners."""
    tables = {
        LMS_CHILD: ({0: 1, 17: 1, 25: 0.97, 35: 0.88, 50: 0.8}, {17: 0, 25: 0.01, 35: 0.03, 50: 0.04},
                    {35: 0, 50: 0.02}, {17: 0, 25: 0.02, 35: 0.09, 50: 0.14}),
        LMS_LONE_PARENT: ({20: 0.6, 30: 0.4, 45: 0.2, 60: 0.1}, {20: 0.12, 40: 0.15, 60: 0.1},
                          {20: 0.02, 40: 0.07, 60: 0.45, 75: 0.6}, {20: 0.26, 30: 0.38, 45: 0.5, 60: 0.35}),
        LMS_ADULT: ({17: 1, 25: 0.93, 35: 0.62, 45: 0.42, 55: 0.3, 65: 0.16, 75: 0.1, 85: 0.08},
                    {17: 0, 25: 0.02, 35: 0.07, 45: 0.09, 55: 0.09, 65: 0.08, 80: 0.04},
                    {17: 0, 35: 0.02, 45: 0.06, 55: 0.2, 65: 0.5, 75: 0.72, 85: 0.82},
                    {17: 0, 25: 0.04, 35: 0.27, 45: 0.36, 55: 0.36, 65: 0.24, 75: 0.13, 85: 0.06}),
        LMS_CONSENSUAL: ({18: 0.95, 30: 0.8, 40: 0.55, 55: 0.35}, {30: 0.02, 55: 0.03},
                         {30: 0.01, 40: 0.03, 55: 0.12, 70: 0.25}, {18: 0.05, 30: 0.17, 40: 0.38, 55: 0.5}),
    }  # fmt: skip
    age = np.arange(_AGES)
    out = np.zeros((4, _AGES, 2, 6))
    for cls, (never, married, widowed, divorced) in tables.items():
        for sex in range(2):
            w = np.stack([by_age(never), by_age(married), np.zeros(_AGES), by_age(widowed), by_age(divorced)], 1)
            if sex == 0:  # men are less often widowed: the difference stays never married
                w[:, 0] += w[:, 3] * 0.45
                w[:, 3] *= 0.55
            w[age < 16] = [1, 0, 0, 0, 0]
            w = w / w.sum(1, keepdims=True) * 0.997
            out[cls, :, sex, :5] = w
            out[cls, :, sex, 5] = 0.003
    return cumulative(out.reshape(-1, 6))


_LMS_CUM: Final = _lms_table()


def marital_status(
    rng: np.random.Generator, age: IntArray, sex: IntArray, lms_class: IntArray, union: IntArray
) -> IntArray:
    """Legal marital status (index into codes.LMS).

    ``union`` is 0 (married) / 1 (registered partnership) / 2 (consensual union) for partners in a
    couple and -1 otherwise; ``lms_class`` says which table applies to everyone else.
    """
    cls = np.where(union == 2, LMS_CONSENSUAL, lms_class)
    drawn = categorical_by(rng, _LMS_CUM, (cls * _AGES + age) * 2 + sex)
    fixed = np.where(union == 0, LMS_MARRIED, LMS_REGISTERED)
    return np.where((union == 0) | (union == 1), fixed, drawn).astype(np.int64)
