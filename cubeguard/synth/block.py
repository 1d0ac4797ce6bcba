"""One block of the synthetic census: a fixed number of persons from its own random stream.

The population is cut into blocks of :data:`BLOCK_PERSONS` persons (the last one shorter). Block
``i`` draws from ``PCG64(SeedSequence(seed, spawn_key=(i,)))`` and depends on nothing else than
``(seed, i, its size, the layout)``, so the output does not depend on how blocks are batched into
Parquet row groups, and a larger population starts with the same persons as a smaller one. Each
block holds private households (exactly filling its share of persons) and communal establishments
(about :data:`CE_SHARE` of its persons).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Final

import numpy as np
import numpy.typing as npt

from cubeguard.synth import codes, communal, households, origin, persons
from cubeguard.synth.geography import Layout
from cubeguard.synth.sampling import FloatArray, categorical, cumulative

BLOCK_PERSONS: Final = 1 << 16
CE_SHARE: Final = 0.0175

_HAR_CUM: Final = cumulative([0.992, 0.005, 0.0, 0.0, 0.003])  # conventional, other unit, ..., ns
_HAR_CE: Final = codes.HAR.index("3")
_TSH_NOT_STATED, _TSH_NOT_APPLICABLE = codes.TSH.index("4"), codes.TSH.index("5")
_TPH_NOT_APPLICABLE = codes.TPH.index("4")
_HST_NOT_PRIVATE = codes.HST.index("2")
_FST_NO_NUCLEUS = codes.FST.index("4")
_P_IMMIGRANT_HH: Final = np.array([0.085, 0.14, 0.21])  # by urbanity of the LAU
_P_MOVE_CE: Final = np.array([0.0, 0.2, 0.3, 0.5, 0.2, 0.4, 0.1, 0.3, 0.2, 0.4])  # by CE type


@dataclass(frozen=True)
class BlockStats:
    """Counts of one block."""

    persons: int
    private_households: int
    establishments: int
    persons_in_ce: int


@cache
def _lau_tables(lay: Layout) -> tuple[FloatArray, FloatArray]:
    pop = lay.lau_pop.astype(np.float64)
    hh = cumulative(pop / households.MEAN_SIZE[lay.lau_urban])
    ce = cumulative(pop**1.15)
    return hh, ce


def _seed_rng(seed: int, index: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(index,))))


def block(
    seed: int, index: int, n: int, lay: Layout, pid0: int, hid0: int
) -> tuple[dict[str, npt.NDArray[np.generic]], BlockStats]:
    """Generate block ``index`` with ``n`` persons; person ids start at ``pid0``, unit ids at ``hid0``.

    Returns the columns of :data:`cubeguard.synth.codes.COLUMNS` as numpy arrays (code columns as
    indices into their code tuples, geography columns as indices into the layout's code tuples) and
    the block's counts.
    """
    rng = _seed_rng(seed, index)
    lau_hh_cum, lau_ce_cum = _lau_tables(lay)
    urban_of_lau = lay.lau_urban.astype(np.int64)

    n_ce = int(rng.binomial(n, CE_SHARE))
    hh_lau, hh = households.private_households(rng, n - n_ce, lau_hh_cum, lay.lau_urban)
    ce = communal.establishments(rng, n_ce)
    ce_lau = categorical(rng, lau_ce_cum, ce.size.size)
    nh, nc, nph = hh.size.size, ce.size.size, hh.hh.size

    # unit-level columns, households then establishments
    unit_size = np.concatenate([hh.size, ce.size])
    unit = np.repeat(np.arange(nh + nc), unit_size)
    pos = np.arange(n) - np.concatenate([hh.start, nph + ce.start])[unit]
    lau = np.concatenate([hh_lau, ce_lau])[unit]
    urban = urban_of_lau[lau]
    in_ce = np.arange(n) >= nph
    ce_type = np.concatenate([np.zeros(nph, dtype=np.int64), ce.ce_type[ce.ce]])
    ce_role = np.concatenate([np.zeros(nph, dtype=np.int64), ce.role])

    age = np.concatenate([hh.age, ce.age])
    sex = np.concatenate([hh.sex, ce.sex])
    role = hh.role
    # migration: households share it; each CE resident is on his or her own
    hh_urban = urban_of_lau[hh_lau]
    coc_h, pob_h, yae_h, arr_h = origin.origin(
        rng, hh.hh, hh.age, (role == households.PARTNER).astype(np.int64), _P_IMMIGRANT_HH[hh_urban], hh.ref_age
    )
    ce_idx = np.arange(n_ce)
    coc_c, pob_c, yae_c, arr_c = origin.origin(rng, ce_idx, ce.age, np.zeros(n_ce, dtype=np.int64),
                                               ce.p_immigrant, ce.age)  # fmt: skip
    pob = np.concatenate([pob_h, pob_c])
    profile = np.concatenate([np.zeros(nph, dtype=np.int64), ce.edu_profile])
    born_abroad = (pob != origin.POB_NATIONAL) & (pob != origin.POB_NOT_STATED)
    profile = np.where((profile == persons.EDU_GENERAL) & born_abroad, persons.EDU_MIGRANT, profile)
    edu = persons.education(rng, age, sex, urban, profile)
    cas = persons.activity(rng, age, sex, edu)
    forced_cas = np.concatenate([np.full(nph, -1), ce.cas])
    cas = np.where(forced_cas >= 0, forced_cas, cas)
    occ = persons.occupation(rng, cas, age, sex, edu, urban)
    forced_occ = np.concatenate([np.full(nph, -1), ce.occ])
    occ = np.where(forced_occ >= 0, forced_occ, occ)
    ind = persons.industry(rng, occ)
    forced_ind = np.concatenate([np.full(nph, -1), ce.ind])
    ind = np.where((forced_ind >= 0) & (occ <= persons.OCC_NOT_STATED), forced_ind, ind)
    sie = persons.status_in_employment(rng, occ)

    hh_lms_class = np.select(
        [(role == households.KID1) | (role == households.KID2), hh.hst == codes.HST.index("1.1.2")],
        [persons.LMS_CHILD, persons.LMS_LONE_PARENT],
        persons.LMS_ADULT,
    )
    lms = persons.marital_status(rng, age, sex, np.concatenate([hh_lms_class, ce.lms_class]),
                                 np.concatenate([hh.union, ce.union]))  # fmt: skip
    hst = np.concatenate([hh.hst, np.full(n_ce, _HST_NOT_PRIVATE)])
    fst = np.concatenate([hh.fst, np.full(n_ce, _FST_NO_NUCLEUS)])

    roy_h = origin.residence_one_year_before(rng, hh.hh, hh.age, hh.ref_age, arr_h)
    roy_c = np.where(rng.random(n_ce) < _P_MOVE_CE[ce.ce_type[ce.ce]], origin.ROY_WITHIN, origin.ROY_SAME)
    roy_c = np.where(arr_c == 1, origin.ROY_ABROAD, roy_c)
    roy_c = np.where(ce.age == 0, origin.ROY_NOT_APPLICABLE, roy_c)

    # household-level variables
    har_h = categorical(rng, _HAR_CUM, nh)
    immigrant_ref = pob_h[hh.start] != origin.POB_NATIONAL
    p_owner = np.array([0.86, 0.74, 0.62])[hh_urban] * np.where(hh.ref_age < 30, 0.55, 1.0)
    p_owner = p_owner * np.where(immigrant_ref, 0.5, 1.0)
    u = rng.random(nh)
    tsh_h = np.where(u < p_owner, 0, np.where(u < p_owner + (1 - p_owner) * 0.92, 1, 2))
    tsh_h = np.where(rng.random(nh) < 0.008, _TSH_NOT_STATED, tsh_h)
    imputed_h = rng.random(nh) < 0.03
    imputed = np.concatenate([imputed_h[hh.hh] & (rng.random(nph) < 0.85), rng.random(n_ce) < 0.05])
    imputed |= rng.random(n) < 0.003
    rkey = rng.random(n)

    cols: dict[str, npt.NDArray[np.generic]] = {
        "pid": np.arange(pid0, pid0 + n, dtype=np.int64),
        "hid": (hid0 + unit).astype(np.int64),
        "is_ref": pos == 0,
        "hh_kind": in_ce.astype(np.int8),
        "ce_type": ce_type.astype(np.int8),
        "ce_role": ce_role.astype(np.int8),
        "nuts1": lay.lau_nuts1[lau].astype(np.int16),
        "nuts2": lay.lau_nuts2[lau].astype(np.int16),
        "nuts3": lay.lau_parent[lau].astype(np.int16),
        "lau": lau.astype(np.int16),
        "sex": sex.astype(np.int8),
        "age": age.astype(np.int8),
        "lms": lms.astype(np.int8),
        "hst": hst.astype(np.int8),
        "fst": fst.astype(np.int8),
        "har": np.concatenate([har_h[hh.hh], np.full(n_ce, _HAR_CE)]).astype(np.int8),
        "cas": cas.astype(np.int8),
        "occ": occ.astype(np.int8),
        "ind": ind.astype(np.int8),
        "sie": sie.astype(np.int8),
        "edu": edu.astype(np.int8),
        "coc": np.concatenate([coc_h, coc_c]).astype(np.int8),
        "pob": pob.astype(np.int8),
        "yae": np.concatenate([yae_h, yae_c]).astype(np.int16),
        "roy": np.concatenate([roy_h, roy_c]).astype(np.int8),
        "loc": lay.lau_loc[lau].astype(np.int8),
        "sph": np.concatenate([hh.size[hh.hh], np.full(n_ce, codes.SPH_NOT_APPLICABLE)]).astype(np.int8),
        "tph": np.concatenate([hh.tph[hh.hh], np.full(n_ce, _TPH_NOT_APPLICABLE)]).astype(np.int8),
        "tsh": np.concatenate([tsh_h[hh.hh], np.full(n_ce, _TSH_NOT_APPLICABLE)]).astype(np.int8),
        "imputed": imputed.astype(np.int8),
        "rkey": rkey,
    }
    return cols, BlockStats(persons=n, private_households=nh, establishments=nc, persons_in_ce=n_ce)
