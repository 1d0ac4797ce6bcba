"""The shipped configs load, and the generated reference and JSON Schema are current and accept them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import yaml

from cubeguard.config import load_release
from cubeguard.config.reference import json_schema, markdown

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(p for p in (ROOT / "configs").glob("*.yaml") if not p.name.startswith("."))  # not a scratch config
SHARED = ROOT.parent / "shared"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_config_loads_and_matches_the_json_schema(path: Path) -> None:
    if "censusprotection" in path.name and not SHARED.exists():
        pytest.skip("shared course data not present")
    release = load_release(path)
    assert release.config.hypercubes
    assert release.unprotected == ()  # every shipped config protects and gates every cube
    jsonschema.validate(yaml.safe_load(path.read_text()), json_schema())


def test_eu_programme_has_119_cubes_in_41_groups_with_the_unit_mix() -> None:
    cfg = load_release(ROOT / "configs" / "eu2021.yaml").config
    assert len(cfg.hypercubes) == 119 and len({c.group for c in cfg.hypercubes}) == 41
    assert sum(not c.stand_in for c in cfg.hypercubes) == 18
    assert all(4 <= len(c.breakdowns) <= 8 for c in cfg.hypercubes if c.stand_in)
    units = {}
    for c in cfg.hypercubes:
        units[c.population] = units.get(c.population, 0) + 1
    assert units == {"total": 103, "households": 3, "families": 3, "dwellings": 9, "living_quarters": 1}


def test_group_one_cell_counts_match_the_polish_slide() -> None:
    release = load_release(ROOT / "configs" / "eu2021.yaml")
    sizes = {
        c.id: int(np.prod([len(release.breakdowns[b].codes) for b in c.breakdowns]))
        for c in release.config.hypercubes
        if c.group == 1
    }
    assert sizes["1.1"] == 3072 and sizes["1.2"] == 3840 and sizes["1.3"] == 4608  # seed 001


def test_generated_reference_is_current() -> None:
    assert json.loads((ROOT / "docs" / "release-config.schema.json").read_text()) == json_schema()
    assert (ROOT / "docs" / "config-reference.md").read_text() == markdown() + "\n"
