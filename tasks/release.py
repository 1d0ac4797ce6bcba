"""Thin Prefect tasks around the core release steps; each passes paths and small summaries.

Every step task takes the run's :class:`RunSpec` (config path, overrides, run key) and resumes
from the output folder's step ledger when the same step already finished for the same key.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import get_run_logger, task

from cubeguard.config.load import Release
from cubeguard.pipeline.inputs import ensure_microdata
from cubeguard.pipeline.measure import cube_pairs, measure_release, measures_file
from cubeguard.pipeline.pretabular import apply_pre_tabular
from cubeguard.pipeline.protection import protect_cube, start_protected_store
from cubeguard.pipeline.run import RunSpec, ledger_of, release_key, step_outputs
from cubeguard.pipeline.tabulate_parts import parts_folder, plan_parts, sum_parts, tabulate_part
from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
from cubeguard.report.build import build_report
from expectations.gates import run_gates
from schemas.validate import validate_microdata
from tasks.progress import report
from tasks.secrets import read_prefect_secret


def _resumable(spec: RunSpec, step: str, compute: Callable[[Release], Any]) -> Any:
    """Run ``compute`` unless the ledger says ``step`` already finished for this run's key."""
    release = spec.release()
    ledger = ledger_of(release)
    if spec.fresh:
        ledger.begin(step)
    result, resumed = ledger.run(step, spec.key, step_outputs(release, step), lambda: compute(release))
    if resumed:
        get_run_logger().info("%s: finished in an earlier attempt of this release; reusing its outputs", step)
    return result


@task(name="prepare-input")
def prepare_input(config_path: str, overrides: dict[str, Any], fresh: bool) -> dict[str, Any]:
    """Generate the synthetic census if asked and absent; return the run spec with its key."""
    spec = RunSpec(config_path, overrides, fresh=fresh)
    release = spec.release()
    source = ensure_microdata(release, progress=report)
    return {
        "spec": asdict(RunSpec(config_path, overrides, release_key(release, read_prefect_secret), fresh)),
        "input": source,
    }


@task(name="validate")
def validate(spec: RunSpec) -> dict[str, Any]:
    """Validate the microdata; raises MicrodataInvalid (nothing written) on bad input."""

    def run(release: Release) -> dict[str, Any]:
        rep = validate_microdata(
            release, release.config.output.validation_report, progress=lambda n: report("validate", n)
        )
        return {"records": rep.records}

    return _resumable(spec, "validate", run)  # type: ignore[no-any-return]


@task(name="pre-tabular")
def pre_tabular(spec: RunSpec) -> dict[str, Any]:
    """Swap the microdata if the release declares pre-tabular steps (reports stay internal)."""
    return _resumable(  # type: ignore[no-any-return]
        spec, "pre_tabular", lambda r: apply_pre_tabular(r, read_prefect_secret, progress=report)
    )


@task(name="tabulate")
def tabulate(spec: RunSpec) -> list[dict[str, object]]:
    """Tabulate every hypercube in one pass and write the original (internal) Zarr store."""

    def run(release: Release) -> list[dict[str, object]]:
        tab = tabulate_release(release, progress=report, resolver=read_prefect_secret)
        store = release.config.output.original_store
        return [s.as_dict() for s in write_tabulation(release, tab, store, progress=report)]

    return _resumable(spec, "tabulate", run)  # type: ignore[no-any-return]


def _earlier(spec: RunSpec, release: Release, step: str) -> Any | None:
    """The recorded result of ``step`` for this run, or None after clearing it (and later steps)."""
    ledger = ledger_of(release)
    if not spec.fresh:
        done = ledger.lookup(step, spec.key)
        if done is not None:
            get_run_logger().info("%s: finished in an earlier attempt of this release; reusing its outputs", step)
            return done
    ledger.begin(step)
    return None


@task(name="tabulate-start")
def tabulate_start(spec: RunSpec, parts: int) -> dict[str, Any]:
    """The recorded result if tabulation already finished for this run; else the row-group partitions."""
    release = spec.release()
    done = _earlier(spec, release, "tabulate")
    return {"resumed": done} if done is not None else {"parts": plan_parts(release, parts)}


