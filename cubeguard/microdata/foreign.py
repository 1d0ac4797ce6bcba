"""Microdata made by other systems: delimited text (CSV) and tau-ARGUS free- or fixed-format files."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from cubeguard.config.models import CsvSpec, InputSpec
from cubeguard.errors import CubeguardError
from cubeguard.io.csv_input import iter_csv_batches, read_tau_microdata
from cubeguard.io.rda import read_rda

BLOCK_BYTES = 16 << 20


def iter_foreign_batches(spec: InputSpec, columns: list[str] | None, batch_size: int) -> Iterator[pa.RecordBatch]:
    """Record batches of CSV or tau-ARGUS microdata, restricted to ``columns`` (all if None).

    Record keys and declared numeric columns are read as numbers, everything else as
    dictionary-encoded strings. ``batch_size`` is honoured approximately (blocks of bytes).
    """
    csv = spec.csv or CsvSpec()
    if spec.format == "tau":
        if csv.metadata is None:
            raise CubeguardError("input.format tau needs input.csv.metadata (the tau-ARGUS .rda file); add it")
        _, batches = read_tau_microdata(spec.microdata, csv.metadata, block_size=BLOCK_BYTES)
    else:
        names = csv.columns or (read_rda(csv.metadata) if csv.metadata else None)
        numeric = set(csv.numeric)
        if spec.record_key.generate_seed is None:  # keys read from the file are numbers
            numeric.add(spec.record_key.column)
        batches = iter_csv_batches(
            spec.microdata,
            delimiter=csv.delimiter,
            header=csv.header,
            columns=names,
            numeric=numeric,
            block_size=BLOCK_BYTES,
        )
    for batch in batches:
        yield _select(batch, columns)


def _select(batch: pa.RecordBatch, columns: list[str] | None) -> pa.RecordBatch:
    if columns is None:
        return batch
    missing = [c for c in columns if c not in batch.schema.names]
    if missing:
        raise CubeguardError(f"microdata has no column {missing[0]!r}; rename the column or fix the config")
    return batch.select(columns)
