"""What every registered protection method promises, checked once over the registry instead of once per method.

Each contract is parametrized over :mod:`cubeguard.methods.registry` (ids are method names) and
selects the methods its promise applies to from their flags (``additive``, ``changes_counts``,
``cellwise``, ``secret_fields``), so a new method is held to every contract its flags claim. The
sample steps, secrets and cubes are in ``method_samples.py``; method-specific behaviour (golden
values, paper tables, statistics) stays in each method's unit tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

from cubeguard.errors import InternalError
from cubeguard.gates.additivity import check_additivity
from cubeguard.methods.base import CubeMethod
from cubeguard.methods.cells import interior, leaf_index, summed
from cubeguard.methods.models import secret_fields
from cubeguard.methods.registry import BY_NAME
from cubeguard.publish.manifest import public_step
from cubeguard.testing.cubes import build_cube
from tests.conftest import load_problems
from tests.contracts.method_samples import (
    DIMS,
    DISTINCTIVE,
    KEY_SCALE,
    REFUSED,
    SAMPLES,
    Sample,
    hierarchical_cube,
    refusals,
    release_text,
    samples,
    section,
)

FIRST = [s for s in samples() if s.id == s.method.name]
CUBE = samples(cube_only=True)


def _params(chosen: list[Sample]) -> Any:
    return pytest.mark.parametrize("sample", chosen, ids=[s.id for s in chosen])


def _protect(sample: Sample, cube: xr.Dataset) -> xr.Dataset:
    method = sample.method
    assert isinstance(method, CubeMethod)
    return method.prepare(sample.step())(cube)


def test_every_registered_method_has_a_sample_and_a_distinctive_value_for_each_secret() -> None:
    assert set(SAMPLES) == set(BY_NAME) == set(DISTINCTIVE) == set(REFUSED)
    for name, method in BY_NAME.items():
        assert set(DISTINCTIVE[name]) == set(secret_fields(method.model)), name


# --- located config errors ------------------------------------------------------------------------


@_params(FIRST)
def test_each_refused_parameter_is_a_config_problem_at_its_key_and_line(tmp_path: Path, sample: Sample) -> None:
    """The sample loads; each value its model's constraints refuse, an unknown key and each missing required key
    is one problem naming ``<section>[0].<key>`` and the key's line (all problems of a step at once)."""
    method, where = sample.method, section(sample.method)
    text, line = release_text(method, sample.mapping)
    assert load_problems(tmp_path, text, missing_ok=True) == []
    refused = refusals(method.model)
    assert {key: [v for v, _ in bad] for key, bad in refused.items()} == REFUSED[method.name]
    for k in range(max([1, *(len(bad) for bad in refused.values())])):
        spoiled = sample.mapping | {key: bad[k][0] for key, bad in refused.items() if len(bad) > k}
        says = {key: bad[k][1] for key, bad in refused.items() if len(bad) > k}
        if k == 0:
            spoiled["frobnicate"] = 1
            says["frobnicate"] = "unknown key 'frobnicate'; remove it or fix its spelling"
        text, line = release_text(method, spoiled)
        lines = {key: line + 1 + i for i, key in enumerate(spoiled)}
        expected = sorted(f"{where}[0].{key} (c.yaml line {lines[key]}): {msg}" for key, msg in says.items())
        assert sorted(load_problems(tmp_path, text)) == expected
    required = [k for k, f in method.model.model_fields.items() if f.is_required() and k in sample.mapping]
    if required:
        text, line = release_text(method, {k: v for k, v in sample.mapping.items() if k not in required})
        expected = sorted(
            f"{where}[0].{k} (c.yaml line {line}): this required key is missing; add it" for k in required
        )
        assert sorted(load_problems(tmp_path, text)) == expected


# --- secrets ----------------------------------------------------------------------------------------


def _leaves(value: Any) -> list[str]:
    return [s for v in value for s in _leaves(v)] if isinstance(value, list | tuple) else [str(value)]


