"""Tabulation split over row-group partitions, for Dask workers: each part to disk, then one sum.

Each worker tabulates its row groups into a partial :class:`Tabulator` and saves its accumulators
(``internal/tabulate-parts/part-<k>.npz``), so tasks pass paths, not arrays. The sum of the parts is
exactly the single-pass tabulation: counts are int64 and key sums uint64 fixed point, whose
addition is associative and commutative (modulo 2^64 for the key sums, as in one pass). The value
accumulators of cubes that publish sums merge too (:func:`cubeguard.cubes.values.merge_values`):
sums of whole numbers add exactly, extremes and top contributions (ranked by source row) merge.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

from cubeguard.config.load import Release
from cubeguard.cubes.tabulate import Tabulator
from cubeguard.microdata.read import partitions
from cubeguard.pipeline.tabulation import new_tabulator, tabulate_release, tabulation_source
from cubeguard.secrets import SecretResolver


def parts_folder(release: Release) -> Path:
    """Where partial tabulations are kept until they are summed (internal)."""
    return release.config.output.internal / "tabulate-parts"


def plan_parts(release: Release, parts: int) -> list[tuple[list[int], int]]:
    """The row-group partitions to tabulate (one that reads everything for non-Parquet input)."""
    folder = parts_folder(release)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return partitions(tabulation_source(release), parts)


def tabulate_part(release: Release, k: int, part: tuple[list[int], int], reader: SecretResolver | None = None) -> str:
    """Tabulate partition ``k`` and save its accumulators; returns the file's path."""
    tab = tabulate_release(release, resolver=reader, part=part)
    target = parts_folder(release) / f"part-{k}.npz"
    arrays: dict[str, Any] = {"counts": tab.counts, "key_sums": tab.key_sums, "bad": tab.bad}
    arrays |= {f"values.{c}.{column}.{name}": a for (c, column), acc in tab.values.items() for name, a in acc.items()}
    np.savez(target, records=np.int64(tab.records), **arrays)
    return str(target)


def sum_parts(release: Release, files: list[str]) -> Tabulator:
    """A tabulator holding the sum of the saved parts (in file order; the order does not matter)."""
    first, *rest = files
    total = _load(release, first)
    for f in rest:
        total.merge(_load(release, f))
    return total


def _load(release: Release, file: str) -> Tabulator:
    tab = new_tabulator(release)
    with np.load(file) as data:
        tab.counts[...] = data["counts"]
        tab.key_sums[...] = data["key_sums"]
        tab.bad[...] = data["bad"]
        tab.records = int(data["records"])
        for (c, column), acc in tab.values.items():
            for name, a in acc.items():
                a[...] = data[f"values.{c}.{column}.{name}"]
    return tab
