"""Write microdata as tau-ARGUS input: the data file, its ``.rda`` metadata and one ``.hrc`` per hierarchy.

tau-ARGUS 4.2 user's manual, section 5.1 "Meta data files": the data in fixed format
(``microdata.asc``, :func:`cubeguard.io.asc_write.write_asc`) or free format (``microdata.csv``,
separator ``;``), the metadata in the layout tau-ARGUS writes itself
(:func:`cubeguard.io.rda.format_rda`), and each hierarchical classification as a ``.hrc`` file
with lead string ``@`` (:func:`cubeguard.io.hrc.format_hrc`).

Hierarchy codes. tau-ARGUS matches a data code, right-justified to the variable's width, against
the ``.hrc`` lines as written (libtauargus ``CVariable::SetCodeList`` keeps leading blanks), so
the leaves (the raw values) are right-justified to the width here; codes above them keep the
classification's spelling, or the spelling of the ``.hrc`` file they were read from (``written``:
the config strips padding and may put a prefix before group codes, see
:mod:`cubeguard.config.hrc_codes`), so a hierarchy read from a file is written back as it was. A
leaf whose raw values differ from its code (``values`` or ``range``) becomes a parent of those
values.

This module is below the config in cubeguard's layers: the caller passes the classifications (any
objects with ``code``, ``parent``, ``values`` and ``range``, as the config's ``CodeSpec``) and a
function that streams the records.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from cubeguard.io.asc_write import fixed_layout, number_text, write_asc
from cubeguard.io.errors import FileProblemsError
from cubeguard.io.hrc import HrcCode, write_hrc
from cubeguard.io.rda import (
    RdaMetadata,
    RdaTag,
    RdaVariable,
    field_tags,
    format_rda,
    parse_rda,
    resolve_referenced_file,
)

__all__ = ["ClassCode", "TauExport", "TauExportError", "export_tau", "hierarchy_codes"]

LEAD = "@"
SEPARATOR = ";"
_HIER_TAGS = frozenset({"TOTCODE", "HIERARCHICAL", "HIERCODELIST", "HIERLEADSTRING", "HIERLEVELS"})
_MAX_DECIMALS = 15

ReadBatches = Callable[[], Iterator[pa.RecordBatch]]


class ClassCode(Protocol):
    """One code of a classification, as the config's ``CodeSpec``."""

    @property
    def code(self) -> str: ...  # noqa: D102
    @property
    def parent(self) -> str | None: ...  # noqa: D102
    @property
    def values(self) -> list[str] | list[int] | None: ...  # noqa: D102
    @property
    def range(self) -> tuple[int, int] | None: ...  # noqa: D102


class TauExportError(FileProblemsError):
    """Microdata or classifications that cannot be written as tau-ARGUS input."""


@dataclass(frozen=True)
class TauExport:
    """What :func:`export_tau` wrote.

    Attributes:
        data: the microdata file.
        metadata: the ``.rda`` file.
        hierarchies: the ``.hrc`` file of each hierarchical variable.
        records: the number of records written.
        notes: what the export left out, one sentence each.
    """

    data: Path
    metadata: Path
    hierarchies: dict[str, Path]
    records: int
    notes: tuple[str, ...] = field(default=())


