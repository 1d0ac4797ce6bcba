"""Citizenship, country of birth, year of arrival and residence one year before the census.

Migration is drawn per household: an *immigrant household* has one country of origin and one
year of arrival; its members born before that year were born abroad and arrived then, members born
later were born in the country (often still with the parents' citizenship). A partner of an
immigrant can be native, and a few adults of native households are immigrants on their own or
natives who came back from abroad. Foreign-born persons naturalise with the years since arrival
(less often EU citizens, who have less reason to). Moving within the country in the last year is a
household event that depends on the reference person's age; households that arrived from abroad in
the census year moved from outside the country.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from cubeguard.synth import codes
from cubeguard.synth.sampling import FloatArray, IntArray, by_age, categorical, cumulative

_W: Final = {
    "2.1": {"DE": 8, "RO": 8, "IT": 5, "FR": 4, "BG": 4, "LT": 3, "ES": 3, "PT": 3, "HU": 3, "CZ": 3,
            "SK": 3, "NL": 2, "PL": 4, "AT": 1.5, "BE": 1.2, "EL": 1.5, "HR": 1.2, "IE": 0.8, "LV": 1.5,
            "SE": 0.8, "DK": 0.6, "FI": 0.5, "SI": 0.5, "EE": 0.5, "CY": 0.2, "LU": 0.15, "MT": 0.15},
    "2.2.1": {"UA": 25, "BY": 8, "RU": 6, "GB": 5, "MD": 3, "RS": 2, "TR": 4, "CH": 1, "NO": 0.5,
              "AL": 1, "OTH": 2},
    "2.2.2": {"MA": 2, "DZ": 1, "NG": 1, "EG": 1, "TN": 0.6, "SN": 0.4, "OTH": 2},
    "2.2.3": {"BR": 1.5, "CO": 0.8, "VE": 0.6, "OTH": 1},
    "2.2.4": {"US": 2, "CA": 0.6},
    "2.2.5": {"IN": 4, "CN": 3, "VN": 3, "PH": 1.5, "PK": 1, "GE": 2, "AM": 1.5, "KZ": 1, "SY": 1,
              "AF": 0.5, "OTH": 3},
    "2.2.6": {"AU": 0.3, "NZ": 0.1, "OTH": 0.05},
}  # fmt: skip
_COUNTRY_CUM: Final = cumulative([_W[g][c] for g, cs in codes.COUNTRY_GROUPS for c in cs])
_N_EU: Final = len(codes.COUNTRY_GROUPS[0][1])
# Years since arrival of immigrant households: 0-4, 5-14, 15-30, 31-60 (uniform within).
_SINCE_CUM: Final = cumulative([0.30, 0.30, 0.25, 0.15])
_SINCE_LO: Final = np.array([0, 5, 15, 31])
_SINCE_HI: Final = np.array([4, 14, 30, 60])
_P_MOVE: Final = by_age({18: 0.30, 25: 0.20, 35: 0.08, 45: 0.05, 65: 0.025, 80: 0.03})

COC_NATIONAL, POB_NATIONAL = 0, 0
COC_STATELESS, COC_NOT_STATED = len(codes.COC) - 2, len(codes.COC) - 1
POB_NOT_STATED = len(codes.POB) - 1
ROY_SAME, ROY_WITHIN, ROY_ABROAD, ROY_NOT_STATED, ROY_NOT_APPLICABLE = range(5)


def origin(
    rng: np.random.Generator, hh: IntArray, age: IntArray, partner: IntArray, p_immigrant: FloatArray, ref_age: IntArray
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Citizenship, country of birth (indices into codes.COC / codes.POB) and year of arrival.

    Args:
        rng: random generator.
        hh: household index of each person (members contiguous).
        age: age of each person.
        partner: 1 for the partner of a household's reference person, else 0.
        p_immigrant: per household, the probability that it is an immigrant household.
        ref_age: per household, the reference person's age (caps the years since arrival).

    Returns:
        ``(coc, pob, yae, arrived_this_year)``, the last a 0/1 flag per person.
    """
    nh, n = ref_age.size, hh.size
    immigrant_hh = rng.random(nh) < p_immigrant
    country_hh = categorical(rng, _COUNTRY_CUM, nh)
    band = categorical(rng, _SINCE_CUM, nh)
    since_hh = _SINCE_LO[band] + np.floor(rng.random(nh) * (_SINCE_HI[band] - _SINCE_LO[band] + 1)).astype(np.int64)
    since_hh = np.minimum(since_hh, ref_age)

    u = rng.random((5, n))
    # immigrants on their own in native households (adults only)
    lone_immigrant = ~immigrant_hh[hh] & (age >= 18) & (u[0] < 0.008)
    country = country_hh[hh]
    country[lone_immigrant] = categorical(rng, _COUNTRY_CUM, int(lone_immigrant.sum()))
    since = np.where(lone_immigrant, np.floor(u[1] * (age - 17)).astype(np.int64), since_hh[hh])
    native_partner = (partner == 1) & (u[2] < 0.25)
    born_abroad = (immigrant_hh[hh] & (age >= since) & ~native_partner) | lone_immigrant
    second_gen = immigrant_hh[hh] & ~born_abroad & ~native_partner

    eu = country < _N_EU
    p_nat = np.clip((since - 5) / 25.0, 0.0, 0.75) * np.where(eu, 0.4, 1.0)
    foreign_citizen = (born_abroad & (u[3] >= p_nat)) | (second_gen & (u[3] < 0.5))
    coc = np.where(foreign_citizen, country + 1, COC_NATIONAL)
    coc = np.where(foreign_citizen & ~eu & (u[4] < 0.02), COC_STATELESS, coc)
    pob = np.where(born_abroad, country + 1, POB_NATIONAL)

    returned = ~born_abroad & (age >= 20) & (u[4] > 0.985)
    back = codes.CENSUS_YEAR - np.floor(u[1] * (age - 17)).astype(np.int64)
    yae = np.where(born_abroad, codes.CENSUS_YEAR - since, np.where(returned, back, codes.YAE_NEVER_ABROAD))
    v = rng.random((3, n))
    yae = np.where(born_abroad & (v[0] < 0.02), codes.YAE_NOT_STATED, yae)
    coc = np.where(v[1] < 0.006, COC_NOT_STATED, coc)
    pob = np.where(v[2] < 0.003, POB_NOT_STATED, pob)
    arrived = (born_abroad & (since == 0)).astype(np.int64)
    return coc.astype(np.int64), pob.astype(np.int64), yae.astype(np.int64), arrived


def residence_one_year_before(
    rng: np.random.Generator,
    hh: IntArray,
    age: IntArray,
    ref_age: IntArray,
    arrived: IntArray,
    p_move_scale: float = 1.0,
) -> IntArray:
    """Residence one year before the census (index into codes.ROY)."""
    moved_hh = rng.random(ref_age.size) < _P_MOVE[ref_age] * p_move_scale
    roy = np.where(moved_hh[hh], ROY_WITHIN, ROY_SAME)
    roy = np.where(arrived == 1, ROY_ABROAD, roy)
    roy = np.where(rng.random(hh.size) < 0.004, ROY_NOT_STATED, roy)
    return np.where(age == 0, ROY_NOT_APPLICABLE, roy).astype(np.int64)