@_params(FIRST)
def test_no_secret_reaches_the_repr_or_the_public_parameters(sample: Sample) -> None:
    """Neither a secret's value nor the name of the reference it is read from; the step itself holds both."""
    method, secrets = sample.method, DISTINCTIVE[sample.method.name]
    names = {k: f"CG_SECRET_{k.upper()}" for k in secrets}
    references = {k: [{"env": names[k]}] if isinstance(v, list) else {"env": names[k]} for k, v in secrets.items()}
    for step, needles in (
        (sample.step(**secrets), {k: _leaves(v) for k, v in secrets.items()}),
        (sample.step(**references), {k: [names[k]] for k in secrets}),
    ):
        public = method.public(step)
        assert not set(public) & set(secret_fields(method.model))
        shown_fields = set(method.model.model_fields) - set(secret_fields(method.model))
        assert [k for k in shown_fields if f"{k}=" not in repr(step)] == []  # the repr hides only the secrets
        shown = {
            "repr": repr(step), "str": str(step),
            "public": json.dumps(public, default=str), "manifest": json.dumps(public_step(step), default=str),
        }  # fmt: skip
        held = json.dumps(step.model_dump(mode="json"))
        for key, words in needles.items():
            for word in words:
                assert word in held, (key, word)  # the step holds it: the check below can fail
                assert not [where for where, text in shown.items() if word in text], (key, word)


@_params([s for s in FIRST if isinstance(s.method, CubeMethod) and DISTINCTIVE.get(s.method.name)])
def test_a_cube_step_whose_secret_is_still_a_reference_is_a_bug(sample: Sample) -> None:
    """Secrets are resolved before a step runs: preparing one with a reference left is an InternalError."""
    method = sample.method
    assert isinstance(method, CubeMethod)
    for key, value in DISTINCTIVE[method.name].items():
        unresolved = sample.step(**{key: [{"env": "CG_UNSET"}] if isinstance(value, list) else {"env": "CG_UNSET"}})
        with pytest.raises(InternalError, match=r"not resolved; this is a bug in cubeguard$"):
            method.prepare(unresolved)


# --- protected cubes --------------------------------------------------------------------------------


@_params([s for s in CUBE if s.method.additive(s.step())])  # type: ignore[union-attr]
def test_a_method_that_promises_additive_cubes_publishes_them(sample: Sample) -> None:
    cube = hierarchical_cube()
    assert check_additivity(cube).additive
    protected = _protect(sample, cube)
    assert not np.array_equal(protected["count"].values, cube["count"].values)  # it changed counts
    facts = check_additivity(protected)
    assert facts.additive, facts


def _perturbed_before(cube: xr.Dataset) -> xr.Dataset:
    """``cube`` as an earlier step leaves it: interior counts moved by -1..1, margins summed, ``noise`` the change."""
    index = leaf_index(cube)
    inner = interior(cube["count"].values, index)
    moved = np.maximum(inner + np.random.default_rng(9).integers(-1, 2, inner.shape), 0)
    count = summed(cube, moved)
    return cube.assign(count=(cube["count"].dims, count), noise=(cube["count"].dims, count - cube["count"].values))


@_params(CUBE)
def test_noise_is_the_published_count_minus_the_original(sample: Sample) -> None:
    """On a fresh cube and after an earlier step's noise; a method that changes no count publishes the cube as it is."""
    cube = hierarchical_cube()
    changes = sample.step().changes_counts
    for before in (cube, _perturbed_before(cube)):
        protected = _protect(sample, before)
        published = protected["count"].values
        np.testing.assert_array_equal(protected["noise"].values, published - cube["count"].values)
        if changes:
            assert not np.array_equal(published, before["count"].values)  # the sample exercised the method
        else:
            np.testing.assert_array_equal(published, before["count"].values)


@_params([s for s in CUBE if s.method.cellwise(s.step())])  # type: ignore[union-attr]
def test_a_cellwise_method_publishes_a_shared_cell_the_same_in_every_cube(sample: Sample) -> None:
    """A GEO-only cube's cells are the (SEX total, AGE total) margin of the GEO x SEX x AGE cube."""
    full = hierarchical_cube()
    margin = {"SEX": "S", "AGE": "A_T"}
    geo = leaf_index(full)[0]
    by_geo = build_cube(
        {"GEO": DIMS["GEO"]}, full["count"].sel(margin).values[geo], full["key_sum"].sel(margin).values[geo]
    ).assign_attrs(key_scale=KEY_SCALE, cube_id="by_geo")
    np.testing.assert_array_equal(by_geo["count"].values, full["count"].sel(margin).values)  # the same cells
    np.testing.assert_array_equal(by_geo["key_sum"].values, full["key_sum"].sel(margin).values)
    shared = _protect(sample, by_geo)["count"].values
    np.testing.assert_array_equal(shared, _protect(sample, full)["count"].sel(margin).values)
    assert not np.array_equal(shared, by_geo["count"].values)  # the shared cells were protected
