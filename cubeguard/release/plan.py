"""A release's plan: its config with the run's overrides, loaded, validated and checked once.

:func:`plan_release` is the one way into a release, for every entry point: ``cubeguard release``
before Prefect starts, and the release flow (a run from the command line, the Prefect UI, a
schedule or on Dask) before it does anything. It loads the config with the overrides, runs every
check that can be made before data is read (:func:`~cubeguard.pipeline.preflight.preflight`), and
fixes what the steps need from it: each cube's post-tabular steps and the cubes published additive.
The run's steps get the plan through :class:`~cubeguard.release.spec.RunSpec` and never reload the
config; a step function is prepared once per plan and process (:meth:`ReleasePlan.step_function`),
not once per cube.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cubeguard.config.load import Release, load_release
from cubeguard.config.protection import additive_cubes
from cubeguard.methods.base import CubeFunction
from cubeguard.methods.models import StepModel
from cubeguard.pipeline.preflight import GivenAs, preflight
from cubeguard.pipeline.resolved_steps import build_step
from cubeguard.secrets import SecretResolver


@dataclass(frozen=True, eq=False)
class ReleasePlan:
    """One release run's validated config and what its steps read from it, fixed before anything runs.

    Attributes:
        release: The config, loaded with the run's overrides and checked.
        overrides: The config keys the run changed (secrets only by reference).
        cube_steps: Per cube, the post-tabular steps that apply to it, as ``(index in steps, step)``.
        additive: The cubes published additive (the additivity gate blocks on them).
    """

    release: Release
    overrides: Mapping[str, Any]
    cube_steps: Mapping[str, tuple[tuple[int, StepModel], ...]]
    additive: frozenset[str]
    _prepared: dict[tuple[int, int], CubeFunction] = field(default_factory=dict, repr=False)

    def step_function(self, index: int, resolver: SecretResolver | None) -> CubeFunction:
        """Post-tabular step ``index`` prepared (its p-table built, its file read) once per plan and process."""
        key = (index, id(resolver))
        if key not in self._prepared:
            step = self.release.config.steps[index]
            self._prepared[key] = build_step(step, f"steps[{index}]", resolver)
        return self._prepared[key]

    def __getstate__(self) -> dict[str, Any]:
        """Pickled for another process (a Dask worker) without the prepared functions: it prepares its own."""
        state = dict(self.__dict__)
        state["_prepared"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled plan (frozen: set through ``object.__setattr__``)."""
        for name, value in state.items():
            object.__setattr__(self, name, value)


def plan_release(
    config_path: str,
    overrides: Mapping[str, Any] | None = None,
    *,
    release_id: str | None = None,
    resolver: SecretResolver | None = None,
    given_as: GivenAs = "--set",
) -> ReleasePlan:
    """Load, validate and check a release for one run: the plan every step of the run reads.

    Args:
        config_path: The release config (YAML).
        overrides: Config keys changed for this run; a secret among them must be a reference.
        release_id: The published folder name asked for (checked unused), or ``None``.
        resolver: Resolves secret blocks (the flow's Prefect secrets); without it only environment
            references are checked.
        given_as: How the overrides were given, for the message that refuses an inline secret.

    Raises:
        CubeguardError: the config or a check before data is read fails, in one sentence.
    """
    given = dict(overrides or {})
    release = load_release(config_path, given or None, resolver)
    preflight(release, given, release_id, resolver, given_as)
    return plan_of(release, given)


def plan_of(release: Release, overrides: Mapping[str, Any] | None = None) -> ReleasePlan:
    """The plan of a release loaded and checked already (for callers that hold one)."""
    cfg = release.config
    steps = {cube.id: tuple(cfg.steps_for(cube.id)) for cube in cfg.hypercubes}
    return ReleasePlan(release, dict(overrides or {}), steps, additive_cubes(cfg))


@functools.lru_cache(maxsize=8)
def cached_plan(config_path: str, overrides_json: str, stamp: int) -> ReleasePlan:
    """The plan of a run spec that came without one (loaded once per process; no preflight)."""
    overrides = json.loads(overrides_json)
    return plan_of(load_release(config_path, overrides or None), overrides)
