"""The finest crossings of the offered variables, tabulated once, so a new table is summed, not tabulated.

A flexible table crosses at most ``max_dimensions`` variables (Shlomo 2009, section 5). Every
such table of the default population without filters, at any offered levels, is the sum of the
crossing of its variables (plus others, summed out) at their finest offered levels
(:mod:`cubeguard.tables.derive`: counts and key sums add up exactly, so the published values are
those a pass over the records gives). So the engine tabulates, when a release is served, every
crossing of ``max_dimensions`` offered variables at their finest levels, smallest first, up to
``tables.precompute_cells`` bottom cells (16 bytes each), in background threads; a table whose
crossing is ready costs a pass over the crossing per dimension instead of a pass over the records
(about 20 ms at 10M records). Until then, and for other populations, filters or means, the engine
tabulates as before.

The crossings are kept in a ``crossings`` folder inside the key store's, as ``.npy`` files the
engine maps read-only: the next start of the service, and every worker process, maps them instead
of tabulating them again (the OS shares their pages), and a key store written anew takes them with
it. One process builds at a time (a file lock); a file is written under another name and renamed,
so a reader never sees half of one. Where the folder cannot be written, they stay in memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import math
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

import numpy as np
import numpy.typing as npt

from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.tables.derive import Bottoms, Entry, Full, Refinements, expanded, plan_from

Tabulate = Callable[[list[Breakdown]], Bottoms]


class Crossings:
    """Bottom cells of the finest crossings of ``size`` offered variables; thread-safe.

    Attributes:
        planned: the crossings (as variable sets) to tabulate, smallest first, within the budget.
    """

    def __init__(
        self,
        offered: dict[str, Breakdown],
        size: int,
        budget_cells: int,
        refines: Refinements,
        folder: Path | None = None,
    ) -> None:
        finest: dict[str, Breakdown] = {}
        for bd in offered.values():
            var = bd.classification.variable
            if var not in finest or bd.n_bottom > finest[var].n_bottom:
                finest[var] = bd
        self.refines = refines
        self._finest = [finest[v] for v in sorted(finest)]
        combos = itertools.combinations(self._finest, min(size, len(self._finest)))
        by_size = sorted(combos, key=lambda c: (math.prod(b.n_bottom for b in c), [b.id for b in c]))
        self.planned: list[tuple[Breakdown, ...]] = []
        used = 0
        for combo in by_size:
            cells = math.prod(b.n_bottom for b in combo)
            if used + cells > budget_cells:
                break
            self.planned.append(combo)
            used += cells
        self.cells = used
        self._tables: dict[frozenset[str], Entry] = {}
        self._lock = threading.Lock()
        self.folder = folder
        self.loaded = 0  # crossings mapped from files written before, not tabulated

    @property
    def ready(self) -> int:
        """How many planned crossings are tabulated."""
        return len(self._tables)

    def build(self, tabulate: Tabulate, workers: int = 2) -> None:
        """Tabulate every planned crossing (``tabulate`` gives a table's bottom cells), ``workers`` at a time."""

        def one(combo: tuple[Breakdown, ...]) -> None:
            entry = self._mapped(combo)
            with self._lock:
                self.loaded += entry is not None
            entry = entry or self._kept(combo, *tabulate(list(combo)))
            with self._lock:
                self._tables[_variables(combo)] = entry

        with self._building(), ThreadPoolExecutor(max_workers=workers, thread_name_prefix="crossings") as pool:
            list(pool.map(one, self.planned))

    @contextlib.contextmanager
    def _building(self) -> Iterator[None]:
        """Hold the folder's build lock: another process building waits here, then maps its files."""
        lock = self._lock_file()
        if lock is None:
            yield
            return
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _lock_file(self) -> IO[str] | None:
        """The folder's lock file, open; None (and no folder from now on) when it cannot be written."""
        if self.folder is None:
            return None
        try:
            self.folder.mkdir(exist_ok=True)
            return (self.folder / ".build.lock").open("a")
        except OSError:
            self.folder = None  # a read-only store: the crossings stay in memory
            return None

    def _files(self, folder: Path, combo: tuple[Breakdown, ...]) -> tuple[Path, Path]:
        ids = [b.id for b in combo]
        digest = hashlib.sha256("\0".join(ids).encode()).hexdigest()[:12]
        stem = "+".join("".join(c if c.isalnum() or c in "._-" else "_" for c in i) for i in ids)
        return folder / f"{stem}-{digest}.counts.npy", folder / f"{stem}-{digest}.key_sums.npy"

    def _mapped(self, combo: tuple[Breakdown, ...]) -> Entry | None:
        """The crossing from its files, mapped read-only, if they were written before and fit it."""
        if self.folder is None:
            return None
        try:
            counts, key_sums = (np.load(f, mmap_mode="r") for f in self._files(self.folder, combo))
        except (OSError, ValueError):
            return None
        shape = tuple(b.n_bottom for b in combo)
        if (counts.shape, key_sums.shape, counts.dtype, key_sums.dtype) != (shape, shape, np.int64, np.uint64):
            return None
        return Entry(combo, counts, key_sums)

    def _kept(
        self, combo: tuple[Breakdown, ...], counts: npt.NDArray[np.int64], key_sums: npt.NDArray[np.uint64]
    ) -> Entry:
        """Write a tabulated crossing to its files and map them (kept in memory when they cannot be written)."""
        if self.folder is None:
            return Entry(combo, counts, key_sums)
        try:
            for path, array in zip(self._files(self.folder, combo), (counts, key_sums), strict=True):
                part = path.with_name(f".{path.name}.{os.getpid()}.part")
                with part.open("wb") as out:
                    np.save(out, array)
                os.replace(part, path)
        except OSError:
            return Entry(combo, counts, key_sums)
        return self._mapped(combo) or Entry(combo, counts, key_sums)

    def derive(self, bds: list[Breakdown]) -> Full | None:
        """The table of ``bds`` (margins included) summed from the smallest ready crossing that holds their variables."""
        wanted = _variables(bds)
        if len(wanted) != len(bds):
            return None  # a variable twice: no crossing holds it twice
        with self._lock:
            holding = [e for key, e in self._tables.items() if wanted <= key]
        for entry in sorted(holding, key=lambda e: e.counts.size):
            plan = plan_from(entry.breakdowns, bds, self.refines)
            if plan is not None:
                return expanded(entry, plan, bds)
        return None


def _variables(bds: tuple[Breakdown, ...] | list[Breakdown]) -> frozenset[str]:
    return frozenset(b.classification.variable for b in bds)
