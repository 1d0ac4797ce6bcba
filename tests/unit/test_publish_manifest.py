"""The public manifest: content, and the whitelist that keeps every secret parameter out of it."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from importlib.metadata import version
from pathlib import Path
from typing import get_args

import pytest
from pydantic import BaseModel

from cubeguard.config import Release, load_release
from cubeguard.errors import InternalError
from cubeguard.methods.identity import IdentityStep
from cubeguard.methods.registry import BY_NAME
from cubeguard.methods.safe import Bounds
from cubeguard.publish.manifest import SCHEMA, build_manifest, public_step
from cubeguard.publish.public_store import PublishedCube
from tests.conftest import TINY_CONFIG

# Distinctive secret values: none can occur by chance in the controlled manifest below.
SECRETS = {"D": 13, "V": 3.1459, "pstay": 0.8642, "swap_rate": 0.0731, "k_anonymity": 83, "seed": 918273645}
KEY_SEED = 5550123
CONFIG = TINY_CONFIG.replace(
    "  household_columns: [region]\n",
    f"  household_columns: [region]\n  record_key: {{generate_seed: {KEY_SEED}}}\n",
).replace(
    "steps:\n  - {method: cell_key, D: 5, V: 3, js: 2}\n",
    "pre_tabular:\n"
    "  - {method: targeted_swap, name: swap-geo, hierarchy: [region], similar: [[hsize]], risk_variables: [age],\n"
    f"     swap_rate: {SECRETS['swap_rate']}, k_anonymity: {SECRETS['k_anonymity']}, seed: {SECRETS['seed']}}}\n"
    "steps:\n"
    f"  - {{method: cell_key, D: {SECRETS['D']}, V: {SECRETS['V']}, pstay: {SECRETS['pstay']}, js: 2, optim: 4}}\n"
    "  - {method: identity, cubes: [hh]}\n",
)
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
CUBES = [PublishedCube("c1", ("GEO.2", "SEX", "AGE.M"), 126, 1020), PublishedCube("hh", ("GEO.2",), 6, 404)]
FILES = {"store.zarr/zarr.json": "b" * 64, "exports/c1.csv": "a" * 64}


@pytest.fixture
def release(tmp_path: Path) -> Release:
    path = tmp_path / "tiny.yaml"
    path.write_text(CONFIG)
    return load_release(path)


def _manifest(release: Release) -> dict[str, object]:
    return build_manifest("tiny-20260102T030405Z", release, CUBES, FILES, WHEN)


def _leaves(node: object) -> list[object]:
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in [k, *_leaves(v)]]
    if isinstance(node, list):
        return [leaf for v in node for leaf in _leaves(v)]
    return [node]


def test_the_manifest_lists_release_cubes_and_files(release: Release) -> None:
    manifest = _manifest(release)
    assert list(manifest) == [
        "schema",
        "release_id",
        "release",
        "created_at",
        "cubeguard_version",
        "methods",
        "cubes",
        "files",
    ]
    assert manifest["schema"] == SCHEMA == "cubeguard-manifest/1"
    assert manifest["release_id"] == "tiny-20260102T030405Z"
    assert manifest["release"] == "tiny"
    assert manifest["created_at"] == "2026-01-02T03:04:05Z"
    assert manifest["cubeguard_version"] == version("cubeguard")
    assert manifest["cubes"] == [
        {"id": "c1", "breakdowns": ["GEO.2", "SEX", "AGE.M"], "cells": 126, "total": 1020},
        {"id": "hh", "breakdowns": ["GEO.2"], "cells": 6, "total": 404},
    ]
    assert list(manifest["files"]) == ["exports/c1.csv", "store.zarr/zarr.json"]  # type: ignore[call-overload]
    assert manifest["files"] == FILES


def test_created_at_is_given_in_utc(release: Release) -> None:
    local = WHEN.astimezone(timezone(timedelta(hours=-5)))
    manifest = build_manifest("r1", release, CUBES, FILES, local)
    assert manifest["created_at"] == "2026-01-02T03:04:05Z"
    with pytest.raises(InternalError, match="timezone-aware"):
        build_manifest("r1", release, CUBES, FILES, datetime(2026, 1, 2))


def test_methods_show_names_scope_and_public_parameters_only(release: Release) -> None:
    assert _manifest(release)["methods"] == {
        "pre_tabular": [
            {"method": "targeted_swap", "name": "swap-geo", "cubes": "all", "parameters": {"hierarchy": ["region"]}}
        ],
        "steps": [
            {"method": "cell_key", "name": "cell_key", "cubes": "all", "parameters": {"js": 2, "ptable_file": False}},
            {"method": "identity", "name": "identity", "cubes": ["hh"], "parameters": {}},
        ],
    }


def test_no_secret_value_appears_in_the_manifest(release: Release) -> None:
    manifest = _manifest(release)
    text = json.dumps(manifest, indent=2)
    for key, value in [*SECRETS.items(), ("generate_seed", KEY_SEED)]:
        assert str(value) not in text, f"{key} = {value} is in the manifest"
    numbers = [leaf for leaf in _leaves(manifest) if isinstance(leaf, (int, float)) and not isinstance(leaf, bool)]
    assert numbers == [2, 126, 1020, 6, 404]  # js, then cells and totals: nothing else is a number
    assert "config_hash" not in text and release.config_hash not in text


def test_the_manifest_is_free_of_secrets_even_given_by_reference(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(
        TINY_CONFIG.replace("D: 5, V: 3", "D: {env: CG_SECRET_D}, V: {prefect_secret: ckm-v}, pstay: {env: CG_PSTAY}")
    )
    text = json.dumps(build_manifest("r1", load_release(path), CUBES, FILES, WHEN))
    for needle in ("CG_SECRET_D", "ckm-v", "CG_PSTAY", "env", "prefect_secret"):
        assert needle not in text


def test_a_ptable_file_is_mentioned_but_neither_its_path_nor_content(tmp_path: Path) -> None:
    from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
    from cubeguard.ckm.ptable_io import write_ptable

    write_ptable(create_cnt_ptable(PTableParams(D=2, V=1.0)), tmp_path / "secret-ptable-8.csv")
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_CONFIG.replace("D: 5, V: 3, js: 2", "ptable_file: secret-ptable-8.csv"))
    manifest = build_manifest("r1", load_release(path), CUBES, FILES, WHEN)
    steps = manifest["methods"]["steps"]  # type: ignore[index]
    assert steps[0]["parameters"] == {"js": 0, "ptable_file": True}
    assert "secret-ptable" not in json.dumps(manifest)


# Every field of every step model, sorted by what the manifest does with it. A step method or a
# field added to a step model fails these tests until someone decides here whether it may be
# published (and adds it to the whitelist in cubeguard/publish/manifest.py only if it is not secret).
SHOWN = {"method", "name", "cubes"}
SWAP_WITHHELD = {"household_id", "carry_along", "swap_rate", "seed", "where", "report_cubes"}
FIELDS: dict[str, tuple[set[str], set[str]]] = {
    "identity": (set(), set()),
    "cell_key": ({"js", "ptable_file", "magnitudes"}, {"D", "V", "pstay", "optim", "mono", "allow_stacking"}),
    "conventional_rounding": ({"base"}, set()),
    "controlled_rounding": (
        {"base", "steps", "stop", "time_limit_s", "partition_above_cells", "block_cells", "fallback", "hold"},
        set(),
    ),
    "random_rounding": ({"base", "margins"}, {"seed"}),
    "semi_controlled_rounding": ({"base", "control", "control_depth"}, {"seed"}),
    "small_cell_adjustment": ({"base"}, {"seed"}),
    "barnardisation": (set(), {"p", "seed"}),
    "stochastic_perturbation": (
        {"cap", "perturb_zeros", "control", "control_depth", "fit", "hold", "rounding"},
        {"diagonal", "band", "seed", "tolerance", "cycles"},
    ),
    "targeted_swap": (
        {"hierarchy"},
        SWAP_WITHHELD | {"similar", "risk_variables", "caps", "k_anonymity", "risk_columns", "risk_threshold"},
    ),
    "random_swap": ({"unit", "swap_columns"}, SWAP_WITHHELD | {"strata"}),
    "ons_household_swap": (
        {"hierarchy"},
        SWAP_WITHHELD
        | {"household_size", "matching", "risk_variables", "risk_thresholds", "high_risk_weight"}
        | {"max_area_share", "delivery_group", "imputed", "rate_by_imputation"},
    ),
    "safe": (
        {"tables", "start", "target", "correction_steps", "window", "time_limit", "max_tightenings"},
        {"seed", "report_cubes"},
    ),
}
STEP_MODELS = [m.model for m in BY_NAME.values()]


def _method(model: type[BaseModel]) -> str:
    return str(get_args(model.model_fields["method"].annotation)[0])


@pytest.mark.parametrize("model", STEP_MODELS, ids=_method)
def test_every_step_field_is_classified_public_or_withheld(model: type[BaseModel]) -> None:
    fields = set(model.model_fields)
    if _method(model) == "ons_communal_swap":  # dozens of matching and scoring options: all withheld
        public, withheld = {"hierarchy"}, fields - SHOWN - {"hierarchy"}
    else:
        assert _method(model) in FIELDS, f"new step method {_method(model)!r}: classify its fields here"
        public, withheld = FIELDS[_method(model)]
    assert fields == (SHOWN & fields) | public | withheld, (
        f"{model.__name__} changed: classify each new field in FIELDS and in the manifest whitelist"
    )
    assert not public & withheld
    assert _method(model) in BY_NAME


@pytest.mark.parametrize("model", STEP_MODELS, ids=_method)
def test_the_whitelist_shows_the_public_fields_and_nothing_else(model: type[BaseModel]) -> None:
    public = FIELDS.get(_method(model), ({"hierarchy"}, set()))[0]
    bounds = Bounds(one=3, other=5)
    values: dict[str, object] = {
        "hierarchy": ["region"],
        "swap_columns": ["region"],
        "unit": "records",
        "start": bounds,
        "target": bounds,
        "magnitudes": {"age": None},
    }
    step = model.model_construct(**{f: values.get(f, 0) for f in model.model_fields if f in public})
    shown = BY_NAME[_method(model)].public(step)
    assert set(shown) == public


def test_a_step_method_without_a_whitelist_entry_is_a_bug_not_a_leak() -> None:
    step = IdentityStep.model_construct(method="mystery", name="m", cubes=None)
    with pytest.raises(InternalError, match=re.escape("step method 'mystery' is not registered")):
        public_step(step)
