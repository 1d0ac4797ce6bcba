"""Prefect tasks of a release: each is one call into the core's release table (:mod:`cubeguard.release`).

Resuming is the core's own step ledger, never Prefect's task cache (``NO_CACHE``: nothing hashes the run's plan).
The core steps take their outside services (Prefect secrets, the CLI's progress bars, Pandera
validation, Great Expectations gates) from :func:`services`; they resume from the output folder's
step ledger on their own, and return frozen result objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

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

T = TypeVar("T")


class Sealed(Generic[T]):
    """A task argument Prefect hands over without walking into it.

    Prefect walks every task argument that is a collection, dataclass or pydantic model, field by
    field, twice per task run (for upstream futures and to resolve them). A run spec carries the
    release's plan, the config of every cube, and there are none to find: for the EU programme's
    119 per-cube protect tasks at 10M persons, the walk took 44 s of a 51 s step (py-spy).
    Prefect's own ``quote`` is a tuple, which a Dask worker receives as a plain tuple; this is not.
    """

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value


def services() -> Services:
    """The services the core's release steps use when they run under Prefect."""
    return Services(validate=validate_release, gate=gate_release, resolver=read_prefect_secret, progress=report)


@task(name="prepare-input", cache_policy=NO_CACHE)
def prepare_input(spec: Sealed[RunSpec]) -> tuple[RunSpec, Prepared]:
    """Generate the synthetic census if asked and absent; the run spec with its run key."""
    return prepare(spec.value, services())


@task(name="release-step", cache_policy=NO_CACHE)
def run_step(spec: Sealed[RunSpec], name: str, earlier: Earlier) -> StepResult:
    """One whole step of the release table (resumed when an earlier attempt finished it)."""
    return steps.run_step(spec.value, name, services(), earlier)


@task(name="release-step-start", cache_policy=NO_CACHE)
def start_step(spec: Sealed[RunSpec], name: str, earlier: Earlier) -> Started:
    """Begin a fanned-out step: its earlier result, or its items (cubes or partitions)."""
    return steps.start_step(spec.value, name, services(), earlier)


@task(name="release-step-item", cache_policy=NO_CACHE)
def run_item(spec: Sealed[RunSpec], name: str, item: Any) -> Any:
    """One item of a fanned-out step, on whichever thread, process or Dask worker runs it."""
    return steps.run_item(spec.value, name, item, services())


@task(name="release-step-finish", cache_policy=NO_CACHE)
def finish_step(spec: Sealed[RunSpec], name: str, pieces: Sequence[Any], earlier: Earlier) -> StepResult:
    """Join a fanned-out step's items and record that it finished."""
    return steps.finish_step(spec.value, name, pieces, services(), earlier)
