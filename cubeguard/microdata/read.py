"""Stream microdata in Arrow record batches, never holding more than one batch of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cubeguard.config.models import InputSpec
from cubeguard.errors import CubeguardError


def count_records(spec: InputSpec) -> int | None:
    """Number of records if cheaply known (Parquet metadata), else None."""
    if spec.format == "parquet" and spec.microdata.exists():
        return int(pq.ParquetFile(spec.microdata).metadata.num_rows)
    return None


def available_columns(spec: InputSpec) -> list[str]:
    """Column names of the microdata."""
    if spec.format == "parquet":
        return list(_parquet(spec.microdata).schema_arrow.names)
    first = next(iter_batches(spec, None, 1000), None)
    return list(first.schema.names) if first is not None else []


def iter_batches(spec: InputSpec, columns: list[str] | None, batch_size: int = 1_000_000) -> Iterator[pa.RecordBatch]:
    """Record batches of the microdata, restricted to ``columns`` (all if None)."""
    if spec.format == "parquet":
        yield from _parquet(spec.microdata).iter_batches(batch_size=batch_size, columns=columns)
        return
    from cubeguard.microdata.foreign import iter_foreign_batches

    yield from iter_foreign_batches(spec, columns, batch_size)


def _parquet(path: Path) -> pq.ParquetFile:
    if not path.exists():
        raise CubeguardError(
            f"microdata file {path} does not exist; check input.microdata or add input.synthetic to generate it"
        )
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CubeguardError(
            f"microdata file {path} is not a readable Parquet file ({exc}); check input.format"
        ) from None
