"""A protected table as JSON, CSV or SDMX-CSV: one row per cell, the same rows in every format.

Rows come from :func:`cubeguard.cubes.export.cell_table`, as the published cubes' exports do, so a
table's CSV has the layout of a published cube's CSV. Only published values appear: the count,
and the mean as m / n-hat where one was asked for.
"""

from __future__ import annotations

import io
import math
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

from cubeguard.cubes.export import cell_table
from cubeguard.tables.engine import Answer

MEDIA = {"json": "application/json", "csv": "text/csv", "sdmx-csv": "application/vnd.sdmx.data+csv; version=1.0.0"}
TABLE_ID = "TABLE"


def rows(answer: Answer, fmt: str) -> pa.Table:
    """The cells as an Arrow table in the format's columns (``csv`` columns for JSON)."""
    table = answer.table
    flat = cell_table(table["count"], {"cube_id": TABLE_ID}, "csv" if fmt == "json" else fmt)
    if "mean" in table and fmt != "sdmx-csv":
        flat = flat.append_column("mean", pa.array(table["mean"].values.ravel()))
    return flat


def as_text(answer: Answer, fmt: str) -> str:
    """CSV or SDMX-CSV text."""
    sink = io.BytesIO()
    pacsv.write_csv(rows(answer, fmt), sink)
    return sink.getvalue().decode("utf-8")


def as_json(answer: Answer) -> dict[str, Any]:
    """The table with its dimensions (codes, labels, parents, depths) and one row per cell."""
    table = answer.table
    dims = []
    for bid in table["count"].dims:
        dims.append(
            {
                "id": str(bid),
                "codes": [str(c) for c in table[bid].values],
                "labels": [str(c) for c in table[f"{bid}.label"].values],
                "parents": [str(c) for c in table[f"{bid}.parent"].values],
                "depths": [int(c) for c in table[f"{bid}.depth"].values],
            }
        )
    flat = rows(answer, "json")
    values = [list(r.values()) for r in flat.to_pylist()]
    return {
        "release_id": table.attrs["release_id"],
        "population": table.attrs["population"],
        "unit": table.attrs["unit"],
        "filters": table.attrs["filters"],
        "mean": answer.query.mean,
        "dimensions": dims,
        "columns": flat.column_names,
        "rows": [[None if isinstance(v, float) and math.isnan(v) else v for v in row] for row in values],
    }
