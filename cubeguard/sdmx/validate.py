"""Check an SDMX-CSV file against an SDMX-ML structure message, as a Census Hub upload is checked.

pysdmx reads the structure message (validating it against the SDMX-ML XSD) into dataflows and data
structure definitions. The data file is then read block by block with every field as text and held
to the dataflow's DSD: the header names the structure columns of its SDMX-CSV version and exactly
the DSD's components; every row names the same dataflow; each coded component holds only codes of
its code list; ``TIME_PERIOD`` is a period; ``OBS_VALUE`` a non-negative integer; and no two rows
have the same key (dimension values). Every problem is collected (a few examples each), then
reported at once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from pysdmx.errors import PysdmxError
from pysdmx.io import read_sdmx
from pysdmx.model import Dataflow, DataStructureDefinition, Role

from cubeguard.errors import CubeguardError

_REF = re.compile(r"(?:.*=)?(?P<agency>[^:]+):(?P<id>[^(]+)\((?P<version>[^)]+)\)")
_PERIOD = re.compile(r"[0-9]{4}(-(A1|S[12]|Q[1-4]|M(0[1-9]|1[0-2])|[0-9]{2}(-[0-9]{2})?))?")
LEAD = {"2.0": ("STRUCTURE", "STRUCTURE_ID", "ACTION"), "1.0": ("DATAFLOW",)}
EXAMPLES = 5
BLOCK_BYTES = 64 << 20  # rows are read this many bytes at a time (~1M rows of a census cube)


class SdmxValidationError(CubeguardError):
    """An SDMX-CSV file that does not conform to its data structure definition."""

    def __init__(self, path: Path, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        shown = "; ".join(self.problems[:EXAMPLES])
        more = f" (and {len(self.problems) - EXAMPLES} more)" if len(self.problems) > EXAMPLES else ""
        super().__init__(f"{path.name} does not conform to its SDMX structure: {shown}{more}")


@dataclass(frozen=True)
class Conformance:
    """A data file's rows checked against its dataflow: how many rows, and what was wrong."""

    dataflow: str
    rows: int
    problems: list[str] = field(default_factory=list)


