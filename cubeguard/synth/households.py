"""Private households: composition, ages, sexes and the household / family variables.

A household is drawn as a *template* (type, whether the reference person has a partner, numbers of
children and of other members, an optional second family nucleus), then expanded to members in a
fixed order: reference person, partner, children of the first family, other persons, the second
family's adults and children. Ages are drawn so that families are plausible (mothers 17-45 years
older than their children, partners of similar age, elderly parents ~27 years older than the
reference person). Household status (HST), family status (FST), household type (TPH) and size
(SPH) follow from the composition, as the census derives them (UNECE Conference of European
Statisticians Recommendations for the 2020 Census Round, chapter on households and families).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cubeguard.synth.sampling import (
    MAX_AGE,
    IntArray,
    age_density,
    categorical,
    categorical_by,
    cumulative,
    rounded_normal,
)

# Household templates.
SINGLE, COUPLE, COUPLE_KIDS, LONE, EXTENDED, NONFAMILY, TWO_FAMILY = range(7)
# Type shares of households by urbanity (rural, town, city).
_TYPE_CUM = cumulative(
    [
        [0.22, 0.20, 0.29, 0.08, 0.10, 0.025, 0.085],
        [0.28, 0.21, 0.27, 0.09, 0.07, 0.030, 0.050],
        [0.36, 0.22, 0.225, 0.09, 0.04, 0.045, 0.020],
    ]
)
#: Mean private household size by urbanity, used to turn LAU populations into household weights.
MEAN_SIZE = np.array([2.95, 2.55, 2.20])

# Member roles, in the order members are listed in a household.
REF, PARTNER, KID1, OTHER, F2A, F2B, KID2 = range(7)
# Union of a couple (index into FST's partner codes).
MARRIED, REGISTERED, CONSENSUAL = range(3)

_KIDS_COUPLE = cumulative([[0, 0.38, 0.40, 0.15, 0.05, 0.02], [0, 0.47, 0.39, 0.10, 0.03, 0.01]])
_KIDS_LONE = cumulative([0, 0.62, 0.29, 0.07, 0.02])
_OTHERS_EXT = cumulative([0, 0.85, 0.15])
_OTHERS_NONFAM = cumulative([0, 0.72, 0.20, 0.08])
_KIDS_TWOFAM_OLD = cumulative([0.70, 0.25, 0.05])
_KIDS_TWOFAM_YOUNG = cumulative([[0, 0.7, 0.3, 0, 0], [0.25, 0.35, 0.30, 0.10, 0]])
_EXT_BASE = cumulative([0.45, 0.30, 0.25])  # couple + kids, couple, lone parent + kids

_AGE_SINGLE = np.cumsum(age_density({18: 0, 20: 0.4, 25: 1.0, 32: 1.0, 42: 0.7, 52: 0.7, 62: 0.9,
                                     72: 1.1, 82: 1.1, 90: 0.5, 100: 0.03, 106: 0}))  # fmt: skip
_AGE_COUPLE = np.cumsum(age_density({20: 0, 23: 0.5, 28: 0.8, 35: 0.4, 45: 0.35, 55: 0.9, 65: 1.2,
                                     75: 0.9, 85: 0.3, 95: 0.02, 100: 0}))  # fmt: skip
_AGE_MOTHER = np.cumsum(age_density({19: 0, 24: 0.4, 30: 1.0, 48: 1.0, 55: 0.6, 62: 0.15, 70: 0}))
_AGE_LONE_PARENT = np.cumsum(age_density({18: 0, 22: 0.3, 30: 0.8, 40: 1.0, 50: 0.8, 60: 0.4, 75: 0.1,
                                          80: 0}))  # fmt: skip
_AGE_YOUNG_ADULT = np.cumsum(age_density({18: 0, 20: 1.0, 27: 1.0, 35: 0.4, 45: 0}))
_AGE_OLD_ADULT = np.cumsum(age_density({55: 0, 65: 1.0, 80: 1.0, 92: 0}))
_AGE_TWOFAM_REF = np.cumsum(age_density({48: 0, 52: 0.8, 60: 1.0, 70: 0.8, 80: 0.3, 90: 0}))


def _birth_age(rng: np.random.Generator, mother: IntArray) -> IntArray:
    """Mother's age at a child's birth: about N(29, 5) within 17-45; uniform in 17..mother if that is more."""
    b = np.clip(rounded_normal(rng, 29.0, 5.0, mother.size), 17, 45)
    young = np.floor(17 + rng.random(mother.size) * np.maximum(mother - 16, 1)).astype(np.int64)
    return np.where(b > mother, np.minimum(young, mother), b)


@dataclass(frozen=True)
class Households:
    """Private households of one block and their members.

    Household arrays have one element per household, person arrays one per member; members of a
    household are contiguous and ``start[h]`` is the position of household ``h``'s reference person.
    """

    size: IntArray  # members per household
    start: IntArray
    tph: IntArray  # index into codes.TPH
    ref_age: IntArray
    hh: IntArray  # person -> household
    role: IntArray
    age: IntArray
    sex: IntArray  # index into codes.SEX (0 male, 1 female)
    hst: IntArray  # index into codes.HST
    fst: IntArray  # index into codes.FST
    union: IntArray  # MARRIED / REGISTERED / CONSENSUAL for partners, -1 otherwise


def _union(rng: np.random.Generator, age: IntArray, same_sex: npt.NDArray[np.bool_]) -> IntArray:
    p_cons = np.where(age < 30, 0.45, np.where(age < 45, 0.22, 0.10))
    u = rng.random(age.size)
    out = np.where(u < p_cons, CONSENSUAL, MARRIED)
    out = np.where(u > 0.997, REGISTERED, out)
    return np.where(same_sex, np.where(u < 0.5, REGISTERED, CONSENSUAL), out).astype(np.int64)


def _templates(rng: np.random.Generator, urban: IntArray) -> dict[str, IntArray]:
    """Draw household templates for households in LAU of the given urbanity."""
    n = urban.size
    kind = categorical_by(rng, _TYPE_CUM, urban)
    rural = (urban == 0).astype(np.int64)
    kids_c = categorical_by(rng, _KIDS_COUPLE, 1 - rural)
    kids_l = categorical(rng, _KIDS_LONE, n)
    ext = categorical(rng, _EXT_BASE, n)
    partner = np.isin(kind, (COUPLE, COUPLE_KIDS, TWO_FAMILY)) | ((kind == EXTENDED) & (ext < 2))
    kids1 = np.zeros(n, dtype=np.int64)
    kids1 = np.where(kind == COUPLE_KIDS, kids_c, kids1)
    kids1 = np.where(kind == LONE, kids_l, kids1)
    kids1 = np.where((kind == EXTENDED) & (ext == 0), kids_c, kids1)
    kids1 = np.where((kind == EXTENDED) & (ext == 2), kids_l, kids1)
    kids1 = np.where(kind == TWO_FAMILY, categorical(rng, _KIDS_TWOFAM_OLD, n), kids1)
    others = np.where(kind == EXTENDED, categorical(rng, _OTHERS_EXT, n), 0)
    others = np.where(kind == NONFAMILY, categorical(rng, _OTHERS_NONFAM, n), others)
    f2_lone = rng.random(n) < 0.2
    f2 = np.where(kind == TWO_FAMILY, np.where(f2_lone, 2, 1), 0)
    kids2 = np.where(kind == TWO_FAMILY, categorical_by(rng, _KIDS_TWOFAM_YOUNG, (~f2_lone).astype(np.int64)), 0)
    size = 1 + partner + kids1 + others + np.where(f2 == 1, 2, np.where(f2 == 2, 1, 0)) + kids2
    return {"kind": kind, "partner": partner.astype(np.int64), "kids1": kids1, "others": others,
            "f2": f2, "kids2": kids2, "size": size}  # fmt: skip


def _fit(t: dict[str, IntArray], n_persons: int) -> dict[str, IntArray]:
    """Keep the households that fit ``n_persons``; make the remainder one non-family household."""
    cum = np.cumsum(t["size"])
    k = int(np.searchsorted(cum, n_persons, side="left")) + 1  # households needed to reach n
    out = {key: v[:k].copy() for key, v in t.items()}
    rest = n_persons - (int(cum[k - 2]) if k >= 2 else 0)
    if rest != int(out["size"][-1]):
        out["kind"][-1] = SINGLE if rest == 1 else NONFAMILY
        out["partner"][-1] = out["kids1"][-1] = out["f2"][-1] = out["kids2"][-1] = 0
        out["others"][-1] = rest - 1
        out["size"][-1] = rest
    return out


def private_households(
    rng: np.random.Generator, n_persons: int, lau_cum: npt.NDArray[np.float64], lau_urban: npt.NDArray[np.int8]
) -> tuple[IntArray, Households]:
    """Exactly ``n_persons`` persons in private households; also returns each household's LAU."""
    parts: list[dict[str, IntArray]] = []
    laus: list[IntArray] = []
    total = 0
    while total < n_persons:  # usually one round: n/2 templates hold ~1.25 n persons
        m = max(16, (n_persons - total) // 2)
        lau = categorical(rng, lau_cum, m)
        t = _templates(rng, lau_urban[lau].astype(np.int64))
        parts.append(t)
        laus.append(lau)
        total += int(t["size"].sum())
    t = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    t = _fit(t, n_persons)
    lau_all = np.concatenate(laus)[: t["size"].size]
    return lau_all, _members(rng, t)


def _members(rng: np.random.Generator, t: dict[str, IntArray]) -> Households:
    kind, partner, kids1, others, f2, size = (t["kind"], t["partner"], t["kids1"], t["others"], t["f2"], t["size"])
    nh = size.size
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    hh = np.repeat(np.arange(nh), size)
    n = hh.size
    pos = np.arange(n) - start[hh]
    b1 = 1 + partner
    b2 = b1 + kids1
    b3 = b2 + others
    f2_adults = np.where(f2 == 1, 2, np.where(f2 == 2, 1, 0))
    b4 = b3 + f2_adults
    role = np.select(
        [pos == 0, pos < b1[hh], pos < b2[hh], pos < b3[hh], pos == b3[hh], pos < b4[hh]],
        [REF, PARTNER, KID1, OTHER, F2A, F2B],
        KID2,
    )

    # --- household-level ages and sexes -------------------------------------------------------
    has_kids1 = kids1 > 0
    lone = has_kids1 & (partner == 0)
    mother = np.where(lone, categorical(rng, _AGE_LONE_PARENT, nh), categorical(rng, _AGE_MOTHER, nh))
    father = np.maximum(mother + rounded_normal(rng, 2.5, 3.5, nh), 18)
    ref_male = rng.random(nh) < np.where(lone, 0.15, 0.68)
    same_sex = (partner == 1) & (rng.random(nh) < 0.012)
    single_age = categorical(rng, _AGE_SINGLE, nh)
    couple_age = categorical(rng, _AGE_COUPLE, nh)
    young = categorical(rng, _AGE_YOUNG_ADULT, nh)
    old = categorical(rng, _AGE_OLD_ADULT, nh)
    twofam_ref = categorical(rng, _AGE_TWOFAM_REF, nh)
    gap = rounded_normal(rng, 2.5, 3.5, nh)
    nonfam_young = rng.random(nh) < 0.7

    ref_age = single_age.copy()
    ref_age = np.where(kind == COUPLE, couple_age, ref_age)
    ref_age = np.where(has_kids1 & ~lone, np.where(ref_male, father, mother), ref_age)
    ref_age = np.where(lone, np.where(ref_male, mother + 2, mother), ref_age)
    ref_age = np.where((kind == EXTENDED) & (partner == 1) & ~has_kids1, couple_age, ref_age)
    ref_age = np.where(kind == NONFAMILY, np.where(nonfam_young, young, old), ref_age)
    ref_age = np.where(kind == TWO_FAMILY, twofam_ref, ref_age)
    ref_age = np.clip(ref_age, 16, MAX_AGE)
    # partner: the other parent, or of similar age (younger if the reference person is male)
    ptn_age = np.where(ref_male, ref_age - gap, ref_age + gap)
    ptn_age = np.where(has_kids1 & ~lone & (kind != TWO_FAMILY), np.where(ref_male, mother, father), ptn_age)
    ptn_age = np.clip(np.where(ptn_age < 18, ref_age + np.abs(gap), ptn_age), 18, MAX_AGE)
    # two-family households: the first family is the older couple, the second an adult child's;
    # mothers of the children of each family
    mother = np.where(kind == TWO_FAMILY, np.where(ref_male, ptn_age, ref_age), mother)
    f2a_age = np.maximum(mother - np.clip(rounded_normal(rng, 26.0, 4.0, nh), 17, mother - 20), 18)
    f2b_age = np.clip(f2a_age + rounded_normal(rng, 0.0, 3.0, nh), 18, None)
    mother2 = np.minimum(f2a_age, f2b_age)

    p_male_single = np.where(single_age < 40, 0.58, np.where(single_age < 65, 0.5, 0.28))
    u_sex = rng.random(nh)
    ref_sex = np.where(kind == SINGLE, u_sex >= p_male_single, ~ref_male).astype(np.int64)
    ref_sex = np.where(kind == NONFAMILY, (u_sex >= 0.55).astype(np.int64), ref_sex)
    ptn_sex = np.where(same_sex, ref_sex, 1 - ref_sex)
    f2a_sex = (rng.random(nh) < 0.5).astype(np.int64)

    # --- persons ------------------------------------------------------------------------------
    age = ref_age[hh].copy()
    sex = ref_sex[hh].copy()
    is_p = role == PARTNER
    age[is_p] = ptn_age[hh[is_p]]
    sex[is_p] = ptn_sex[hh[is_p]]
    u = rng.random(n)
    u2 = rng.random(n)
    noise = rng.normal(0.0, 1.0, size=n)
    for r, m in ((KID1, mother), (KID2, mother2)):
        k = role == r
        m_k = m[hh[k]]
        age[k] = m_k - _birth_age(rng, m_k)
        sex[k] = (u2[k] < 0.486).astype(np.int64)
    k = role == OTHER
    h = hh[k]
    elderly = ref_age[h] + np.rint(27 + 4 * noise[k]).astype(np.int64)
    parent_of_ref = (kind[h] == EXTENDED) & (u[k] < 0.6) & (elderly <= 98)
    relative = np.clip(ref_age[h] + np.rint(12 * noise[k]).astype(np.int64), 15, 95)
    flatmate = ref_age[h] + np.rint(np.where(ref_age[h] < 50, 4, 6) * noise[k]).astype(np.int64)
    flatmate = np.where(flatmate < 18, 36 - flatmate, flatmate)  # reflect at 18
    age[k] = np.where(kind[h] == NONFAMILY, flatmate, np.where(parent_of_ref, elderly, relative))
    sex[k] = np.where(parent_of_ref, u2[k] < 0.72, u2[k] < 0.45).astype(np.int64)
    for r, a, s in ((F2A, f2a_age, f2a_sex), (F2B, f2b_age, 1 - f2a_sex)):
        k = role == r
        age[k] = a[hh[k]]
        sex[k] = s[hh[k]]
    age = np.clip(age, 0, MAX_AGE)

    # --- unions, household and family status, household type ----------------------------------
    union1 = _union(rng, np.minimum(ref_age, ptn_age), same_sex)
    union2 = _union(rng, np.minimum(f2a_age, f2b_age), np.zeros(nh, dtype=bool))
    union = np.full(n, -1, dtype=np.int64)
    in_couple1 = ((role == REF) | (role == PARTNER)) & (partner[hh] == 1)
    union[in_couple1] = union1[hh[in_couple1]]
    in_couple2 = ((role == F2A) | (role == F2B)) & (f2[hh] == 1)
    union[in_couple2] = union2[hh[in_couple2]]
    lone_parent = ((role == REF) & lone[hh]) | ((role == F2A) & (f2[hh] == 2))
    kid_of_lone = ((role == KID1) & lone[hh]) | ((role == KID2) & (f2[hh] == 2))
    is_kid = (role == KID1) | (role == KID2)

    hst = np.select(
        [union >= 0, lone_parent, is_kid, size[hh] == 1],
        [0, 1, 2, 3],
        4,  # not in a family nucleus, living with others
    )
    fst = np.select(
        [union >= 0, lone_parent & (sex == 0), lone_parent, is_kid & ~kid_of_lone, kid_of_lone],
        [union, 3, 4, 5, 6],
        7,
    )
    # youngest resident son/daughter of the first family
    kid_age = np.where(role == KID1, age, 10_000)
    youngest = np.minimum.reduceat(kid_age, start)
    kid_band = (youngest >= 25).astype(np.int64)
    tph = np.select(
        [size == 1, f2 > 0, (partner == 1) & ~has_kids1, partner == 1, lone & (ref_sex == 0), lone],
        [0, 9, 2, 3 + kid_band, 5 + kid_band, 7 + kid_band],
        1,  # multiperson non-family household
    )
    return Households(size=size, start=start, tph=tph, ref_age=ref_age, hh=hh, role=role,
                      age=age, sex=sex, hst=hst, fst=fst, union=union)  # fmt: skip