def export_tau(
    read: ReadBatches,
    out_dir: Path,
    *,
    classifications: Mapping[str, Sequence[ClassCode]],
    source: RdaMetadata | None = None,
    record_key: str | None = None,
    key_decimals: int | None = None,
    household_id: str | None = None,
    fixed: bool = True,
    written: Mapping[str, Mapping[str, str]] | None = None,
) -> TauExport:
    """Write microdata, ``.rda`` and ``.hrc`` files for tau-ARGUS into ``out_dir``.

    Args:
        read: a function returning a fresh stream of the records (called up to three times).
        out_dir: the folder to write into (created).
        classifications: each classified column's codes, in any order, the total among them.
        source: the tau-ARGUS metadata the data were read with; its variables and tags are kept
            (hierarchy and total tags are replaced by the classifications'). Without it the
            metadata is made from the data: classified and text columns are ``<RECODEABLE>``,
            ``record_key`` is ``<RECORDKEY>``, ``household_id`` ``<HOLDING>``, other numbers
            ``<NUMERIC>``.
        record_key: the record-key column, if the data hold one.
        key_decimals: its decimals (``<DECIMALS>``); found from the data if None.
        household_id: the household-id column, if any.
        fixed: write ``microdata.asc`` in fixed format; else ``microdata.csv`` in free format.
        written: for a classified column read from a ``.hrc`` file, each code with its spelling
            there (:attr:`cubeguard.config.load.Release.hrc_written`); group codes are written so.

    Returns:
        The files written.

    Raises:
        TauExportError: a classification cannot be written as a hierarchy.
        AscError: a value cannot be written in its field.
        RdaError: a metadata value holds a double quote.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    first = next(read(), None)
    if first is None:
        raise TauExportError(str(out_dir), ["the microdata has no records; nothing to write"])
    notes = []
    if record_key is not None and record_key not in first.schema.names:
        notes.append(f"record keys ({record_key}) are generated, not in the data: no <RECORDKEY> written")
        record_key = None
    free = source or _metadata_from_data(first.schema, classifications, record_key, key_decimals, household_id, read)
    layout = fixed_layout(free, read())
    hierarchies, tags = _hierarchies(layout, classifications, written or {}, out_dir, source, notes)
    metadata = _with_tags(layout, tags, fixed)
    data_path = out_dir / ("microdata.asc" if fixed else "microdata.csv")
    write = write_asc if fixed else _write_free
    records = write(read(), metadata, data_path)
    rda_path = out_dir / "microdata.rda"
    rda_path.write_text(format_rda(metadata))
    return TauExport(data_path, rda_path, hierarchies, records, tuple(notes))


def hierarchy_codes(codes: Sequence[ClassCode], width: int, written: Mapping[str, str] | None = None) -> list[HrcCode]:
    """A classification as ``.hrc`` codes, depth first: leaves are raw values right-justified to ``width``.

    Args:
        codes: the classification's codes; the one without a parent is the total.
        width: the variable's width in the data file.
        written: codes spelled otherwise in the ``.hrc`` file they were read from (padding, no
            group prefix); a code with codes under it is written so (leaves are raw values).

    Returns:
        The total (depth 0) followed by the codes in depth-first order.

    Raises:
        TauExportError: no code or several codes without a parent.

    Example:
        >>> from types import SimpleNamespace as C
        >>> tree = [C(code="T", parent=None, values=None, range=None),
        ...         C(code="A", parent="T", values=None, range=(1, 2)), C(code="9", parent="T", values=None, range=None)]
        >>> [(c.code, c.depth) for c in hierarchy_codes(tree, 2)]
        [('T', 0), ('A', 1), (' 1', 2), (' 2', 2), (' 9', 1)]
        >>> [c.code for c in hierarchy_codes(tree, 2, {"A": "  A"})]
        ['T', '  A', ' 1', ' 2', ' 9']
    """
    roots = [c for c in codes if c.parent is None]
    if len(roots) != 1:
        raise TauExportError("classification", [f"{len(roots)} codes have no parent; give exactly one total"])
    children: dict[str, list[ClassCode]] = {}
    for c in codes:
        if c.parent is not None:
            children.setdefault(c.parent, []).append(c)
    out = [HrcCode(roots[0].code, None, 0)]
    _descend(_Tree(children, width, written or {}), roots[0].code, roots[0].code, 1, out)
    return out


@dataclass(frozen=True)
class _Tree:
    children: dict[str, list[ClassCode]]
    width: int
    written: Mapping[str, str]


def _descend(tree: _Tree, parent: str, parent_name: str, depth: int, out: list[HrcCode]) -> None:
    """Append the codes under ``parent`` (written ``parent_name`` in the file), depth first."""
    for c in tree.children.get(parent, []):
        if c.code in tree.children:
            name = tree.written.get(c.code, c.code)
            out.append(HrcCode(name, parent_name, depth))
            _descend(tree, c.code, name, depth + 1, out)
            continue
        raw = _raw_values(c)
        if raw == [c.code.strip()]:
            out.append(HrcCode(c.code.strip().rjust(tree.width), parent_name, depth))
        else:
            name = tree.written.get(c.code, c.code)
            out.append(HrcCode(name, parent_name, depth))
            out.extend(HrcCode(v.rjust(tree.width), name, depth + 1) for v in raw)


def _raw_values(c: ClassCode) -> list[str]:
    if c.values is not None:
        return [str(v) for v in c.values]
    if c.range is not None:
        return [str(v) for v in range(c.range[0], c.range[1] + 1)]
    return [c.code.strip()]


def _hierarchies(
    layout: RdaMetadata,
    classifications: Mapping[str, Sequence[ClassCode]],
    spellings: Mapping[str, Mapping[str, str]],
    out_dir: Path,
    source: RdaMetadata | None,
    notes: list[str],
) -> tuple[dict[str, Path], dict[str, list[RdaTag]]]:
    """Write one ``.hrc`` per hierarchical classification; the new tags of every variable."""
    written: dict[str, Path] = {}
    tags: dict[str, list[RdaTag]] = {}
    for v in layout.variables:
        kept = list(v.tags or field_tags(v))
        if v.name not in classifications:
            tags[v.name] = _absolute_files(v.name, kept, source, notes)
            continue
        codes = hierarchy_codes(classifications[v.name], v.width, spellings.get(v.name))
        new = [RdaTag("TOTCODE", (codes[0].code,), 0)]
        if max(c.depth for c in codes) > 1:
            path = out_dir / f"{re.sub(r'[^A-Za-z0-9._-]', '_', v.name)}.hrc"
            _check_unique(codes, path)
            write_hrc(codes, path, LEAD)
            written[v.name] = path
            new += [RdaTag("HIERARCHICAL", (), 0), RdaTag("HIERCODELIST", (path.name,), 0)]
            new += [RdaTag("HIERLEADSTRING", (LEAD,), 0)]
        rest = [t for t in kept if t.name not in _HIER_TAGS and t.name not in ("RECODEABLE", "RECODABLE")]
        tags[v.name] = [RdaTag("RECODEABLE", (), 0), *new, *rest]
    return written, tags


def _check_unique(codes: list[HrcCode], path: Path) -> None:
    """tau-ARGUS tells codes apart as written, with their leading blanks (``"1"`` is not ``"  1"``)."""
    seen: set[str] = set()
    for c in codes:
        if c.code in seen:
            raise TauExportError(
                str(path),
                [f"code {c.code!r} appears twice in the hierarchy (a raw value equal to another code); "
                 f"rename one code in the classification"],
            )  # fmt: skip
        seen.add(c.code)


def _absolute_files(name: str, tags: list[RdaTag], source: RdaMetadata | None, notes: list[str]) -> list[RdaTag]:
    """Tags naming files of the source metadata's folder, with those files' full paths."""
    named = ("HIERCODELIST", "CODELIST", "PFILE", "PFILE_FREQ", "PFILE_CONT", "PFILE_SEP")
    if source is None or source.source is None:
        return tags
    out = []
    for t in tags:
        if t.name in named and t.values:
            found = _find(source, t.values[0])
            if found is None:
                notes.append(
                    f"{name}: <{t.name}> {t.values[0]!r} is not next to {source.source}; copy it next to the .rda"
                )
            t = replace(t, values=(str(found),)) if found else t  # not found: kept as written
        out.append(t)
    return out


def _find(source: RdaMetadata, name: str) -> Path | None:
    try:
        return resolve_referenced_file(source, name).resolve()
    except FileProblemsError:
        return None


def _with_tags(layout: RdaMetadata, tags: dict[str, list[RdaTag]], fixed: bool) -> RdaMetadata:
    """The metadata with the new tags, parsed back from its text so every field agrees with its tags."""
    variables = tuple(
        replace(v, position=v.position if fixed else None, tags=tuple(tags[v.name])) for v in layout.variables
    )
    draft = replace(layout, separator=None if fixed else SEPARATOR, variables=variables)
    return parse_rda(format_rda(draft).splitlines(), source="metadata to write")


def _metadata_from_data(
    schema: pa.Schema,
    classifications: Mapping[str, Sequence[ClassCode]],
    record_key: str | None,
    key_decimals: int | None,
    household_id: str | None,
    read: ReadBatches,
) -> RdaMetadata:
    numeric = [
        f.name
        for f in schema
        if f.name not in classifications
        and f.name != household_id
        and (pa.types.is_floating(f.type) or pa.types.is_integer(f.type))
    ]
    floats = [n for n in numeric if pa.types.is_floating(schema.field(n).type)]
    decimals = _needed_decimals(read, [n for n in floats if n != record_key or key_decimals is None])
    if record_key is not None and key_decimals is not None:
        decimals[record_key] = key_decimals
    variables = []
    for f in schema:
        d = decimals.get(f.name, 0)
        if f.name == record_key:
            variables.append(RdaVariable(f.name, None, 1, record_key=True, decimals=d))
        elif f.name == household_id:
            variables.append(RdaVariable(f.name, None, 1, holding=True))
        elif f.name in numeric:
            variables.append(RdaVariable(f.name, None, 1, numeric=True, decimals=d))
        else:
            variables.append(RdaVariable(f.name, None, 1, recodeable=True))
    return RdaMetadata(SEPARATOR, tuple(variables))


def _needed_decimals(read: ReadBatches, names: list[str]) -> dict[str, int]:
    """The fewest decimals that write every value of each float column exactly (at most 15)."""
    if not names:
        return {}
    needed = dict.fromkeys(names, 0)
    for batch in read():
        for name in names:
            values = np.asarray(batch.column(name).to_numpy(zero_copy_only=False), dtype=np.float64)
            values = values[np.isfinite(values)]
            d = needed[name]
            while d < _MAX_DECIMALS and np.any(np.round(values * 10.0**d) / 10.0**d != values):
                d += 1
            needed[name] = d
    return needed


def _write_free(batches: Iterable[pa.RecordBatch], metadata: RdaMetadata, path: Path) -> int:
    """Free-format data: codes as they are, numbers with their decimals, ``;`` between fields."""
    rows = 0
    with pacsv.CSVWriter(
        str(path),
        pa.schema([(v.name, pa.string()) for v in metadata.variables]),
        write_options=pacsv.WriteOptions(include_header=False, delimiter=SEPARATOR, quoting_style="none"),
    ) as writer:
        for batch in batches:
            columns = [
                number_text(batch.column(v.name), v.decimals)
                if v.reads_as_number
                else batch.column(v.name).cast(pa.string()).fill_null("")
                for v in metadata.variables
            ]
            try:
                writer.write_batch(pa.RecordBatch.from_arrays(columns, names=list(metadata.names)))
            except pa.ArrowInvalid:
                raise TauExportError(
                    str(path),
                    [
                        f"a code in records {rows + 1}-{rows + batch.num_rows} holds the separator {SEPARATOR!r} or a "
                        f"quote; write fixed format (--fixed) instead"
                    ],
                ) from None
            rows += batch.num_rows
    return rows
