"""Readers and writers for foreign input: tau-ARGUS metadata, hierarchies and microdata, CSV microdata.

Pure functions over files (pyarrow, no orchestration): :mod:`cubeguard.io.hrc` for hierarchy
files, :mod:`cubeguard.io.rda` for ``.rda`` metadata, :mod:`cubeguard.io.csv_input` for streaming
delimited microdata as Arrow record batches, :mod:`cubeguard.io.asc` and
:mod:`cubeguard.io.asc_write` for tau-ARGUS fixed-format ``.asc`` microdata, and
:mod:`cubeguard.io.tau_export` for writing a release's microdata as tau-ARGUS input.
"""

from cubeguard.io.asc import AscError, iter_asc_batches
from cubeguard.io.asc_write import fixed_layout, write_asc
from cubeguard.io.csv_input import CsvInputError, TauMicrodata, iter_csv_batches, read_tau_microdata
from cubeguard.io.hrc import (
    HrcCode,
    HrcError,
    format_hrc,
    hrc_leaves,
    parse_hrc,
    read_hrc,
    write_hrc,
)
from cubeguard.io.rda import (
    RdaError,
    RdaMetadata,
    RdaTag,
    RdaVariable,
    format_rda,
    parse_rda,
    read_rda,
    resolve_referenced_file,
    write_rda,
)

__all__ = [
    "AscError",
    "CsvInputError",
    "HrcCode",
    "HrcError",
    "RdaError",
    "RdaMetadata",
    "RdaTag",
    "RdaVariable",
    "TauMicrodata",
    "fixed_layout",
    "format_hrc",
    "format_rda",
    "hrc_leaves",
    "iter_asc_batches",
    "iter_csv_batches",
    "parse_hrc",
    "parse_rda",
    "read_hrc",
    "read_rda",
    "read_tau_microdata",
    "resolve_referenced_file",
    "write_asc",
    "write_hrc",
    "write_rda",
]
