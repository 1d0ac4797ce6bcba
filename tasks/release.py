"""Thin Prefect tasks around the core release steps; each passes paths and small summaries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import task

from cubeguard.config import load_release
from cubeguard.pipeline.inputs import ensure_microdata
from cubeguard.pipeline.measure import cube_pairs, measure_release, measures_file
from cubeguard.pipeline.pretabular import apply_pre_tabular
from cubeguard.pipeline.protection import protect_release
from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
from cubeguard.report.build import build_report
from expectations.gates import run_gates
from schemas.validate import validate_microdata
from tasks.progress import report
from tasks.secrets import read_prefect_secret


@task(name="prepare-input")
def prepare_input(config_path: str) -> dict[str, Any]:
    """Generate the synthetic census if the config asks for it and the input is absent."""
    return ensure_microdata(load_release(config_path), progress=report)


@task(name="validate")
def validate(config_path: str) -> dict[str, Any]:
    """Validate the microdata; raises MicrodataInvalid (nothing written) on bad input."""
    release = load_release(config_path)
    rep = validate_microdata(release, release.config.output.validation_report, progress=lambda n: report("validate", n))
    return {"records": rep.records}


@task(name="pre-tabular")
def pre_tabular(config_path: str) -> dict[str, Any]:
    """Swap the microdata if the release declares pre-tabular steps (reports stay internal)."""
    return apply_pre_tabular(load_release(config_path), read_prefect_secret, progress=report)


@task(name="tabulate")
def tabulate(config_path: str) -> list[dict[str, object]]:
    """Tabulate every hypercube in one pass and write the original (internal) Zarr store."""
    release = load_release(config_path)
    tab = tabulate_release(release, progress=report, prefect_reader=read_prefect_secret)
    store = release.config.output.original_store
    return [s.as_dict() for s in write_tabulation(release, tab, store, progress=report)]


@task(name="protect")
def protect(config_path: str) -> list[dict[str, object]]:
    """Apply the post-tabular steps to every cube; write the protected store."""
    release = load_release(config_path)
    out = release.config.output
    return [
        s.as_dict()
        for s in protect_release(release, out.original_store, out.protected_store, read_prefect_secret, progress=report)
    ]


@task(name="measure")
def measure(config_path: str) -> dict[str, Any]:
    """Information loss and disclosure risk of every cube (internal Parquet table)."""
    return {"measures": str(measure_release(load_release(config_path)))}


@task(name="gate")
def gate(config_path: str) -> dict[str, Any]:
    """Run the Great Expectations gates; Data Docs and the full result stay internal."""
    release = load_release(config_path)
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
def report_html(config_path: str, gate_rows: list[dict[str, Any]]) -> str:
    """The internal HTML report of the release (gates, measures, plots)."""
    release = load_release(config_path)
    measures = pd.read_parquet(measures_file(release))
    return str(
        build_report(
            release.config.output.folder, gates=gate_rows, measures=measures, title=f"Release {release.config.name}"
        )
    )


def store_paths(config_path: str) -> dict[str, str]:
    """Where a release's stores live (small, for the flow's result)."""
    out = load_release(config_path).config.output
    return {"original": str(Path(out.original_store)), "protected": str(Path(out.protected_store))}
