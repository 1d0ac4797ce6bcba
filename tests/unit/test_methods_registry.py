"""The registry is the single list of methods: everything else that names a method is built from it."""

from __future__ import annotations

import pkgutil
import typing

import pytest

import cubeguard.methods
from cubeguard.config.load import load_release
from cubeguard.config.models import ReleaseConfig
from cubeguard.config.reference import json_schema, markdown
from cubeguard.methods.base import CubeMethod, MicrodataMethod
from cubeguard.methods.models import secret_fields
from cubeguard.methods.registry import BY_NAME, CUBE_METHODS, METHODS, MICRODATA_METHODS, UNION_TAGS, method_of
from cubeguard.sweep.grid import STEP_MODELS

NAMES = [m.name for m in METHODS]


def test_each_method_is_listed_once_with_a_distinct_name_and_model() -> None:
    assert len(set(NAMES)) == len(NAMES) == len(BY_NAME)
    assert len({m.model for m in METHODS}) == len(METHODS)
    assert set(CUBE_METHODS) | set(MICRODATA_METHODS) == set(NAMES)
    assert not set(CUBE_METHODS) & set(MICRODATA_METHODS)
    packages = {m.name for m in pkgutil.iter_modules(cubeguard.methods.__path__) if m.ispkg}
    assert {m.model.__module__.split(".")[2] for m in METHODS} == packages  # every method package is registered
    assert {"identity", "cell_key", "targeted_swap"} <= set(NAMES)  # (a package may name its method otherwise)


def _members(field: str) -> set[type]:
    union = typing.get_args(ReleaseConfig.model_fields[field].annotation)[0]
    return set(typing.get_args(typing.get_args(union)[0]))


@pytest.mark.parametrize("method", METHODS, ids=NAMES)
def test_a_registered_method_reaches_config_schema_reference_manifest_and_sweep(method: object) -> None:
    assert isinstance(method, CubeMethod | MicrodataMethod)
    model = method.model
    field = "steps" if isinstance(method, CubeMethod) else "pre_tabular"
    assert model in _members(field)  # the config's step union
    schema = json_schema()
    assert model.__name__ in schema["$defs"]  # the JSON Schema
    refs = str(schema["properties"][field])
    assert model.__name__ in str(schema["$defs"]) and ("$defs" in refs)
    assert f"## {model.__name__}" in markdown()  # the config reference
    assert method.name in UNION_TAGS  # error paths leave the union tag out
    assert method_of(model.model_construct(method=method.name)) is method
    assert (method.name in STEP_MODELS) == isinstance(method, CubeMethod)  # the sweep grids


def test_secret_fields_are_those_that_may_be_given_by_reference() -> None:
    assert set(secret_fields(BY_NAME["cell_key"].model)) == {"D", "V", "pstay"}
    assert set(secret_fields(BY_NAME["targeted_swap"].model)) == {"swap_rate", "k_anonymity", "seed"}
    assert set(secret_fields(BY_NAME["ons_household_swap"].model)) == {"swap_rate", "risk_thresholds", "seed"}
    assert set(secret_fields(BY_NAME["ons_communal_swap"].model)) == {
        "rate_a", "rate_b", "rate_c", "family_rate", "seed",
    }  # fmt: skip
    assert secret_fields(BY_NAME["identity"].model) == ()


def test_the_shipped_configs_load_through_the_registry() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "configs").glob("*.yaml")):
        release = load_release(path)
        for step in (*release.config.pre_tabular, *release.config.steps):
            assert method_of(step).name == step.method
