"""The same cell is published identically in every EU programme cube that contains it (cell key method)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from cubeguard.ckm.consistency import check_consistency
from cubeguard.ckm.perturb import perturb_cube
from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
from cubeguard.config import load_release
from cubeguard.pipeline.tabulation import tabulate_release
from cubeguard.synth import generate

ROOT = Path(__file__).resolve().parents[2]
MAX_CELLS = 60_000  # keeps the test quick; the benchmarks cover the big cubes


def test_shared_cells_agree_across_the_eu_programme(tmp_path: Path) -> None:
    generate(20_000, 5, tmp_path, geography="national")
    release = load_release(ROOT / "configs" / "eu2021.yaml")
    cfg = release.config
    small = [
        c for c in cfg.hypercubes if math.prod(len(release.breakdowns[b].codes) for b in c.breakdowns) <= MAX_CELLS
    ]
    cfg = cfg.model_copy(
        update={"hypercubes": small, "input": cfg.input.model_copy(update={"microdata": tmp_path / "persons.parquet"})}
    )
    release = dataclasses.replace(release, config=cfg)
    tab = tabulate_release(release)
    ptable = create_cnt_ptable(PTableParams(D=5, V=3, js=2))
    cubes = {}
    for c, plan in enumerate(tab.plans):
        attrs = {
            "cube_id": plan.cube_id,
            "population": plan.population,
            "variables": {b.id: b.classification.variable for b in plan.breakdowns},
        }
        cubes[plan.cube_id] = perturb_cube(tab.cube(c, attrs), ptable)
    report = check_consistency(cubes)
    assert len(cubes) >= 20 and report.pairs > 100 and report.shared_cells > 10_000
    assert report.ok, report.examples[:3]
    # A planted difference in one shared cell is found.
    first = next(iter(cubes))
    cubes[first]["count"].values.flat[0] += 1
    assert check_consistency(cubes).mismatches >= 1
