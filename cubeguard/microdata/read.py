"""Stream microdata in Arrow record batches, never holding more than one batch of it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cubeguard.config.models import InputSpec
from cubeguard.errors import CubeguardError


def count_records(spec: InputSpec) -> int | None:
    """Number of records if cheaply known (Parquet metadata), else None."""
    if spec.format == "parquet" and spec.microdata.exists():
        return int(_parquet(spec.microdata).metadata.num_rows)
    return None


def available_columns(spec: InputSpec) -> list[str]:
    """Column names of the microdata."""
    if spec.format == "parquet":
        return list(_parquet(spec.microdata).schema_arrow.names)
    first = next(iter_batches(spec, None, 1000), None)
    if first is None or first.num_rows == 0:
        raise CubeguardError(
            f"microdata {spec.microdata} has no records (a header at most); point input.microdata at the census file"
        )
    return list(first.schema.names)


def iter_batches(
    spec: InputSpec, columns: list[str] | None, batch_size: int = 1_000_000, row_groups: list[int] | None = None
) -> Iterator[pa.RecordBatch]:
    """Record batches of the microdata, restricted to ``columns`` (all if None).

    ``row_groups`` reads only those Parquet row groups (a partition of the file, see :func:`partitions`).
    """
    if spec.format == "parquet":
        yield from _parquet(spec.microdata).iter_batches(batch_size=batch_size, columns=columns, row_groups=row_groups)
        return
    if row_groups is not None:
        raise CubeguardError(f"input format {spec.format} has no row groups; partitioned reading needs Parquet")
    from cubeguard.microdata.foreign import iter_foreign_batches

    yield from iter_foreign_batches(spec, columns, batch_size)


def partitions(spec: InputSpec, parts: int) -> list[tuple[list[int], int]]:
    """Split a Parquet file's row groups into up to ``parts`` contiguous runs: (row groups, first row).

    Other formats, or a file of one row group, give one partition that reads everything.
    """
    if spec.format != "parquet" or parts <= 1:
        return [([], 0)]
    meta = _parquet(spec.microdata).metadata
    groups = meta.num_row_groups
    if groups <= 1:
        return [([], 0)]
    bounds = [round(k * groups / min(parts, groups)) for k in range(min(parts, groups) + 1)]
    rows = [meta.row_group(g).num_rows for g in range(groups)]
    return [(list(range(a, b)), sum(rows[:a])) for a, b in itertools.pairwise(bounds)]


def _parquet(path: Path) -> pq.ParquetFile:
    if not path.exists():
        raise CubeguardError(
            f"microdata file {path} does not exist; check input.microdata or add input.synthetic to generate it"
        )
    if path.is_dir():
        raise CubeguardError(f"microdata {path} is a folder, not a file; point input.microdata at the census file")
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CubeguardError(
            f"microdata file {path} is not a readable Parquet file ({exc}); check input.format"
        ) from None
