"""Readers and writers for foreign input: tau-ARGUS metadata and hierarchies, CSV microdata.

Pure functions over files (pyarrow, no orchestration): :mod:`cubeguard.io.hrc` for hierarchy
files, :mod:`cubeguard.io.rda` for ``.rda`` metadata, :mod:`cubeguard.io.csv_input` for streaming
delimited microdata as Arrow record batches.
"""

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
    parse_rda,
    read_rda,
    resolve_referenced_file,
)

__all__ = [
    "CsvInputError",
    "HrcCode",
    "HrcError",
    "RdaError",
    "RdaMetadata",
    "RdaTag",
    "RdaVariable",
    "TauMicrodata",
    "format_hrc",
    "hrc_leaves",
    "iter_csv_batches",
    "parse_hrc",
    "parse_rda",
    "read_hrc",
    "read_rda",
    "read_tau_microdata",
    "resolve_referenced_file",
    "write_hrc",
]
