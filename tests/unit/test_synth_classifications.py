"""The classification files in configs/classifications follow docs/classification-format.md.

Checked here with a small independent reading of the format (so the files are checked even without
the loader), and with cubeguard.config when it is present.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from cubeguard.synth import codes
from cubeguard.synth.geography import classification, layout, to_yaml

CLS = Path(__file__).resolve().parents[2] / "configs" / "classifications"
FILES = sorted(CLS.glob("*.yaml"))
KEYS = {"column", "dtype", "label", "note", "codes", "breakdowns"}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _read(name: str) -> str:
    return (CLS / f"{name}.yaml").read_text()


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.load(_read(name), Loader=_LOADER)
    return doc


def children(doc: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {c["code"]: [] for c in doc["codes"]}
    for c in doc["codes"]:
        if c.get("parent") is not None:
            out[c["parent"]].append(c["code"])
    return out


def raw_values(doc: dict[str, Any], code: dict[str, Any]) -> set[Any]:
    if "values" in code:
        return set(code["values"])
    if "range" in code:
        lo, hi = code["range"]
        return set(range(lo, hi + 1))
    return {code["code"]}


def selection(doc: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """Codes of a breakdown, in file order (parents come before children)."""
    parent = {c["code"]: c.get("parent") for c in doc["codes"]}

    def depth(code: str) -> int:
        return 0 if parent[code] is None else 1 + depth(parent[code])

    if "codes" in spec:
        return [c["code"] for c in doc["codes"] if c["code"] in set(spec["codes"])]
    if "depth" in spec:
        return [c["code"] for c in doc["codes"] if depth(c["code"]) <= spec["depth"]]
    return [c["code"] for c in doc["codes"]]


def bottoms(doc: dict[str, Any], bid: str) -> list[str]:
    sel = selection(doc, doc["breakdowns"][bid])
    kids = children(doc)
    return [c for c in sel if not any(k in sel for k in kids[c])]


def test_there_is_a_file_for_every_variable_the_generator_writes() -> None:
    columns = {load(f.stem)["column"] for f in FILES}
    assert {f.stem for f in FILES} >= {"geo_national", "geo_two_regions", "edu_isced97"}
    assert columns == set(codes.COLUMNS) - {"pid", "hid", "is_ref", "nuts1", "nuts2", "nuts3", "rkey"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_file_follows_the_format(path: Path) -> None:
    doc = load(path.stem)
    assert set(doc) <= KEYS and KEYS - {"note"} <= set(doc)
    assert doc["dtype"] in ("code", "integer")
    assert doc["note"].strip(), "every file says where its codes come from"
    seen: set[str] = set()
    roots = []
    for c in doc["codes"]:
        assert set(c) <= {"code", "label", "parent", "values", "range"}
        assert c["code"] not in seen, f"duplicate code {c['code']}"
        if c.get("parent") is None:
            roots.append(c["code"])
        else:
            assert c["parent"] in seen, f"{c['code']}: parent {c['parent']} must come first"
        seen.add(c["code"])
    assert len(roots) == 1
    kids = children(doc)
    owner: dict[Any, str] = {}
    for c in doc["codes"]:
        if kids[c["code"]]:
            assert "values" not in c and "range" not in c, f"{c['code']} is not a leaf"
            continue
        for v in raw_values(doc, c):
            assert isinstance(v, str if doc["dtype"] == "code" else int)
            assert v not in owner, f"raw value {v!r} maps to {owner[v]} and {c['code']}"
            owner[v] = c["code"]
    leaves = [c for c, k in kids.items() if not k]
    parent = {c["code"]: c.get("parent") for c in doc["codes"]}
    for bid, spec in doc["breakdowns"].items():
        assert set(spec) <= {"depth", "codes"}
        sel = selection(doc, spec)
        assert roots[0] in sel
        for c in sel:
            assert parent[c] is None or parent[c] in sel, f"{bid}: {c} without its parent"
        bottom = set(bottoms(doc, bid))
        for leaf in leaves:
            up, hits = leaf, 0
            while up is not None:
                hits += up in bottom
                up = parent[up]
            assert hits == 1, f"{bid}: leaf {leaf} under {hits} bottom codes"


@pytest.mark.parametrize("column", sorted(codes.CODE_COLUMNS))
def test_generator_codes_are_exactly_the_leaves(column: str) -> None:
    docs = [load(f.stem) for f in FILES if not f.stem.startswith("geo_") and load(f.stem)["column"] == column]
    assert docs
    for doc in docs:
        kids = children(doc)
        leaf_values = set().union(*(raw_values(doc, c) for c in doc["codes"] if not kids[c["code"]]))
        assert leaf_values == set(codes.CODE_COLUMNS[column])


def test_integer_variables_cover_the_generated_values() -> None:
    def leaf_values(name: str) -> set[int]:
        doc = load(name)
        kids = children(doc)
        return set().union(*(raw_values(doc, c) for c in doc["codes"] if not kids[c["code"]]))

    assert leaf_values("age") == set(range(121))
    assert {codes.YAE_NEVER_ABROAD, codes.YAE_NOT_STATED, *range(1900, codes.CENSUS_YEAR + 1)} <= leaf_values("yae")
    assert {codes.SPH_NOT_APPLICABLE, *range(1, 128)} == leaf_values("sph")
    assert leaf_values("imputed") == {0, 1}


def test_eu_breakdown_sizes() -> None:
    """The Polish group-1 hypercubes have 3072, 3840, 4608 cells (seed 001; eurostat README)."""
    n = {bid: len(selection(doc, spec)) for doc in map(load, ("age", "lms", "hst", "fst", "sex"))
         for bid, spec in doc["breakdowns"].items()}  # fmt: skip
    assert n["AGE.H"] == 128 and n["AGE.M"] == 28 and n["AGE.L"] == 7
    assert 1 * n["SEX"] * n["AGE.H"] * n["LMS.H"] == 3072
    assert 1 * n["SEX"] * n["AGE.H"] * n["HST.H"] == 3840
    assert 1 * n["SEX"] * n["AGE.H"] * n["FST.H"] == 4608
    national = load("geo_national")
    assert len(selection(national, {"depth": 2})) == 25  # GEO.L for Poland's 7 + 17 regions
    assert len(selection(national, {"depth": 3})) == 98  # GEO.M


def test_seed_000_cube_has_245700_bottom_cells() -> None:
    """NUTS2 x sex x 21 ages x 5 activity x 13 occupation x 9 education x 5 citizenship (seed 000)."""
    sizes = [
        len(bottoms(load("geo_two_regions"), "GEO.L")),
        len(bottoms(load("sex"), "SEX")),
        len(bottoms(load("age"), "AGE.M")),
        len(bottoms(load("cas"), "CAS.5")),
        len(bottoms(load("occ"), "OCC.13")),
        len(bottoms(load("edu_isced97"), "EDU.9")),
        len(bottoms(load("coc"), "COC.5")),
    ]
    assert sizes == [2, 2, 21, 5, 13, 9, 5]


@pytest.mark.parametrize("geography", ["national", "two_regions"])
def test_geography_file_is_the_layout(geography: str) -> None:
    """The committed file is what geography.classification writes (regenerate it if this fails)."""
    text = _read(f"geo_{geography}")
    doc = classification(layout(geography))  # type: ignore[arg-type]
    assert text == to_yaml(doc)
    assert load(f"geo_{geography}") == doc


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_file_loads_with_cubeguard_config(path: Path) -> None:
    """Each file is a valid variable for cubeguard's own config models and hierarchy builder."""
    models = pytest.importorskip("cubeguard.config.models")
    hierarchy = pytest.importorskip("cubeguard.cubes.hierarchy")
    doc = load(path.stem)
    spec = models.VariableSpec.model_validate(doc)
    cls, problems = hierarchy.build_classification(path.stem, spec)
    assert problems == []
    for bid, b in spec.breakdowns.items():
        breakdown = hierarchy.select_breakdown(bid, cls, b.depth, b.codes)
        assert breakdown.n_bottom == len(bottoms(doc, bid))
