"""The EU 2021 programme's smaller cubes tabulated from a synthetic census, for tests and benchmarks."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import xarray as xr

from cubeguard.config import load_release
from cubeguard.pipeline.tabulation import tabulate_release
from cubeguard.synth import generate

ROOT = Path(__file__).resolve().parents[2]  # the project folder, which holds configs/


def small_cubes(folder: Path, persons: int, seed: int, max_cells: int) -> dict[str, xr.Dataset]:
    """Every cube of ``configs/eu2021.yaml`` of at most ``max_cells`` cells, by id, in memory.

    The census (national geography) is written to ``folder``. Each cube carries the attributes
    :func:`cubeguard.ckm.consistency.check_consistency` compares by: ``cube_id``, ``population``
    and ``variables`` (breakdown id to variable).
    """
    generate(persons, seed, folder, geography="national")
    release = load_release(ROOT / "configs" / "eu2021.yaml")
    cfg = release.config
    small = [
        c for c in cfg.hypercubes if math.prod(len(release.breakdowns[b].codes) for b in c.breakdowns) <= max_cells
    ]
    microdata = folder / "persons.parquet"
    cfg = cfg.model_copy(update={"hypercubes": small, "input": cfg.input.model_copy(update={"microdata": microdata})})
    tab = tabulate_release(dataclasses.replace(release, config=cfg))
    cubes = {}
    for c, plan in enumerate(tab.plans):
        attrs: dict[str, object] = {
            "cube_id": plan.cube_id,
            "population": plan.population,
            "variables": {b.id: b.classification.variable for b in plan.breakdowns},
        }
        cubes[plan.cube_id] = tab.cube(c, attrs).load()
    return cubes
