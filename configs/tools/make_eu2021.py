"""Generate configs/eu2021.yaml: the 18 transcribed EU 2021 hypercubes plus 101 labelled stand-ins.

Regulation (EU) 2017/712 Annex I has 119 hypercubes in 41 groups (persons 103, private households 3,
families 3, conventional dwellings 2, occupied conventional dwellings 7, living quarters 1; seed 001).
Only groups 1-5 could be transcribed (../shared/eurostat). Groups 6-41 are stand-ins: 4- to 8-way
crossings of the same breakdowns with that unit mix, sized from the classification files so that
the programme has realistic shape and size. Run from the repository root:

    uv run python configs/tools/make_eu2021.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from cubeguard.cubes.hierarchy import build_classification, select_breakdown
from cubeguard.cubes.spec import VariableSpec

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIBED = ROOT.parent / "shared" / "eurostat" / "hypercubes.yaml"
CLASSIFICATIONS = ROOT / "configs" / "classifications"
MAX_BOTTOM = 1_500_000

VARIABLES = {
    "GEO": "geo_national",
    "SEX": "sex",
    "AGE": "age",
    "LMS": "lms",
    "HST": "hst",
    "FST": "fst",
    "HAR": "har",
    "LOC": "loc",
    "CAS": "cas",
    "OCC": "occ",
    "IND": "ind",
    "SIE": "sie",
    "EDU": "edu",
    "COC": "coc",
    "POB": "pob",
    "YAE": "yae",
    "ROY": "roy",
    "TSH": "tsh",
    "TPH": "tph",
    "SPH": "sph",
    "HHK": "hh_kind",
    "CET": "ce_type",
}
# Stand-in groups 6-41: (unit, topics). Each persons group gives three cubes (see _person_cubes).
PERSON_GROUPS = [
    ["CAS.H", "EDU"],
    ["CAS.H", "LMS.L"],
    ["OCC", "SIE"],
    ["OCC", "EDU", "CAS.L"],
    ["IND.L", "SIE"],
    ["IND.L", "OCC"],
    ["SIE", "EDU", "LOC"],
    ["EDU", "COC.L"],
    ["EDU", "POB.L", "YAE.L"],
    ["COC.M", "POB.M"],
    ["COC.H", "ROY"],
    ["POB.H", "YAE.L"],
    ["YAE.H", "COC.L", "CAS.L"],
    ["ROY", "LOC"],
    ["ROY", "CAS.H", "EDU"],
    ["HST.H", "CAS.L"],
    ["HST.M", "FST.H", "LMS.L"],
    ["FST.H", "EDU"],
    ["LMS.H", "HST.M", "COC.L"],
    ["HAR", "LOC"],
    ["HAR", "CAS.L", "POB.L"],
    ["LOC", "CAS.H", "EDU"],
    ["LOC", "COC.L", "POB.L"],
    ["OCC", "IND.L", "EDU", "SIE"],
    ["CAS.H", "COC.L", "POB.L", "YAE.L"],
    ["HST.H", "FST.H", "LMS.L", "CAS.L"],
    ["EDU", "OCC", "COC.M"],
]
EIGHT_WAY_GROUPS = [  # two persons groups of explicit 8-way crossings (27 x 3 + 2 x 2 = 85 stand-ins)
    [
        ["GEO.L", "SEX", "AGE.L", "CAS.L", "COC.L", "POB.L", "HAR", "LMS.L"],
        ["GEO.L", "SEX", "AGE.L", "CAS.L", "EDU", "POB.L", "YAE.L", "ROY"],
    ],
    [
        ["GEO.L", "SEX", "AGE.L", "SIE", "EDU", "COC.L", "HST.M", "LMS.L"],
        ["GEO.N", "SEX", "AGE.L", "OCC", "IND.L", "EDU", "SIE", "COC.L"],
    ],
]
OTHER_GROUPS = [  # (group unit label, population, cubes)
    (
        "Private households",
        "households",
        [["GEO.M", "TSH", "SPH.H", "TPH.H"], ["GEO.L", "TPH.H", "SPH.H", "LOC", "TSH"]],
    ),
    ("Private households", "households", [["GEO.H", "SPH.L", "TSH", "AGE.L"]]),
    (
        "Families",
        "families",
        [["GEO.M", "TPH.H", "SPH.L", "SEX"], ["GEO.L", "TPH.H", "SPH.H", "LOC"], ["GEO.H", "TPH.L", "SEX", "AGE.L"]],
    ),
    ("Conventional dwellings", "dwellings", [["GEO.M", "TSH", "SPH.H", "LOC"], ["GEO.H", "TSH", "SPH.L", "LOC"]]),
    (
        "Occupied conventional dwellings",
        "dwellings",
        [
            ["GEO.M", "TSH", "SPH.H", "AGE.L"],
            ["GEO.L", "TSH", "TPH.H", "SPH.H"],
            ["GEO.L", "TSH", "LOC", "SPH.H", "TPH.L"],
            ["GEO.H", "TSH", "SPH.L", "TPH.L"],
        ],
    ),
    (
        "Occupied conventional dwellings",
        "dwellings",
        [
            ["GEO.M", "TPH.H", "LOC", "TSH"],
            ["GEO.L", "TSH", "TPH.H", "LOC", "SPH.L"],
            ["GEO.N", "TSH", "TPH.H", "SPH.H", "LOC"],
        ],
    ),
    ("Living quarters", "living_quarters", [["GEO.M", "HHK", "CET", "LOC"]]),
]


def _bottom_sizes() -> dict[str, int]:
    sizes = {}
    for name in set(VARIABLES.values()):
        spec = VariableSpec.model_validate(yaml.safe_load((CLASSIFICATIONS / f"{name}.yaml").read_text()))
        cls, problems = build_classification(name, spec)
        assert not problems, problems
        for bid, b in spec.breakdowns.items():
            sizes[bid] = select_breakdown(bid, cls, b.depth, b.codes).n_bottom
    return sizes


def _person_cubes(topics: list[str], sizes: dict[str, int]) -> list[list[str]]:
    """Three crossings per group: detailed geography x few topics, regions x all topics, national x age."""
    candidates = [
        ["GEO.L", "SEX", "AGE.M", *topics],
        ["GEO.M", "SEX", "AGE.L", *topics[:2]],
        ["GEO.N", "SEX", "AGE.H", *topics[:3]],
        ["GEO.L", "SEX", "AGE.L", *topics],
        ["GEO.H", "SEX", *topics[:1], "AGE.L"],
    ]
    out = []
    for dims in candidates:
        if 4 <= len(dims) <= 8 and np.prod([sizes[d] for d in dims]) <= MAX_BOTTOM and dims not in out:
            out.append(dims)
        if len(out) == 3:
            break
    return out


def build() -> dict:
    """The whole config as plain data."""
    sizes = _bottom_sizes()
    transcribed = yaml.safe_load(TRANSCRIBED.read_text())["hypercubes"]
    cubes = [
        {
            "id": h["id"],
            "group": h["group"],
            "label": f"EU 2021 hypercube {h['id']} (Regulation 2017/712 Annex I)",
            "breakdowns": h["breakdowns"],
        }
        for h in transcribed
    ]
    group = 6
    for topics in PERSON_GROUPS:
        for k, dims in enumerate(_person_cubes(topics, sizes), start=1):
            cubes.append(
                {
                    "id": f"{group}.{k}",
                    "group": group,
                    "stand_in": True,
                    "breakdowns": dims,
                    "label": f"Stand-in: {' x '.join(dims)} (total population)",
                }
            )
        group += 1
    for crossings in EIGHT_WAY_GROUPS:
        for k, dims in enumerate(crossings, start=1):
            assert np.prod([sizes[d] for d in dims]) <= MAX_BOTTOM, dims
            cubes.append(
                {
                    "id": f"{group}.{k}",
                    "group": group,
                    "stand_in": True,
                    "breakdowns": dims,
                    "label": f"Stand-in: {' x '.join(dims)} (total population)",
                }
            )
        group += 1
    for unit, population, crossings in OTHER_GROUPS:
        for k, dims in enumerate(crossings, start=1):
            cubes.append(
                {
                    "id": f"{group}.{k}",
                    "group": group,
                    "stand_in": True,
                    "population": population,
                    "breakdowns": dims,
                    "label": f"Stand-in: {' x '.join(dims)} ({unit.lower()})",
                }
            )
        group += 1
    return {"cubes": cubes, "sizes": sizes}


HEADER = """\
# EU 2021 census hypercube programme (Regulation (EU) 2017/712 Annex I) for a country of the size
# and shape of Poland (7 NUTS 1, 17 NUTS 2, 73 NUTS 3, ~2,500 LAU), on the synthetic census.
#
# GENERATED by configs/tools/make_eu2021.py; edit that script, not this file.
# - Hypercubes 1.1-5.5 are the 18 transcribed from the regulation (../shared/eurostat).
# - Groups {first_stand_in}-41 are STAND-INS (stand_in: true): the regulation's groups 6-41 could not be read, so
#   these are 4- to 8-way crossings of the same breakdowns with the programme's unit mix (persons 103,
#   private households 3, families 3, conventional dwellings 2, occupied conventional dwellings 7,
#   living quarters 1), so the programme has 119 hypercubes of realistic shape and size.
# - Category lists the transcription lacks were completed from the census classifications; each
#   classification file says so in its `note`. Families, dwellings and living quarters are counted
#   through household reference persons (the synthetic census has no family or dwelling records).
"""


def main() -> None:
    """Write configs/eu2021.yaml and print its size."""
    built = build()
    cubes, sizes = built["cubes"], built["sizes"]
    config = {
        "schema_version": 1,
        "name": "eu2021",
        "description": "EU 2021 census programme: 18 transcribed hypercubes and 101 stand-ins (119 in all).",
        "input": {
            "microdata": "../work/eu2021/persons.parquet",
            "synthetic": {"persons": 1_000_000, "seed": 2021, "geography": "national"},
            "household_columns": ["lau", "hh_kind", "tsh", "tph", "sph"],
        },
        "variables": {k: {"file": f"classifications/{v}.yaml"} for k, v in VARIABLES.items()},
        "populations": {
            "total": {"label": "Total population (persons)"},
            "households": {"label": "Private households", "unit": "households", "where": {"hh_kind": ["P"]}},
            "families": {
                "label": "Families (stand-in: private households whose type has a family nucleus)",
                "unit": "households",
                "where": {"hh_kind": ["P"]},
            },
            "dwellings": {
                "label": "Occupied conventional dwellings (stand-in: one per private household)",
                "unit": "households",
                "where": {"hh_kind": ["P"]},
            },
            "living_quarters": {
                "label": "Living quarters (stand-in: private households and establishments)",
                "unit": "households",
            },
        },
        "hypercubes": cubes,
        "steps": [{"method": "cell_key", "D": {"env": "CUBEGUARD_CKM_D"}, "V": {"env": "CUBEGUARD_CKM_V"}, "js": 2}],
        # js = 2 promises no published 1s and 2s; no small cell recovered with certainty by the attacks
        "gates": {"forbidden_values": [1, 2], "max_recovered_by_attack": 0},
        "output": {"folder": "../work/eu2021"},
        # SDMX names for Census Hub-style SDMX-CSV (output.exports: [sdmx-csv]); the structure file is
        # written by `cubeguard sdmx configs/eu2021.yaml --out configs/sdmx/eu2021-structure.xml`.
        "sdmx": {
            "agency": "CUBEGUARD",
            "time_period": "2021",
            "structure": "sdmx/eu2021-structure.xml",
            "codes": {"GEO": {"ZZ": "ZZ"}, "SEX": {"1": "M", "2": "F"}},
        },
    }
    bottom = [int(np.prod([sizes[d] for d in c["breakdowns"]])) for c in cubes]
    first = min(c["group"] for c in cubes if c.get("stand_in"))
    text = HEADER.format(first_stand_in=first) + yaml.safe_dump(config, sort_keys=False, width=120, allow_unicode=True)
    (ROOT / "configs" / "eu2021.yaml").write_text(text)
    units = {}
    for c in cubes:
        units[c.get("population", "total")] = units.get(c.get("population", "total"), 0) + 1
    dims = [len(c["breakdowns"]) for c in cubes]
    print(
        f"{len(cubes)} hypercubes, units {units}, dims {min(dims)}-{max(dims)}, "
        f"bottom cells {sum(bottom):,} (max {max(bottom):,})"
    )


if __name__ == "__main__":
    main()
