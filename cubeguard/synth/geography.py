"""Fictional geography layouts (NUTS 1 > NUTS 2 > NUTS 3 > LAU) for the synthetic census.

Two layouts:

* ``"national"``: a country the size of Poland (EU 2021 census programme, Wilak et al. 2024): 7 NUTS 1,
  17 NUTS 2, 73 NUTS 3 and 2,477 LAU (Poland's number of gminas), nominal population 38 million.
  LAU sizes are skewed as in real countries: one capital of 1.86 million, a Zipf series of 72
  regional centres (800k down to ~20k), and ~2,400 small towns and rural municipalities
  (log-normal, median ~9,000).
* ``"two_regions"``: the Eurostat test hypercube (Shlomo 2009, section 2): one NUTS 1 and
  two NUTS 2 regions with populations 845,539 and 645,461, five NUTS 3 and 120 LAU.

A layout is a fixed object, independent of the generator's seed and of the number of persons: the
classification files ``configs/classifications/geo_<layout>.yaml`` are written from it by
:func:`classification` and must list the same codes. Each LAU has a *nominal population* (its
population when the whole country is generated); the locality size class (LOC) and the sampling
weight of a LAU come from it, so a 1M-person sample of the national layout is a scaled-down
country with the same LOC classes.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from functools import cache
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

Geography = Literal["national", "two_regions"]
GEOGRAPHIES: Final[tuple[Geography, ...]] = ("national", "two_regions")

# Lower bounds of the LOC classes "1" .. "13" (2017/543 "Topic: Locality"; 12 and 13 completed).
_LOC_LOWER: Final = np.array(
    [1_000_000, 500_000, 200_000, 100_000, 50_000, 20_000, 10_000, 5_000, 2_000, 1_000, 500, 200, 0]
)

# Fixed seed of the layouts (not the generator's seed): the layout must not change with it.
_LAYOUT_SEED: Final = 7_632_008


@dataclass(frozen=True, eq=False)
class Layout:
    """A geography layout: codes, parents and nominal LAU populations.

    Attributes:
        name: layout name (``"national"`` or ``"two_regions"``).
        country: NUTS 0 code, the root of the geography classification.
        nuts1: NUTS 1 codes.
        nuts2: NUTS 2 codes; ``nuts2_parent[i]`` indexes ``nuts1``.
        nuts3: NUTS 3 codes; ``nuts3_parent[i]`` indexes ``nuts2``.
        lau: LAU codes; ``lau_parent[i]`` indexes ``nuts3``.
        lau_pop: nominal population of each LAU.
    """

    name: str
    country: str
    nuts1: tuple[str, ...]
    nuts2: tuple[str, ...]
    nuts2_parent: npt.NDArray[np.int64]
    nuts3: tuple[str, ...]
    nuts3_parent: npt.NDArray[np.int64]
    lau: tuple[str, ...]
    lau_parent: npt.NDArray[np.int64]
    lau_pop: npt.NDArray[np.int64]

    @property
    def lau_loc(self) -> npt.NDArray[np.int8]:
        """Index into :data:`cubeguard.synth.codes.LOC` of each LAU (size class of its population)."""
        below: npt.NDArray[np.bool_] = self.lau_pop[:, None] < _LOC_LOWER[None, :]
        loc: npt.NDArray[np.int8] = below.sum(axis=1).astype(np.int8)
        return loc

    @property
    def lau_urban(self) -> npt.NDArray[np.int8]:
        """Urbanity of each LAU: 2 city (>= 100,000), 1 town (>= 20,000), 0 rural."""
        return ((self.lau_pop >= 20_000).astype(np.int8) + (self.lau_pop >= 100_000)).astype(np.int8)

    @property
    def lau_nuts2(self) -> npt.NDArray[np.int64]:
        """NUTS 2 index of each LAU."""
        return self.nuts3_parent[self.lau_parent]

    @property
    def lau_nuts1(self) -> npt.NDArray[np.int64]:
        """NUTS 1 index of each LAU."""
        return self.nuts2_parent[self.lau_nuts2]


def _children(parent_codes: tuple[str, ...], counts: list[int], width: int = 1) -> tuple[str, ...]:
    return tuple(f"{p}{i:0{width}d}" for p, n in zip(parent_codes, counts, strict=True) for i in range(1, n + 1))


def _repeat(counts: list[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.repeat(np.arange(len(counts), dtype=np.int64), counts)


def _largest_remainder(weights: npt.NDArray[np.float64], total: int) -> npt.NDArray[np.int64]:
    """Integers proportional to ``weights`` that sum to ``total`` (Hamilton's method)."""
    exact = weights / weights.sum() * total
    out: npt.NDArray[np.int64] = np.floor(exact).astype(np.int64)
    short = total - int(out.sum())
    order = np.argsort(-(exact - out), kind="stable")
    out[order[:short]] += 1
    return out


def _national() -> Layout:
    rng = np.random.Generator(np.random.PCG64(_LAYOUT_SEED))
    c = "ZZ"
    nuts1 = tuple(f"{c}{i}" for i in range(1, 8))
    n2_counts = [3, 3, 2, 3, 2, 2, 2]
    nuts2 = _children(nuts1, n2_counts)
    n3_counts = [2, 5, 4, 4, 5, 4, 5, 4, 4, 5, 4, 4, 5, 4, 4, 5, 5]
    nuts3 = _children(nuts2, n3_counts)
    n_lau, n3 = 2_477, len(nuts3)
    # The capital city is a NUTS 3 region of one LAU (ZZ111); the other 72 NUTS 3 get at least 10
    # LAU each and share the rest in proportion to an integer size factor 1-4 (integer draws only,
    # so the codes are the same on every platform).
    factor = rng.integers(1, 5, size=n3 - 1)
    slots = rng.integers(0, int(factor.sum()), size=n_lau - 1 - 10 * (n3 - 1))
    owner = np.searchsorted(np.cumsum(factor), slots, side="right")
    lau_counts = np.concatenate([[1], 10 + np.bincount(owner, minlength=n3 - 1)])
    lau = _children(nuts3, [int(k) for k in lau_counts], width=3)
    lau_parent = _repeat(lau_counts)
    # Nominal populations: capital, then per NUTS 3 a regional centre (first LAU; Zipf sizes by a
    # random rank), then small towns and rural municipalities (log-normal, a tenth of them towns).
    pop = np.exp(rng.normal(np.log(9_000.0), 0.55, size=n_lau))
    town = rng.random(n_lau) < 0.10
    pop[town] *= rng.uniform(2.0, 5.0, size=int(town.sum()))
    first = np.concatenate([[0], np.cumsum(lau_counts)[:-1]])
    rank = rng.permutation(n3 - 1) + 1
    pop[first[1:]] = 800_000.0 * rank.astype(np.float64) ** -0.95
    pop[0] = 1_860_000.0
    rest = np.ones(n_lau, dtype=bool)
    rest[first] = False
    pop[rest] *= (38_000_000.0 - pop[first].sum()) / pop[rest].sum()
    return Layout(
        name="national", country=c,
        nuts1=nuts1, nuts2=nuts2, nuts2_parent=_repeat(n2_counts),
        nuts3=nuts3, nuts3_parent=_repeat(n3_counts),
        lau=lau, lau_parent=lau_parent, lau_pop=np.rint(pop).astype(np.int64),
    )  # fmt: skip


def _two_regions() -> Layout:
    rng = np.random.Generator(np.random.PCG64(_LAYOUT_SEED + 1))
    c = "ZY"
    nuts1 = (f"{c}1",)
    nuts2 = (f"{c}11", f"{c}12")
    n3_counts = [3, 2]
    nuts3 = _children(nuts2, n3_counts)
    lau_counts = [18, 30, 22, 26, 24]
    lau = _children(nuts3, lau_counts, width=3)
    lau_parent = _repeat(lau_counts)
    w = np.exp(rng.normal(np.log(6_000.0), 0.6, size=len(lau)))
    first = np.concatenate([[0], np.cumsum(lau_counts)[:-1]])
    w[first] = [320_000.0, 60_000.0, 45_000.0, 150_000.0, 40_000.0]
    nuts2_of_lau = _repeat(n3_counts)[lau_parent]
    pop = np.zeros(len(lau), dtype=np.int64)
    for r, total in enumerate((845_539, 645_461)):  # Shlomo (2009), section 2
        sel = nuts2_of_lau == r
        pop[sel] = _largest_remainder(w[sel], total)
    return Layout(
        name="two_regions", country=c,
        nuts1=nuts1, nuts2=nuts2, nuts2_parent=np.zeros(2, dtype=np.int64),
        nuts3=nuts3, nuts3_parent=_repeat(n3_counts),
        lau=lau, lau_parent=lau_parent, lau_pop=pop,
    )  # fmt: skip


@cache
def layout(name: Geography) -> Layout:
    """The named geography layout (built once per process)."""
    if name == "national":
        return _national()
    if name == "two_regions":
        return _two_regions()
    raise ValueError(f"unknown geography {name!r}; expected one of {', '.join(GEOGRAPHIES)}")


def classification(lay: Layout) -> dict[str, Any]:
    """The classification document (docs/classification-format.md) of a layout's LAU column."""
    total = "Total (in the territory of the Member State)"
    codes: list[dict[str, Any]] = [{"code": lay.country, "label": total}]
    n2_kids = [[j for j, p in enumerate(lay.nuts2_parent) if p == i] for i in range(len(lay.nuts1))]
    n3_kids = [[j for j, p in enumerate(lay.nuts3_parent) if p == i] for i in range(len(lay.nuts2))]
    lau_kids = [[j for j, p in enumerate(lay.lau_parent) if p == i] for i in range(len(lay.nuts3))]
    for i1, c1 in enumerate(lay.nuts1):
        codes.append({"code": c1, "label": f"NUTS 1 region {c1}", "parent": lay.country})
        for i2 in n2_kids[i1]:
            c2 = lay.nuts2[i2]
            codes.append({"code": c2, "label": f"NUTS 2 region {c2}", "parent": c1})
            for i3 in n3_kids[i2]:
                c3 = lay.nuts3[i3]
                codes.append({"code": c3, "label": f"NUTS 3 region {c3}", "parent": c2})
                for k in lau_kids[i3]:
                    label = f"LAU {lay.lau[k]} (nominal population {int(lay.lau_pop[k])})"
                    codes.append({"code": lay.lau[k], "label": label, "parent": c3})
    n_lau, n3, n2, n1 = len(lay.lau), len(lay.nuts3), len(lay.nuts2), len(lay.nuts1)
    note = (
        f"Fictional geography layout '{lay.name}' of cubeguard.synth (written by "
        "cubeguard.synth.geography.classification; do not edit by hand, regenerate). "
        f"{n1} NUTS 1, {n2} NUTS 2, {n3} NUTS 3, {n_lau} LAU; nominal population "
        f"{int(lay.lau_pop.sum())}. Levels nest as GEO.N < GEO.L < GEO.M < GEO.H in Implementing "
        "Regulation (EU) 2017/543 (place of usual residence): GEO.N national total, GEO.L + NUTS 1 "
        "and NUTS 2, GEO.M + NUTS 3, GEO.H + LAU. The total is coded with the NUTS 0 code instead "
        "of the regulation's '0'. Raw values are LAU codes (column lau); the columns nuts1, nuts2, "
        "nuts3 of persons.parquet repeat the ancestors. GEO.L's bottom codes are the NUTS 2 "
        "regions."
    )
    if lay.name == "two_regions":
        note += (
            " Layout of the Eurostat test hypercube (Shlomo 2009, section 2): NUTS 2 populations 845,539 and 645,461."
        )
    return {
        "column": "lau",
        "dtype": "code",
        "label": "Place of usual residence",
        "note": note,
        "codes": codes,
        "breakdowns": {
            "GEO.N": {"depth": 0},
            "GEO.L": {"depth": 2},
            "GEO.M": {"depth": 3},
            "GEO.H": {},
        },
    }


def to_yaml(doc: dict[str, Any]) -> str:
    """Render a classification document as YAML with one flow mapping per code.

    JSON string literals are valid YAML double-quoted scalars, so values are written with
    :func:`json.dumps`; the note is a folded block scalar. ``yaml.safe_load`` of the result gives
    ``doc`` back.
    """

    def flow(d: dict[str, Any]) -> str:
        return "{" + ", ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in d.items()) + "}"

    lines = [f"column: {doc['column']}", f"dtype: {doc['dtype']}", f"label: {json.dumps(doc['label'])}"]
    if "note" in doc:
        lines.append("note: >-")
        lines += ["  " + line for line in textwrap.wrap(" ".join(doc["note"].split()), 96)]
    lines.append("codes:")
    lines += [f"  - {flow(code)}" for code in doc["codes"]]
    lines.append("breakdowns:")
    lines += [f"  {k}: {flow(v)}" for k, v in doc["breakdowns"].items()]
    return "\n".join(lines) + "\n"