@task(name="tabulate-part")
def tabulate_one(spec: RunSpec, k: int, part: tuple[list[int], int]) -> str:
    """Tabulate one partition of the microdata (on whichever worker runs it); returns its file."""
    return tabulate_part(spec.release(), k, part, read_prefect_secret)


@task(name="tabulate-finish")
def tabulate_finish(spec: RunSpec, files: list[str]) -> list[dict[str, object]]:
    """Sum the partitions, expand margins, write the original store and record the step."""
    release = spec.release()
    store = release.config.output.original_store
    result = [s.as_dict() for s in write_tabulation(release, sum_parts(release, files), store, progress=report)]
    shutil.rmtree(parts_folder(release), ignore_errors=True)
    ledger_of(release).record("tabulate", spec.key, result, step_outputs(release, "tabulate"))
    return result


@task(name="protect-start")
def protect_start(spec: RunSpec) -> dict[str, Any]:
    """The recorded result if protection already finished for this run; else empty the store, list cubes."""
    release = spec.release()
    done = _earlier(spec, release, "protect")
    if done is not None:
        return {"resumed": done}
    out = release.config.output
    return {"cubes": start_protected_store(out.original_store, out.protected_store)}


@task(name="protect-cube")
def protect_one(spec: RunSpec, cube_id: str) -> dict[str, object]:
    """Apply the post-tabular steps to one cube (on whichever thread, process or Dask worker runs it)."""
    release = spec.release()
    out = release.config.output
    return protect_cube(release, cube_id, out.original_store, out.protected_store, read_prefect_secret).as_dict()


@task(name="protect-finish")
def protect_finish(spec: RunSpec, summaries: list[dict[str, object]]) -> list[dict[str, object]]:
    """Record that every cube is protected, so a later attempt resumes after this step."""
    release = spec.release()
    ordered = sorted(summaries, key=lambda s: str(s["cube_id"]))
    ledger_of(release).record("protect", spec.key, ordered, step_outputs(release, "protect"))
    return ordered


@task(name="measure")
def measure(spec: RunSpec) -> dict[str, Any]:
    """Information loss and disclosure risk of every cube (internal Parquet table)."""
    return _resumable(spec, "measure", lambda r: {"measures": str(measure_release(r))})  # type: ignore[no-any-return]


@task(name="gate")
def gate(spec: RunSpec) -> dict[str, Any]:
    """Run the Great Expectations gates; Data Docs and the full result stay internal."""
    return _resumable(spec, "gate", _gate)  # type: ignore[no-any-return]


def _gate(release: Release) -> dict[str, Any]:
    internal = release.config.output.internal
    measures = pd.read_parquet(measures_file(release))
    result = run_gates(cube_pairs(release), measures, release.config.gates, internal / "gates")  # type: ignore[arg-type]
    rows = [
        {
            "cube": o.cube,
            "expectation": o.expectation,
            "status": "error" if o.error else ("pass" if o.success else ("fail" if o.blocking else "warn")),
            "observed": str(o.observed),
            "required": o.threshold,
        }
        for o in result.outcomes
    ]
    (internal / "gates.json").write_text(json.dumps(rows, indent=1, default=str))
    return {
        "passed": result.passed,
        "failures": result.failures(),
        "rows": rows,
        "docs": str(result.docs_index) if result.docs_index else None,
    }


@task(name="report")
def report_html(spec: RunSpec, gate_rows: list[dict[str, Any]]) -> str:
    """The internal HTML report of the release (gates, measures, plots)."""
    release = spec.release()
    measures = pd.read_parquet(measures_file(release))
    return str(
        build_report(
            release.config.output.folder, gates=gate_rows, measures=measures, title=f"Release {release.config.name}"
        )
    )


def store_paths(spec: RunSpec) -> dict[str, str]:
    """Where a release's stores live (small, for the flow's result)."""
    out = spec.release().config.output
    return {"original": str(Path(out.original_store)), "protected": str(Path(out.protected_store))}
