"""SDMX-CSV 2.0 (and 1.0) of one cube, block by block, in the layout pysdmx writes.

SDMX-CSV 2.0 (SDMX 3.0 technical standard, section 6, "SDMX-CSV") starts every row with
``STRUCTURE,STRUCTURE_ID,ACTION`` (``dataflow``, ``AGENCY:ID(VERSION)``, ``I`` for information);
1.0 starts it with ``DATAFLOW``. Then come the DSD's components: the cube's dimensions, TIME_PERIOD,
OBS_VALUE, OBS_STATUS and CONF_STATUS. The header line is pysdmx's (its writer is given the cube's
schema and one row); the rows are written by Arrow a block of cells at a time, so a cube of
millions of cells never becomes one data frame. Every field is an SDMX id, a period or an integer,
so no field needs quoting; ``tests/unit/test_sdmx_csv.py`` checks the bytes against pysdmx's own
writer on a whole cube.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import xarray as xr
from pysdmx.io import write_sdmx
from pysdmx.io.format import Format
from pysdmx.io.pd import PandasDataset

from cubeguard.cubes.export import code_column, count_blocks
from cubeguard.cubes.store import open_cube
from cubeguard.sdmx.layout import CubeLayout, layout_of_cube
from cubeguard.sdmx.spec import SdmxSpec
from cubeguard.sdmx.structure import cube_schema

CsvVersion = Literal["2.0", "1.0"]
FORMATS = {"2.0": Format.DATA_SDMX_CSV_2_0_0, "1.0": Format.DATA_SDMX_CSV_1_0_0}
#: CONF_STATUS of every row of an export that is not a published release (not for publication).
INTERNAL_CONF_STATUS = "N"
BLOCK_CELLS = 2_000_000


def export_sdmx_csv(
    store: Path,
    cube_id: str,
    spec: SdmxSpec,
    target: Path,
    *,
    internal: bool = False,
    version: CsvVersion | None = None,
) -> Path:
    """Write cube ``cube_id`` of ``store`` as SDMX-CSV (``spec.csv_version`` unless ``version``)."""
    cube = open_cube(store, cube_id, dask=False)
    layout = layout_of_cube(spec, cube)
    csv_version = version or spec.csv_version
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as sink:
        sink.write(header_line(layout, csv_version, internal).encode())
        options = pacsv.WriteOptions(include_header=False, quoting_style="none")
        for block in count_blocks(cube, BLOCK_CELLS):
            pacsv.write_csv(sdmx_rows(block, layout, csv_version, internal), sink, options)
    return target


def header_line(layout: CubeLayout, version: CsvVersion, internal: bool = False) -> str:
    """The header line pysdmx writes for this cube's dataflow (with its line end)."""
    first = [pa.array(list(d.sdmx_codes[:1])) for d in layout.dimensions]
    frame = _frame(pa.table(_columns(layout, version, first, np.zeros(1, np.int64), internal)), version)
    text = str(write_sdmx(PandasDataset(structure=cube_schema(layout), data=frame), sdmx_format=FORMATS[version]))
    return text.splitlines(keepends=True)[0]


def pysdmx_csv(cube: xr.Dataset, spec: SdmxSpec, version: CsvVersion, internal: bool = False) -> str:
    """The whole cube as SDMX-CSV written by pysdmx alone (the reference the block writer is held to)."""
    layout = layout_of_cube(spec, cube)
    frame = _frame(sdmx_rows(cube["count"], layout, version, internal), version)
    return str(write_sdmx(PandasDataset(structure=cube_schema(layout), data=frame), sdmx_format=FORMATS[version]))


def _frame(table: pa.Table, version: CsvVersion) -> pd.DataFrame:
    """The rows without their leading structure columns, which pysdmx adds itself."""
    return table.drop_columns(_LEAD[version]).to_pandas()


def sdmx_rows(block: xr.DataArray, layout: CubeLayout, version: CsvVersion, internal: bool = False) -> pa.Table:
    """One SDMX-CSV row per cell of ``block`` (C order), its dimensions in the layout's order."""
    by_dim = {d.breakdown: d for d in layout.dimensions}
    codes = []
    for axis, name in enumerate(block.dims):
        dim = by_dim[str(name)]
        position = {c: i for i, c in enumerate(dim.codes)}
        wanted = [dim.sdmx_codes[position[str(c)]] for c in block[name].values.tolist()]
        codes.append(code_column(block.shape, axis, wanted).cast(pa.string()))
    return pa.table(_columns(layout, version, codes, block.values.ravel(), internal))


_LEAD = {"2.0": ["STRUCTURE", "STRUCTURE_ID", "ACTION"], "1.0": ["DATAFLOW"]}


def _columns(
    layout: CubeLayout, version: CsvVersion, codes: list[pa.Array], values: np.ndarray, internal: bool
) -> dict[str, pa.Array]:
    """Columns of the rows: structure (and action), dimensions, time, value and attributes."""
    n = len(values)
    lead = ["dataflow", layout.dataflow_ref, "I"] if version == "2.0" else [layout.dataflow_ref]
    cols = {name: _repeat(value, n) for name, value in zip(_LEAD[version], lead, strict=True)}
    cols.update({dim.id: column for dim, column in zip(layout.dimensions, codes, strict=True)})
    cols["TIME_PERIOD"] = _repeat(layout.time_period, n)
    cols["OBS_VALUE"] = pa.array(np.asarray(values, dtype=np.int64))
    cols["OBS_STATUS"] = _repeat(layout.obs_status, n)
    cols["CONF_STATUS"] = _repeat(INTERNAL_CONF_STATUS if internal else layout.conf_status, n)
    return cols


def _repeat(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value])).cast(pa.string())
