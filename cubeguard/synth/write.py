"""Write the synthetic census to ``persons.parquet`` block by block.

Memory stays bounded by one Parquet row group plus one block: blocks are generated one at a time,
buffered until a row group is full and written. Code columns are stored as Arrow dictionary arrays
whose dictionary is the column's full code tuple (so every row group has the same dictionary and
the raw values are exactly the classification leaves); integers use the smallest type that holds
them (``age`` int8, ``yae`` int16, ``sph`` int8, ``imputed`` int8).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from cubeguard.errors import CubeguardError
from cubeguard.synth import codes
from cubeguard.synth.block import BLOCK_PERSONS, block
from cubeguard.synth.geography import GEOGRAPHIES, Geography, Layout, layout

FILE_NAME: Final = "persons.parquet"
_INT_TYPES: Final = {
    "pid": pa.int64(), "hid": pa.int64(), "age": pa.int8(), "yae": pa.int16(), "sph": pa.int8(),
    "imputed": pa.int8(),
}  # fmt: skip


@dataclass(frozen=True)
class SynthSummary:
    """What :func:`generate` wrote.

    Attributes:
        path: the Parquet file.
        geography: layout name.
        seed: generator seed.
        persons: persons written (equals the requested number).
        private_households: number of private households.
        persons_in_households: persons in private households.
        establishments: number of communal establishments.
        persons_in_ce: persons in communal establishments.
        row_groups: Parquet row groups written.
        seconds: wall-clock time taken (the only field that differs between identical runs).
    """

    path: Path
    geography: str
    seed: int
    persons: int
    private_households: int
    persons_in_households: int
    establishments: int
    persons_in_ce: int
    row_groups: int
    seconds: float


def _dictionaries(lay: Layout) -> dict[str, tuple[str, ...]]:
    d = dict(codes.CODE_COLUMNS)
    d.update(nuts1=lay.nuts1, nuts2=lay.nuts2, nuts3=lay.nuts3, lau=lay.lau)
    return d


def schema(geography: Geography) -> pa.Schema:
    """Arrow schema of ``persons.parquet`` for a geography layout."""
    dicts = _dictionaries(layout(geography))
    fields = []
    for name in codes.COLUMNS:
        if name in dicts:
            index = pa.int16() if len(dicts[name]) > 127 else pa.int8()
            fields.append(pa.field(name, pa.dictionary(index, pa.string()), nullable=False))
        elif name == "is_ref":
            fields.append(pa.field(name, pa.bool_(), nullable=False))
        elif name == "rkey":
            fields.append(pa.field(name, pa.float64(), nullable=False))
        else:
            fields.append(pa.field(name, _INT_TYPES[name], nullable=False))
    return pa.schema(fields)


def _table(cols: dict[str, npt.NDArray[np.generic]], sch: pa.Schema, dicts: dict[str, pa.Array]) -> pa.Table:
    arrays = []
    for f in sch:
        v = cols[f.name]
        if f.name in dicts:
            idx = pa.array(v.astype(f.type.index_type.to_pandas_dtype()), type=f.type.index_type)
            arrays.append(pa.DictionaryArray.from_arrays(idx, dicts[f.name]))
        else:
            arrays.append(pa.array(v, type=f.type))
    return pa.Table.from_arrays(arrays, schema=sch)


def generate(
    persons: int,
    seed: int,
    out_dir: Path,
    geography: Geography = "national",
    row_group_size: int = 1_000_000,
    progress: Callable[[int], None] | None = None,
) -> SynthSummary:
    """Write a synthetic census of ``persons`` persons to ``out_dir/persons.parquet``.

    The same ``(persons, seed, geography)`` always gives the same data, whatever
    ``row_group_size``; the file is byte-identical for the same ``row_group_size`` and pyarrow
    version.

    Args:
        persons: number of persons (>= 1); about 1.75% live in communal establishments.
        seed: non-negative integer seed.
        out_dir: directory to write into (created if missing).
        geography: ``"national"`` (7 NUTS 1, 17 NUTS 2, 73 NUTS 3, 2,477 LAU) or
            ``"two_regions"`` (the Eurostat test hypercube's two NUTS 2 regions).
        row_group_size: rows per Parquet row group (the last one may be shorter).
        progress: called after each block with the number of persons it added (an increment).

    Returns:
        Counts of what was written.

    Raises:
        CubeguardError: if an argument is out of range.
    """
    errors = []
    if isinstance(persons, bool) or not isinstance(persons, int) or persons < 1:
        errors.append(f"persons must be a positive integer, got {persons!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        errors.append(f"seed must be a non-negative integer, got {seed!r}")
    if geography not in GEOGRAPHIES:
        errors.append(f"geography must be one of {', '.join(map(repr, GEOGRAPHIES))}, got {geography!r}")
    if isinstance(row_group_size, bool) or not isinstance(row_group_size, int) or row_group_size < 1:
        errors.append(f"row_group_size must be a positive integer, got {row_group_size!r}")
    if errors:
        raise CubeguardError("; ".join(errors))

    t0 = time.perf_counter()
    lay = layout(geography)
    sch = schema(geography)
    dicts = {k: pa.array(v, type=pa.string()) for k, v in _dictionaries(lay).items()}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / FILE_NAME

    totals = {"households": 0, "establishments": 0, "ce": 0}
    pending: list[dict[str, npt.NDArray[np.generic]]] = []
    pending_rows = 0
    row_groups = 0
    pid0, hid0, done = 1, 1, 0
    # One writer thread: Arrow compresses and writes a row group (releasing the GIL) while the
    # next blocks are generated. At most one write is in flight, so the order of row groups is
    # the order of blocks and memory holds at most two row groups.
    with (
        pq.ParquetWriter(path, sch, compression="zstd", use_dictionary=True) as writer,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        in_flight: Future[None] | None = None

        def flush(rows: int) -> None:
            nonlocal pending, pending_rows, row_groups, in_flight
            merged = {k: np.concatenate([p[k] for p in pending]) for k in pending[0]}
            table = _table({k: v[:rows] for k, v in merged.items()}, sch, dicts)
            if in_flight is not None:
                in_flight.result()
            in_flight = pool.submit(writer.write_table, table, row_group_size=rows)
            row_groups += 1
            rest = {k: v[rows:] for k, v in merged.items()}
            pending = [rest] if rows < pending_rows else []
            pending_rows -= rows

        for i in range(-(-persons // BLOCK_PERSONS)):
            n = min(BLOCK_PERSONS, persons - i * BLOCK_PERSONS)
            cols, stats = block(seed, i, n, lay, pid0, hid0)
            pid0 += n
            hid0 += stats.private_households + stats.establishments
            totals["households"] += stats.private_households
            totals["establishments"] += stats.establishments
            totals["ce"] += stats.persons_in_ce
            pending.append(cols)
            pending_rows += n
            while pending_rows >= row_group_size:
                flush(row_group_size)
            done += n
            if progress is not None:
                progress(n)
        if pending_rows:
            flush(pending_rows)
        if in_flight is not None:
            in_flight.result()

    return SynthSummary(
        path=path, geography=geography, seed=seed, persons=persons,
        private_households=totals["households"], persons_in_households=persons - totals["ce"],
        establishments=totals["establishments"], persons_in_ce=totals["ce"], row_groups=row_groups,
        seconds=time.perf_counter() - t0,
    )  # fmt: skip
