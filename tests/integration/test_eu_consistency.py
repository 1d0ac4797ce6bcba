"""The same cell is published identically in every EU programme cube that contains it (cell key method)."""

from __future__ import annotations

from pathlib import Path

from cubeguard.ckm.consistency import check_consistency
from cubeguard.ckm.perturb import perturb_cube
from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
from cubeguard.testing.eu_programme import small_cubes

MAX_CELLS = 60_000  # keeps the test quick; the benchmarks cover the big cubes


def test_shared_cells_agree_across_the_eu_programme(tmp_path: Path) -> None:
    ptable = create_cnt_ptable(PTableParams(D=5, V=3, js=2))
    cubes = {cid: perturb_cube(cube, ptable) for cid, cube in small_cubes(tmp_path, 20_000, 5, MAX_CELLS).items()}
    report = check_consistency(cubes)
    assert len(cubes) >= 20 and report.pairs > 100 and report.shared_cells > 10_000
    assert report.ok, report.examples[:3]
    # A planted difference in one shared cell is found.
    first = next(iter(cubes))
    cubes[first]["count"].values.flat[0] += 1
    assert check_consistency(cubes).mismatches >= 1