def read_structures(path: Path) -> dict[str, DataStructureDefinition]:
    """The DSD of every dataflow of an SDMX-ML structure message, keyed ``AGENCY:ID(VERSION)``.

    A release reads its structure file twice (the config check, then the publish step): the file
    is parsed once per content (path, size and modification time); the DSDs are frozen.
    """
    if not path.is_file():
        raise CubeguardError(f"structure file {path} does not exist")
    stat = path.stat()
    return dict(_parsed(str(path.resolve()), stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=4)
def _parsed(path_text: str, size: int, mtime_ns: int) -> dict[str, DataStructureDefinition]:
    path = Path(path_text)
    try:
        message = read_sdmx(path, validate=True)
    except (PysdmxError, OSError, ValueError) as exc:
        raise CubeguardError(f"{path} is not a readable SDMX-ML structure message: {exc}") from exc
    found = list(message.structures or [])
    dsds = {_key(s.agency, s.id, s.version): s for s in found if isinstance(s, DataStructureDefinition)}
    out = {}
    for flow in (s for s in found if isinstance(s, Dataflow)):
        target = flow.structure if isinstance(flow.structure, str) else _key(*_ids(flow.structure))
        match = _REF.fullmatch(str(target))
        dsd = dsds.get(_key(match["agency"], match["id"], match["version"])) if match else None
        if dsd is not None:
            out[_key(flow.agency, flow.id, flow.version)] = dsd
    if not out:
        raise CubeguardError(f"{path} holds no dataflow with its data structure definition")
    return out


def _ids(obj: Any) -> tuple[str, str, str]:
    return str(obj.agency if isinstance(obj.agency, str) else obj.agency.id), str(obj.id), str(obj.version)


def _key(agency: Any, ident: str, version: str) -> str:
    return f"{agency if isinstance(agency, str) else agency.id}:{ident}({version})"


def validate_csv(data: Path, structures: dict[str, DataStructureDefinition]) -> Conformance:
    """Check SDMX-CSV file ``data`` against ``structures``; raise :class:`SdmxValidationError` if it fails."""
    reader = pacsv.open_csv(
        data,
        read_options=pacsv.ReadOptions(block_size=BLOCK_BYTES),
        convert_options=pacsv.ConvertOptions(column_types=_all_text(data)),
    )
    header = reader.schema.names
    version = "2.0" if header[:1] == ["STRUCTURE"] else "1.0"
    problems = (
        [f"the header starts {header[:3]}, not {list(LEAD[version])}"]
        if tuple(header[: len(LEAD[version])]) != LEAD[version]
        else []
    )
    ref_col = "STRUCTURE_ID" if version == "2.0" else "DATAFLOW"
    first = next(iter(reader), None)
    if first is None or first.num_rows == 0 or problems:
        raise SdmxValidationError(data, problems or ["the file has no rows"])
    flow = str(first.column(ref_col)[0])
    dsd = structures.get(flow)
    if dsd is None:
        raise SdmxValidationError(
            data, [f"dataflow {flow} is not in the structure message; known: {', '.join(sorted(structures)[:5])}"]
        )
    check = _Checker(dsd, flow, version, header)
    for batch in _chain(first, reader):
        check.rows(batch)
    problems = check.finish()
    if problems:
        raise SdmxValidationError(data, problems)
    return Conformance(flow, check.count)


def _all_text(data: Path) -> dict[str, pa.DataType]:
    with data.open("r", encoding="utf-8") as f:
        names = f.readline().rstrip("\r\n").split(",")
    return dict.fromkeys(names, pa.string())


def _chain(first: pa.RecordBatch, reader: Any) -> Any:
    yield first
    yield from reader


class _Checker:
    """The checks of one file, fed block by block."""

    def __init__(self, dsd: DataStructureDefinition, flow: str, version: str, header: list[str]) -> None:
        comps = list(dsd.components)
        self.flow, self.version, self.count = flow, version, 0
        self.dims = [c.id for c in comps if c.role == Role.DIMENSION]
        self.codes = {c.id: [code.id for code in c.enumeration] for c in comps if c.enumeration is not None}
        self.allowed = {c: pa.array(codes, type=pa.string()) for c, codes in self.codes.items()}
        self.problems: list[str] = []
        expected = [c.id for c in comps]
        body = header[len(LEAD[version]) :]
        missing = [c.id for c in comps if c.required and c.id not in body]
        extra = [h for h in body if h not in expected]
        if missing:
            self.problems.append(f"the header lacks component(s) {', '.join(missing)} of {dsd.id}")
        if extra:
            self.problems.append(f"the header has column(s) {', '.join(extra)} that {dsd.id} does not define")
        self.keys: list[np.ndarray] = []
        self.periods: dict[str, int] = {}

    def rows(self, batch: pa.RecordBatch) -> None:
        table = pa.Table.from_batches([batch])
        ref = "STRUCTURE_ID" if self.version == "2.0" else "DATAFLOW"
        self._constant(table, ref, self.flow)
        if self.version == "2.0":
            self._constant(table, "STRUCTURE", "dataflow")
            self._constant(table, "ACTION", "I")
        index = [self._coded(table, c) for c in self.codes if c in table.column_names]
        self._value(table)
        self._period(table)
        self._key(table, index)
        self.count += table.num_rows

    def _constant(self, table: pa.Table, column: str, value: str) -> None:
        other = pc.unique(table.column(column)).to_pylist()
        if other != [value]:
            self._add(f"column {column} holds {sorted(set(other) - {value})[:EXAMPLES]} where it must hold {value}")

    def _coded(self, table: pa.Table, column: str) -> tuple[str, np.ndarray]:
        found = pc.index_in(table.column(column), value_set=self.allowed[column])
        bad = pc.unique(pc.filter(table.column(column), pc.is_null(found))).to_pylist()
        if bad:
            self._add(f"{column} holds {bad[:EXAMPLES]}, not codes of its code list")
        return column, pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)

    def _value(self, table: pa.Table) -> None:
        values = table.column("OBS_VALUE")
        bad = pc.filter(values, pc.invert(pc.match_substring_regex(values, r"^[0-9]+$"))).to_pylist()
        if bad:
            self._add(f"OBS_VALUE holds {sorted(set(bad))[:EXAMPLES]}, not non-negative integers")

    def _period(self, table: pa.Table) -> None:
        if "TIME_PERIOD" not in table.column_names:
            return
        bad = [p for p in pc.unique(table.column("TIME_PERIOD")).to_pylist() if not _PERIOD.fullmatch(str(p))]
        if bad:
            self._add(f"TIME_PERIOD holds {bad[:EXAMPLES]}, not SDMX periods")

    def _key(self, table: pa.Table, index: list[tuple[str, np.ndarray]]) -> None:
        """One integer per row from its dimensions' code positions (mixed radix), for the duplicate check."""
        key = np.zeros(table.num_rows, dtype=np.int64)
        coded = np.ones(table.num_rows, dtype=bool)  # rows with an unknown code are reported already
        for column, positions in index:
            if column in self.dims:
                key = key * len(self.codes[column]) + positions
                coded &= positions >= 0
        if "TIME_PERIOD" in self.dims and "TIME_PERIOD" in table.column_names:
            column = table.column("TIME_PERIOD")
            for period in pc.unique(column).to_pylist():
                self.periods.setdefault(str(period), len(self.periods))
            known = pa.array(list(self.periods))
            key = key * 10_000 + pc.index_in(column, value_set=known).to_numpy(zero_copy_only=False).astype(np.int64)
        self.keys.append(key[coded])

    def finish(self) -> list[str]:
        keys = np.sort(np.concatenate(self.keys)) if self.keys else np.zeros(0, np.int64)
        repeated = int(np.count_nonzero(keys[1:] == keys[:-1]))  # np.unique: 42 s on 12M keys (numpy 2.4), sort: 0.2 s
        if repeated:
            self._add(f"{repeated} row(s) repeat the key of another row")
        return self.problems

    def _add(self, problem: str) -> None:
        if problem not in self.problems:
            self.problems.append(problem)
