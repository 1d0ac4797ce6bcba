"""The finest crossings of the offered variables, tabulated once, so a new table is summed, not tabulated.

A flexible table crosses at most ``max_dimensions`` variables (Shlomo 2009, section 5). Every
such table of the default population without filters, at any offered levels, is the sum of the
crossing of its variables (plus others, summed out) at their finest offered levels
(:mod:`cubeguard.tables.derive`: counts and key sums add up exactly, so the published values are
those a pass over the records gives). So the engine tabulates, when a release is served, every
crossing of ``max_dimensions`` offered variables at their finest levels, smallest first, up to
``tables.precompute_cells`` bottom cells (16 bytes each), in background threads; a table whose
crossing is ready costs a pass over the crossing per dimension instead of a pass over the records
(about 20 ms at 10M records). A mean whose magnitude perturbation reads only sums (cellKey's types
``mean`` and ``sum``) is summed the same way: its column's sums and the key sums of its non-zero
records are whole numbers and add up exactly too, so each crossing holds them as well (16 more
bytes a cell per such column). Until then, and for other populations, filters or means, the engine
tabulates as before.

The crossings are kept in a ``crossings`` folder inside the key store's, as ``.npy`` files the
engine maps read-only: the next start of the service, and every worker process, maps them instead
of tabulating them again (the OS shares their pages), and a key store written anew takes them with
it. One process builds at a time (a file lock); a file is written under another name and renamed,
so a reader never sees half of one, with its SHA-256 beside it, checked when it is mapped: a file
damaged on disk is tabulated again. Where the folder cannot be written (read-only, or full), they
stay in memory.
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

from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.tables.derive import COUNTS, Bottoms, Entry, Full, Refinements, expanded, plan_from

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
        fields: tuple[str, ...] = COUNTS,
    ) -> None:
        finest: dict[str, Breakdown] = {}
        for bd in offered.values():
            var = bd.classification.variable
            if var not in finest or bd.n_bottom > finest[var].n_bottom:
                finest[var] = bd
        self.refines = refines
        self.fields = fields  # what each crossing holds: counts and key sums, and the sums of additive means
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
        self._holding: dict[frozenset[str], list[Entry]] = {}  # per variable set: ready crossings holding it
        self._with: dict[str, set[frozenset[str]]] = {}  # per variable: the ready crossings that cross it
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
            entry = entry or self._kept(combo, tabulate(list(combo)))
            key = _variables(combo)
            with self._lock:
                self._tables[key] = entry
                for variable in key:
                    self._with.setdefault(variable, set()).add(key)
                self._holding.clear()

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

    def _files(self, folder: Path, combo: tuple[Breakdown, ...]) -> dict[str, Path]:
        ids = [b.id for b in combo]
        digest = hashlib.sha256("\0".join(ids).encode()).hexdigest()[:12]
        stem = "+".join("".join(c if c.isalnum() or c in "._-" else "_" for c in i) for i in ids)
        return {name: folder / f"{stem}-{digest}.{name}.npy" for name in self.fields}

    def _mapped(self, combo: tuple[Breakdown, ...]) -> Entry | None:
        """The crossing from its files, mapped read-only, if they were written before, fit it and are intact.

        Each file's SHA-256 is checked against the one written beside it, so a file damaged on disk
        (a flipped byte, a truncated write) is tabulated again rather than summed into wrong tables.
        """
        if self.folder is None:
            return None
        try:
            files = self._files(self.folder, combo)
            if any(_digest(path) != _checksum(path).read_text() for path in files.values()):
                return None
            with _LOADING:  # np.load parses each header with ast: not safe in threads on CPython 3.11.7
                fields = {name: np.load(f, mmap_mode="r") for name, f in files.items()}
        except (OSError, ValueError):
            return None
        shape = tuple(b.n_bottom for b in combo)
        if any(a.shape != shape or a.dtype != _DTYPES[name.split(".")[0]] for name, a in fields.items()):
            return None
        return Entry(combo, fields)

    def _kept(self, combo: tuple[Breakdown, ...], fields: Bottoms) -> Entry:
        """Write a tabulated crossing to its files and map them (kept in memory when they cannot be written).

        A file is written under another name, its checksum beside it, then renamed; a write that fails
        (a full disk) leaves no part behind and the crossing in memory.
        """
        kept = {name: fields[name] for name in self.fields}
        if self.folder is None:
            return Entry(combo, kept)
        parts: list[Path] = []
        try:
            for name, path in self._files(self.folder, combo).items():
                part = path.with_name(f".{path.name}.{os.getpid()}.part")
                parts.append(part)
                with part.open("wb") as out:
                    np.save(out, kept[name])
                _atomic_text(_checksum(path), _digest(part))
                os.replace(part, path)
        except OSError:
            for part in parts:
                part.unlink(missing_ok=True)
            return Entry(combo, kept)
        return self._mapped(combo) or Entry(combo, kept)

    def derive(self, bds: list[Breakdown], names: tuple[str, ...] = COUNTS) -> Full | None:
        """Fields ``names`` of the table of ``bds`` (margins included) from the smallest ready crossing holding its variables."""
        wanted = _variables(bds)
        if len(wanted) != len(bds):
            return None  # a variable twice: no crossing holds it twice
        for entry in self._holding_of(wanted):
            plan = plan_from(entry.breakdowns, bds, self.refines)
            if plan is not None:
                return expanded(entry, plan, bds, names)
        return None

    def _holding_of(self, wanted: frozenset[str]) -> list[Entry]:
        """The ready crossings holding the variables ``wanted``, smallest first (kept until another is ready)."""
        with self._lock:
            found = self._holding.get(wanted)
            if found is None:
                keys = set.intersection(*(self._with.get(v, set()) for v in wanted)) if wanted else set(self._tables)
                found = sorted((self._tables[k] for k in keys), key=lambda e: (e.cells, [b.id for b in e.breakdowns]))
                self._holding[wanted] = found
        return found


#: One np.load at a time: its header is parsed with ast.literal_eval, which crashed with
#: "SystemError: AST constructor recursion depth mismatch" when crossings were mapped from two threads
#: at once (CPython gh-106905, fixed after 3.11.7, the Python of this project).
_LOADING = threading.Lock()
_DTYPES = {"counts": np.int64, "key_sums": np.uint64, "nz_key_sums": np.uint64, "sums": np.float64}


def _checksum(path: Path) -> Path:
    """Where the SHA-256 of a crossing file is kept: beside it."""
    return path.with_name(path.name + ".sha256")


def _digest(path: Path) -> str:
    """The SHA-256 of a file, read in blocks."""
    found = hashlib.sha256()
    with path.open("rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            found.update(block)
    return found.hexdigest()


def _atomic_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` under another name, then rename (a reader never sees half of it)."""
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        part.write_text(text)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)


def _variables(bds: tuple[Breakdown, ...] | list[Breakdown]) -> frozenset[str]:
    return frozenset(b.classification.variable for b in bds)
