"""Prefect tasks of a release: each is one call into the core's release table (:mod:`cubeguard.release`).

Resuming is the core's own step ledger, never Prefect's task cache (``NO_CACHE``: nothing hashes the run's plan).
The core steps take their outside services (Prefect secrets, the CLI's progress bars, Pandera
validation, Great Expectations gates) from :func:`services`; they resume from the output folder's
step ledger on their own, and return frozen result objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from cubeguard.release import steps
from cubeguard.release.results import Prepared, StepResult
from cubeguard.release.run import prepare
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Earlier, Services, Started
from expectations.release import gate_release
from schemas.validate import validate_release
from tasks.progress import report
from tasks.secrets import read_prefect_secret


def services() -> Services:
    """The services the core's release steps use when they run under Prefect."""
    return Services(validate=validate_release, gate=gate_release, resolver=read_prefect_secret, progress=report)


@task(name="prepare-input", cache_policy=NO_CACHE)
def prepare_input(spec: RunSpec) -> tuple[RunSpec, Prepared]:
    """Generate the synthetic census if asked and absent; the run spec with its run key."""
    return prepare(spec, services())


@task(name="release-step", cache_policy=NO_CACHE)
def run_step(spec: RunSpec, name: str, earlier: Earlier) -> StepResult:
    """One whole step of the release table (resumed when an earlier attempt finished it)."""
    return steps.run_step(spec, name, services(), earlier)


@task(name="release-step-start", cache_policy=NO_CACHE)
def start_step(spec: RunSpec, name: str, earlier: Earlier) -> Started:
    """Begin a fanned-out step: its earlier result, or its items (cubes or partitions)."""
    return steps.start_step(spec, name, services(), earlier)


@task(name="release-step-item", cache_policy=NO_CACHE)
def run_item(spec: RunSpec, name: str, item: Any) -> Any:
    """One item of a fanned-out step, on whichever thread, process or Dask worker runs it."""
    return steps.run_item(spec, name, item, services())


@task(name="release-step-finish", cache_policy=NO_CACHE)
def finish_step(spec: RunSpec, name: str, pieces: Sequence[Any], earlier: Earlier) -> StepResult:
    """Join a fanned-out step's items and record that it finished."""
    return steps.finish_step(spec, name, pieces, services(), earlier)
