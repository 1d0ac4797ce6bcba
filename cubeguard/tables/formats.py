"""A protected table as JSON-stat, CSV, SDMX-CSV or XLSX bytes.

JSON is JSON-stat 2.0 (the format of Eurostat's and many offices' dissemination APIs): the
dimensions with their codes, labels and hierarchy (``child``), and the published counts as one
``value`` array in row-major order over the dimensions; the release, population, filters and
means (perturbed sum / perturbed count, ``null`` where the published count is 0) go in ``extension``. CSV and SDMX-CSV
have one row per cell in the layout of a published cube's export (:func:`cubeguard.cubes.export.cell_table`,
:func:`cubeguard.sdmx.csv.sdmx_rows`: SDMX-CSV 2.0 under the release's SDMX names, dataflow
``CENSUS_TABLE``); CSV has a ``<breakdown>.label`` column beside each code column. XLSX is one sheet
of the same rows as CSV (codes, labels, count, mean). Only published values appear; the cells of an area a ``per_area`` query withheld
are ``null`` in JSON-stat (named with their rule in ``extension.withheld``), empty in CSV and XLSX and
absent from SDMX-CSV.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.csv as pacsv
from openpyxl import Workbook

from cubeguard.cubes.export import cell_table, code_column
from cubeguard.cubes.hierarchy import Breakdown, PerBreakdown
from cubeguard.sdmx.csv import header_line, sdmx_rows
from cubeguard.sdmx.layout import breakdown_codes, cube_layout
from cubeguard.sdmx.spec import SdmxSpec
from cubeguard.tables.engine import Answer
from cubeguard.tables.json_means import means_json
from cubeguard.tables.query import TableRefused

MEDIA = {
    "json": "application/json",
    "csv": "text/csv; charset=utf-8",
    "sdmx-csv": "application/vnd.sdmx.data+csv; version=2.0.0",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}
TABLE_ID = "TABLE"
XLSX_MAX_ROWS = 1_048_576  # rows of a worksheet (Excel's limit), the header row included


def encode(answer: Answer, fmt: str, sdmx: SdmxSpec | None = None) -> bytes:
    """The table in ``fmt`` (``json``, ``csv``, ``sdmx-csv`` under ``sdmx``'s names, or ``xlsx``).

    Raises:
        TableRefused: an XLSX answer with more cells than a worksheet has rows.
    """
    if fmt == "json":
        return _fitted(orjson.dumps(json_stat(answer), option=orjson.OPT_SERIALIZE_NUMPY))
    if fmt == "sdmx-csv":
        layout = cube_layout(sdmx or SdmxSpec(), TABLE_ID, "", breakdown_codes(answer.table))
        observations = sdmx_rows(answer.table["count"], layout, "2.0")
        withheld = withheld_cells(answer)
        if withheld is not None:  # a withheld area has no observation
            observations = observations.filter(pa.array(~withheld))
        return (header_line(layout, "2.0") + _csv(observations, False)).encode()
    if fmt == "xlsx":
        return xlsx(answer)
    return _csv(rows(answer), True).encode()


def _fitted(body: bytes) -> bytes:
    """``body`` in a bytes object of its own length.

    orjson (3.13) returns its output in the buffer it grew while writing, up to several times
    longer than the JSON (a 3.1 MB table held 8.3 MB). A service keeps answers in its cache, so
    the slack stayed allocated: 200 new 4-way tables held 1.1 GB for 122 MB of JSON, and the heap
    grew into fresh pages the kernel zeroed for every table. The copy costs a memcpy of the JSON.
    """
    return bytes(memoryview(body))


def xlsx(answer: Answer) -> bytes:
    """The rows of :func:`rows` as one worksheet: a header, then one row per cell (missing values empty).

    Raises:
        TableRefused: more cells than a worksheet has rows (the CSV has no such limit).
    """
    if answer.count.size + 1 > XLSX_MAX_ROWS:
        raise TableRefused(
            "xlsx_rows",
            f"the table has {answer.count.size:,} cells but a worksheet holds {XLSX_MAX_ROWS - 1:,}; "
            "ask for format=csv, or choose coarser levels",
            "format",
        )
    flat = rows(answer)
    book = Workbook(write_only=True)
    sheet = book.create_sheet("table")
    sheet.append(flat.column_names)
    columns = [column.to_pylist() for column in flat.columns]
    for row in zip(*columns, strict=True):
        sheet.append(list(row))
    sink = io.BytesIO()
    book.save(sink)
    return sink.getvalue()


def withheld_cells(answer: Answer) -> np.ndarray | None:
    """Per cell (C order), whether it lies in an area a ``per_area`` query withheld; None when none was."""
    if not answer.withheld:
        return None
    mask = np.zeros(answer.count.shape, dtype=bool)
    mask[[i for i, _ in answer.withheld]] = True
    return mask.ravel()


def _withheld_note(answer: Answer) -> list[dict[str, str]]:
    first = answer.breakdowns[0].codes
    return [{"code": first[i], "rule": rule} for i, rule in answer.withheld]


def _csv(table: pa.Table, header: bool) -> str:
    sink = io.BytesIO()
    pacsv.write_csv(
        table, sink, pacsv.WriteOptions(include_header=header, quoting_style="needed" if header else "none")
    )
    return sink.getvalue().decode()


def rows(answer: Answer) -> pa.Table:
    """One row per cell: per dimension its code and ``<id>.label`` columns, the count, and the mean if asked for."""
    table = answer.table
    flat = cell_table(table["count"], "csv")
    shape = answer.count.shape
    for axis, bd in enumerate(answer.breakdowns):
        labels = [label or code for code, label in zip(bd.codes, bd.labels, strict=True)]
        column = code_column(shape, axis, labels).cast(pa.string())
        flat = flat.add_column(flat.schema.get_field_index(bd.id) + 1, f"{bd.id}.label", column)
    withheld = withheld_cells(answer)
    if withheld is not None:  # empty, not the 0 the answer holds
        counts = pa.array(answer.count.ravel(), mask=withheld)
        flat = flat.set_column(flat.schema.get_field_index("count"), "count", counts)
    if "mean" in table:
        # NaN (no published count, or a withheld area) is empty, as JSON-stat's null, never "nan"
        flat = flat.append_column("mean", pa.array(table["mean"].values.ravel(), from_pandas=True))
    return flat


def json_stat(answer: Answer) -> dict[str, Any]:
    """The table as a JSON-stat 2.0 dataset (each dimension as pre-encoded JSON, :class:`orjson.Fragment`)."""
    dims = [b.id for b in answer.breakdowns]
    attrs = answer.attrs
    extension: dict[str, Any] = {
        "release_id": attrs["release_id"],
        "population": attrs["population"],
        "unit": attrs["unit"],
        "filters": attrs["filters"],
        "protection": "published counts (release's protection step); means as perturbed sum / perturbed count",
    }
    withheld = withheld_cells(answer)
    if withheld is not None:
        extension["withheld"] = _withheld_note(answer)
    if answer.mean is not None:
        means = np.ascontiguousarray(answer.mean.ravel(), dtype=np.float64)
        # the JSON orjson writes, without the GIL (json_means); else orjson writes the float array as it is,
        # NaN (no published count) as null: 1 ms, not 16, for 35,000 cells
        written = means_json(means, answer.mean_decimals) if answer.mean_decimals is not None else None
        extension["mean"] = {"of": answer.query.mean, "value": means if written is None else orjson.Fragment(written)}
    return {
        "version": "2.0",
        "class": "dataset",
        "label": " by ".join(dims),
        "id": dims,
        "size": list(answer.count.shape),
        "dimension": {b.id: _dimension(b) for b in answer.breakdowns},
        "value": _values(answer.count, withheld),
        "extension": extension,
    }


def _values(count: np.ndarray, withheld: np.ndarray | None) -> Any:
    """The counts row-major (orjson writes an int64 array as it is); a withheld area's cells as null."""
    if withheld is None:
        return np.ascontiguousarray(count.ravel(), dtype=np.int64)
    return [None if hidden else int(v) for v, hidden in zip(count.ravel().tolist(), withheld.tolist(), strict=True)]


def _dimension_json(bd: Breakdown) -> orjson.Fragment:
    """A breakdown's JSON-stat dimension (codes, labels, hierarchy) as encoded JSON."""
    codes = bd.codes
    child: dict[str, list[str]] = {}
    for code, parent in zip(codes, bd.parents, strict=True):
        if parent:
            child.setdefault(parent, []).append(code)
    category = {
        "index": codes,
        "label": {c: label or c for c, label in zip(codes, bd.labels, strict=True)},
        "child": child,
    }
    return orjson.Fragment(orjson.dumps({"label": bd.id, "category": category}))


_dimension = PerBreakdown(_dimension_json)  # encoded once per breakdown
