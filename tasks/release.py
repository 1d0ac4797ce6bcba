"""Thin Prefect tasks around the core release steps; each passes paths and small summaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task

from cubeguard.config import load_release
from cubeguard.pipeline.inputs import ensure_microdata
from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
from schemas.validate import validate_microdata
from tasks.progress import report


@task(name="prepare-input")
def prepare_input(config_path: str) -> dict[str, Any]:
    """Generate the synthetic census if the config asks for it and the input is absent."""
    return ensure_microdata(load_release(config_path), progress=report)


@task(name="validate")
def validate(config_path: str, report_file: str) -> dict[str, Any]:
    """Validate the microdata; raises MicrodataInvalid (nothing written) on bad input."""
    rep = validate_microdata(load_release(config_path), Path(report_file), progress=lambda n: report("validate", n))
    return {"records": rep.records}


@task(name="tabulate")
def tabulate(config_path: str, store: str) -> list[dict[str, object]]:
    """Tabulate every hypercube in one pass and write the Zarr store."""
    release = load_release(config_path)
    tab = tabulate_release(release, progress=report)
    return [s.as_dict() for s in write_tabulation(release, tab, Path(store), progress=report)]
