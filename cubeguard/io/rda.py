"""Read tau-ARGUS metadata files (``.rda``) for microdata.

Format (tau-ARGUS 4.2 user's manual, section 5.1 "Meta data files"; reader
``tauargus.model.Metadata.readMicroMetadata``):

* an optional first line ``<SEPARATOR> ";"`` marks a free-format (delimited) data file; without
  it the data file has fixed-width columns (``<SPSS>`` marks an SPSS system file);
* each variable starts with a line ``NAME START WIDTH [MISSING1 [MISSING2]]`` (fixed format) or
  ``NAME WIDTH [MISSING1 [MISSING2]]`` (free format; columns are in file order), START counted
  from 1;
* the lines after it hold tags in angle brackets with their values, e.g. ``<TOTCODE> "Total"``,
  ``<HIERCODELIST> "region.hrc"``, ``<HIERLEVELS> 2 1``, ``<DECIMALS> 8``. Values may be quoted.

Tags tau-ARGUS does not know make it stop; this reader keeps them on the variable
(:attr:`RdaVariable.tags`, :attr:`RdaVariable.unknown_tags`) so that newer tags do not break it, and
:func:`format_rda` writes them back (the layout of ``tauargus.model.Metadata.write``).
File names in the metadata are relative to the metadata file's folder
(:func:`resolve_referenced_file`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cubeguard.io.errors import FileProblemsError

__all__ = [
    "KNOWN_TAGS",
    "RdaError",
    "RdaMetadata",
    "RdaTag",
    "RdaVariable",
    "field_tags",
    "format_rda",
    "parse_rda",
    "read_rda",
    "resolve_referenced_file",
    "write_rda",
]

_MAX_MISSING = 2

# Tag -> number of values it takes (None: any number). <NUMERIC> may carry a sub-tag.
_ARITY: dict[str, int | None] = {
    "RECODEABLE": 0,
    "RECODABLE": 0,
    "NUMERIC": None,
    "WEIGHT": 0,
    "HOLDING": 0,
    "REQUEST": None,
    "RECORDKEY": 0,
    "HIERARCHICAL": 0,
    "HIERCODELIST": 1,
    "HIERLEADSTRING": 1,
    "HIERLEVELS": None,
    "TOTCODE": 1,
    "MISSING": None,
    "DECIMALS": 1,
    "CODELIST": 1,
    "DISTANCE": None,
    "TRUNCABLE": 0,
    "PFILE": 1,
    "PFILE_FREQ": 1,
    "PFILE_CONT": 1,
    "PFILE_SEP": 1,
    "CKM": None,
    "INCLUDEZEROS": 1,
    "PARITY": 1,
    "SEPARATION": 1,
    "SCALING": None,
}
KNOWN_TAGS: frozenset[str] = frozenset(_ARITY)
"""Variable tags this reader interprets or checks (tau-ARGUS microdata metadata)."""

_TOKEN = re.compile(r'"([^"]*)"|(\S+)')
_LINE = re.compile(r"line (\d+):")

# A variable declaration line: name, start (fixed format only), width, missing values, line.
_Declaration = tuple[str, int | None, int, tuple[str, ...], int]


@dataclass(frozen=True)
class RdaTag:
    """One tag line of a variable, kept as written.

    Attributes:
        name: the tag without angle brackets, upper-cased (``"TOTCODE"``).
        values: the values after the tag, quotes removed.
        line: the line of the metadata file.
    """

    name: str
    values: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class RdaVariable:
    """One variable (column) of the microdata file.

    Attributes:
        name: column name.
        position: first column (from 1) in a fixed-format file; ``None`` in free format.
        width: maximum width of the field in characters.
        missing: up to two missing-value codes.
        recodeable: ``<RECODEABLE>``: a categorical (spanning) variable.
        numeric: ``<NUMERIC>``: a response variable.
        weight: ``<WEIGHT>``: the sampling weight.
        holding: ``<HOLDING>``: the holding (for census data, household) identifier.
        record_key: ``<RECORDKEY>``: the record key of the cell key method.
        request: the two request codes of ``<REQUEST>``; empty if not a request variable.
        hierarchical: ``<HIERARCHICAL>``, ``<HIERCODELIST>`` or ``<HIERLEVELS>`` given.
        hier_codelist: the ``.hrc`` file of ``<HIERCODELIST>``, as written.
        hier_lead_string: ``<HIERLEADSTRING>``; ``None`` if absent (tau-ARGUS then uses ``"."``).
        hier_levels: digits per level of ``<HIERLEVELS>``.
        total_code: ``<TOTCODE>``; tau-ARGUS's default ``"Total"`` if absent.
        codelist: the code list file of ``<CODELIST>`` (labels), as written.
        decimals: ``<DECIMALS>``; 0 if absent.
        pfile_freq: p-table for frequency tables, ``<PFILE_FREQ>`` (or older ``<PFILE>``).
        pfile_cont: p-table for magnitude tables, ``<PFILE_CONT>``.
        pfile_sep: p-table for small magnitude cells, ``<PFILE_SEP>``.
        truncable: ``<TRUNCABLE>``: codes may be truncated to recode.
        tags: every tag of the variable in file order, known or not.
        line: the line of the metadata file that declares the variable.
    """

    name: str
    position: int | None
    width: int
    missing: tuple[str, ...] = ()
    recodeable: bool = False
    numeric: bool = False
    weight: bool = False
    holding: bool = False
    record_key: bool = False
    request: tuple[str, ...] = ()
    hierarchical: bool = False
    hier_codelist: str | None = None
    hier_lead_string: str | None = None
    hier_levels: tuple[int, ...] = ()
    total_code: str = "Total"
    codelist: str | None = None
    decimals: int = 0
    pfile_freq: str | None = None
    pfile_cont: str | None = None
    pfile_sep: str | None = None
    truncable: bool = False
    tags: tuple[RdaTag, ...] = field(default=(), repr=False)
    line: int = 0

    @property
    def reads_as_number(self) -> bool:
        """Whether the column holds numbers: numeric, weight or record key variables."""
        return self.numeric or self.weight or self.record_key

    @property
    def unknown_tags(self) -> tuple[RdaTag, ...]:
        """Tags this reader does not know, kept as written."""
        return tuple(t for t in self.tags if t.name not in KNOWN_TAGS)


@dataclass(frozen=True)
class RdaMetadata:
    """The metadata of one microdata file.

    Attributes:
        separator: the field separator of a free-format file; ``None`` for fixed format.
        variables: the variables in declaration order (the column order in free format).
        spss: the metadata describes an SPSS system file (``<SPSS>``).
        header_tags: tags before the first variable other than ``<SEPARATOR>`` and ``<SPSS>``.
        source: the metadata file, for resolving the files it names; ``None`` if parsed from text.
    """

    separator: str | None
    variables: tuple[RdaVariable, ...]
    spss: bool = False
    header_tags: tuple[RdaTag, ...] = ()
    source: Path | None = None

    @property
    def format(self) -> Literal["free", "fixed", "spss"]:
        """The layout of the data file."""
        if self.spss:
            return "spss"
        return "free" if self.separator is not None else "fixed"

    @property
    def names(self) -> tuple[str, ...]:
        """The variable names in declaration order."""
        return tuple(v.name for v in self.variables)

    @property
    def record_key(self) -> RdaVariable | None:
        """The record key variable, if any."""
        return next((v for v in self.variables if v.record_key), None)

    def variable(self, name: str) -> RdaVariable:
        """The variable called ``name`` (exact match first, then ignoring case as tau-ARGUS).

        Raises:
            KeyError: no such variable; the message lists the known ones.
        """
        for v in self.variables:
            if v.name == name:
                return v
        for v in self.variables:
            if v.name.lower() == name.lower():
                return v
        raise KeyError(f"unknown variable {name!r}; known: {', '.join(self.names)}")


class RdaError(FileProblemsError):
    """A metadata file cubeguard cannot use.

    Attributes:
        source: the file the problems were found in.
        problems: every problem found, each prefixed with its line where there is one.
    """


def read_rda(path: str | Path, *, encoding: str = "utf-8") -> RdaMetadata:
    """Read a tau-ARGUS microdata metadata file.

    Args:
        path: the ``.rda`` file.
        encoding: its text encoding; a UTF-8 byte order mark is skipped.

    Returns:
        The metadata, with :attr:`RdaMetadata.source` set to ``path``.

    Raises:
        RdaError: the file is missing or unreadable, or has syntax problems; every problem is
            reported at once, each with its line.
    """
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise RdaError(source, ["file not found; check the path"]) from None
    except OSError as exc:
        raise RdaError(source, [f"cannot be read ({exc.strerror}); check the path"]) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise RdaError(
            source,
            [f"line {line}: bytes are not valid {encoding}; save the file as {encoding} or pass the right encoding"],
        ) from None
    return parse_rda(text.splitlines(), source=source, path=Path(path))


def parse_rda(lines: Iterable[str], *, source: str = "metadata", path: Path | None = None) -> RdaMetadata:
    """Parse the lines of a ``.rda`` file; see :func:`read_rda`.

    Args:
        lines: the lines of the file.
        source: how to name the input in error messages.
        path: the file the lines came from, stored as :attr:`RdaMetadata.source`.

    Returns:
        The metadata.

    Raises:
        RdaError: every problem found, each with its line.

    Example:
        >>> meta = parse_rda(['<SEPARATOR> ","', "SEX 1", "  <RECODEABLE>", '  <TOTCODE> "T"'])
        >>> meta.format, meta.variables[0].total_code, meta.variables[0].recodeable
        ('free', 'T', True)
    """
    problems: list[str] = []
    separator: str | None = None
    spss = False
    header_tags: list[RdaTag] = []
    declared: list[_Declaration] = []
    tags: list[list[RdaTag]] = []
    for number, line in enumerate(lines, start=1):
        tokens, problem = _tokens(line)
        where = f"line {number}"
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        if not tokens:
            continue
        head = tokens[0]
        if head.startswith("<"):
            if not head.endswith(">") or len(head) < 3:
                problems.append(f"{where}: {head!r} is not a tag; write tags as <NAME>")
                continue
            tag = RdaTag(head[1:-1].upper(), tuple(tokens[1:]), number)
            if tag.name in ("SEPARATOR", "SPSS"):
                if declared:
                    problems.append(f"{where}: <{tag.name}> must come before the first variable")
                elif tag.name == "SPSS":
                    spss = True
                elif len(tag.values) != 1 or not tag.values[0]:
                    problems.append(f'{where}: <SEPARATOR> needs one value, e.g. <SEPARATOR> ";"')
                else:
                    separator = tag.values[0]
            elif not declared:
                if tag.name in KNOWN_TAGS:
                    problems.append(
                        f"{where}: <{tag.name}> comes before any variable; declare the variable "
                        f"first (NAME WIDTH, or NAME START WIDTH in fixed format)"
                    )
                else:
                    header_tags.append(tag)
            else:
                tags[-1].append(tag)
            continue
        decl = _declaration(tokens, free=separator is not None, number=number)
        if isinstance(decl, str):
            problems.append(f"{where}: {decl}")
            continue
        if any(d[0] == decl[0] for d in declared):
            problems.append(f"{where}: variable {decl[0]!r} is declared twice; rename one")
            continue
        declared.append(decl)
        tags.append([])
    variables = []
    for decl, var_tags in zip(declared, tags, strict=True):
        variable, var_problems = _variable(decl, var_tags)
        variables.append(variable)
        problems.extend(var_problems)
    keys = [v.name for v in variables if v.record_key]
    if len(keys) > 1:
        problems.append(f"{len(keys)} variables are <RECORDKEY> ({', '.join(keys)}); keep one")
    if not variables and not problems:
        problems.append("no variables declared; expected lines like 'NAME WIDTH' or 'NAME START WIDTH'")
    if problems:
        raise RdaError(source, sorted(problems, key=_line_of))
    return RdaMetadata(separator, tuple(variables), spss, tuple(header_tags), path)


def _line_of(problem: str) -> float:
    """Sort key: the line a problem names, problems about the whole file last."""
    match = _LINE.match(problem)
    return int(match.group(1)) if match else float("inf")


def _tokens(line: str) -> tuple[list[str], str | None]:
    tokens: list[str] = []
    for match in _TOKEN.finditer(line):
        quoted: str | None = match.group(1)
        token: str = match.group(0) if quoted is None else quoted
        if quoted is None and '"' in token:
            return [], f"unbalanced quote in {token!r}; close the quoted value"
        tokens.append(token)
    return tokens, None


def _declaration(tokens: list[str], *, free: bool, number: int) -> _Declaration | str:
    """The variable declared by a line, or the problem with it."""
    name, rest = tokens[0], tokens[1:]
    layout = "NAME WIDTH" if free else "NAME START WIDTH"
    n_numbers = 1 if free else 2
    if len(rest) < n_numbers:
        return f"variable {name!r} needs '{layout} [MISSING1 [MISSING2]]'"
    numbers = rest[:n_numbers]
    missing = tuple(rest[n_numbers:])
    if not all(n.isdigit() and int(n) > 0 for n in numbers):
        what = "width" if free else "start and width"
        return (
            f"variable {name!r}: {what} must be whole numbers above 0, got {' '.join(numbers)!r} "
            f"(expected '{layout}'; free-format files need <SEPARATOR> on the first line)"
        )
    position = None if free else int(numbers[0])
    width = int(numbers[-1])
    if len(missing) > _MAX_MISSING:
        return f"variable {name!r} has {len(missing)} missing values; at most 2 are allowed"
    too_long = [m for m in missing if len(m) > width]
    if too_long:
        return f"variable {name!r}: missing value {too_long[0]!r} is longer than width {width}"
    return (name, position, width, missing, number)


def _variable(decl: _Declaration, tags: list[RdaTag]) -> tuple[RdaVariable, list[str]]:
    name, position, width, missing, number = decl
    problems: list[str] = []
    flags: set[str] = set()
    texts: dict[str, str] = {}
    request: tuple[str, ...] = ()
    hier_levels: tuple[int, ...] = ()
    decimals = 0
    for tag in tags:
        where = f"line {tag.line}"
        arity = _ARITY.get(tag.name)
        if tag.name in KNOWN_TAGS and arity is not None and len(tag.values) != arity:
            takes = "no value" if arity == 0 else f"{arity} value"
            problems.append(f"{where}: <{tag.name}> of {name!r} takes {takes}, got {len(tag.values)}")
            continue
        match tag.name:
            case "RECODEABLE" | "RECODABLE" | "NUMERIC" | "WEIGHT" | "HOLDING" | "RECORDKEY":
                flags.add(tag.name.replace("RECODABLE", "RECODEABLE"))
            case "HIERARCHICAL" | "TRUNCABLE":
                flags.add(tag.name)
            case "HIERCODELIST" | "HIERLEADSTRING" | "TOTCODE" | "CODELIST" | "PFILE_CONT" | "PFILE_SEP":
                texts[tag.name] = tag.values[0]
            case "PFILE_FREQ" | "PFILE":
                texts["PFILE_FREQ"] = tag.values[0]
            case "REQUEST":
                request = tag.values
            case "MISSING":
                missing = missing + tag.values
            case "DECIMALS" | "HIERLEVELS":
                if not tag.values or not all(v.isdigit() for v in tag.values):
                    problems.append(
                        f"{where}: <{tag.name}> of {name!r} needs whole numbers, got {' '.join(tag.values)!r}"
                    )
                elif tag.name == "DECIMALS":
                    decimals = int(tag.values[0])
                elif sum(int(v) for v in tag.values) != width:
                    problems.append(
                        f"{where}: <HIERLEVELS> of {name!r} add up to "
                        f"{sum(int(v) for v in tag.values)} digits but the width is {width}; "
                        f"make them add up to the width"
                    )
                else:
                    hier_levels = tuple(int(v) for v in tag.values)
            case _:
                pass  # other known tags (CKM, DISTANCE, ...) and unknown ones stay in ``tags``
    if len(missing) > _MAX_MISSING:
        problems.append(
            f"line {number}: variable {name!r} has {len(missing)} missing values; at most {_MAX_MISSING} are allowed"
        )
    variable = RdaVariable(
        name=name,
        position=position,
        width=width,
        missing=missing,
        recodeable="RECODEABLE" in flags,
        numeric="NUMERIC" in flags,
        weight="WEIGHT" in flags,
        holding="HOLDING" in flags,
        record_key="RECORDKEY" in flags,
        request=request,
        hierarchical="HIERARCHICAL" in flags or "HIERCODELIST" in texts or bool(hier_levels),
        hier_codelist=texts.get("HIERCODELIST"),
        hier_lead_string=texts.get("HIERLEADSTRING"),
        hier_levels=hier_levels,
        total_code=texts.get("TOTCODE", "Total"),
        codelist=texts.get("CODELIST"),
        decimals=decimals,
        pfile_freq=texts.get("PFILE_FREQ"),
        pfile_cont=texts.get("PFILE_CONT"),
        pfile_sep=texts.get("PFILE_SEP"),
        truncable="TRUNCABLE" in flags,
        tags=tuple(tags),
        line=number,
    )
    return variable, problems


def resolve_referenced_file(
    metadata: RdaMetadata | str | Path, filename: str, search_dirs: Sequence[str | Path] = ()
) -> Path:
    """Find a file named in the metadata (``<HIERCODELIST>``, ``<PFILE_FREQ>``, ...).

    tau-ARGUS looks for the name as given, then in the metadata file's folder; this function
    then also tries each of ``search_dirs``.

    Args:
        metadata: the metadata (its :attr:`RdaMetadata.source`) or the metadata file's path.
        filename: the name as written in the metadata; Windows separators are accepted.
        search_dirs: further folders to look in, in order.

    Returns:
        The first existing path.

    Raises:
        RdaError: the file is in none of the places; the message lists them.
    """
    base = metadata.source if isinstance(metadata, RdaMetadata) else Path(metadata)
    name = Path(filename.replace("\\", "/"))
    tried = [name]
    if base is not None:
        tried.append(base.parent / name)
        tried.append(base.parent / name.name)
    tried.extend(Path(d) / name.name for d in search_dirs)
    for candidate in dict.fromkeys(tried):
        if candidate.is_file():
            return candidate
    places = ", ".join(str(p) for p in dict.fromkeys(tried))
    raise RdaError(
        str(base) if base is not None else "metadata",
        [f"file {filename!r} named in the metadata not found (tried {places}); pass search_dirs"],
    )


# Tags whose values tau-ARGUS writes quoted (tauargus.model.Metadata.writeVariable): file names,
# codes and strings; numbers and Y/N switches (<DECIMALS>, <HIERLEVELS>, <CKM>, ...) stay bare.
_QUOTED_TAGS = frozenset(
    {"TOTCODE", "CODELIST", "HIERCODELIST", "HIERLEADSTRING", "REQUEST", "MISSING"}
    | {"PFILE", "PFILE_FREQ", "PFILE_CONT", "PFILE_SEP"}
)


def format_rda(metadata: RdaMetadata, newline: str = "\n") -> str:
    r"""Render metadata in the ``.rda`` layout tau-ARGUS writes; the inverse of :func:`parse_rda`.

    The layout follows ``tauargus.model.Metadata.write``: ``   <SEPARATOR> ";"`` first in free
    format, then each variable's line (``NAME [START] WIDTH ["MISSING"...]``) and its tags
    indented by four spaces, in file order. Codes, file names and strings are quoted; numbers
    are not. Every tag is kept, unknown ones too (quoted when they hold a blank).

    Args:
        metadata: the metadata; a variable without tags gets the tags of its fields.
        newline: the line end (tau-ARGUS on Windows writes ``"\r\n"``).

    Returns:
        The file content, ending with a line end.

    Raises:
        RdaError: a value holds a double quote or a line end, which the format cannot hold.

    Example:
        >>> print(format_rda(parse_rda(['<SEPARATOR> ","', "SEX 1", '  <TOTCODE> "T"'])), end="")
           <SEPARATOR> ","
        SEX 1
            <TOTCODE> "T"
    """
    bad = _unwritable(metadata)
    if bad:
        raise RdaError("metadata to write", bad)
    lines: list[str] = []
    if metadata.separator is not None:
        lines.append(f"   <SEPARATOR> {_quoted(metadata.separator)}")
    if metadata.spss:
        lines.append("   <SPSS>")
    lines.extend(_tag_line(t, indent="   ") for t in metadata.header_tags)
    for v in metadata.variables:
        lines.append(_declaration_line(v, fixed=metadata.separator is None))
        lines.extend(_tag_line(t, indent="    ") for t in v.tags or field_tags(v))
    return "".join(line + newline for line in lines)


def _unwritable(metadata: RdaMetadata) -> list[str]:
    """Values the format cannot hold: a double quote or a line end (there is no escape)."""
    values = [("<SEPARATOR>", metadata.separator or "")]
    values += [(f"<{t.name}>", x) for t in metadata.header_tags for x in t.values]
    for v in metadata.variables:
        values += [(f"variable {v.name!r}", v.name), *((f"missing value of {v.name}", m) for m in v.missing)]
        values += [(f"<{t.name}> of {v.name}", x) for t in v.tags or field_tags(v) for x in t.values]
    return [
        f"{where}: {value!r} holds a double quote or a line end, which an .rda file cannot hold; remove it"
        for where, value in values
        if any(c in value for c in '"\r\n')
    ]


def write_rda(metadata: RdaMetadata, path: str | Path, *, newline: str = "\n", encoding: str = "utf-8") -> None:
    """Write metadata as a tau-ARGUS ``.rda`` file; see :func:`format_rda`.

    Raises:
        RdaError: a value the format cannot hold.
    """
    text = format_rda(metadata, newline=newline)
    with Path(path).open("w", encoding=encoding, newline="") as handle:
        handle.write(text)


def _quoted(value: str) -> str:
    return f'"{value}"'


def _tag_line(tag: RdaTag, indent: str) -> str:
    quote = tag.name in _QUOTED_TAGS or tag.name not in KNOWN_TAGS
    values = [_quoted(v) if quote and (tag.name in _QUOTED_TAGS or not v or " " in v) else v for v in tag.values]
    return indent + " ".join([f"<{tag.name}>", *values])


def _declaration_line(v: RdaVariable, *, fixed: bool) -> str:
    from_tags = sum(len(t.values) for t in v.tags if t.name == "MISSING")
    declared = v.missing[: len(v.missing) - from_tags]
    numbers = [str(v.position), str(v.width)] if fixed else [str(v.width)]
    return " ".join([v.name, *numbers, *(_quoted(m) for m in declared)])


def field_tags(v: RdaVariable) -> tuple[RdaTag, ...]:
    """The tags that give a variable's fields, in the order tau-ARGUS writes them.

    Example:
        >>> [t.name for t in field_tags(RdaVariable("K", None, 10, record_key=True, decimals=8))]
        ['RECORDKEY', 'DECIMALS']
    """
    flags = [
        ("RECODEABLE", v.recodeable, ()),
        ("TOTCODE", v.recodeable or v.total_code != "Total", (v.total_code,)),
        ("CODELIST", v.codelist is not None, (v.codelist or "",)),
        ("HIERARCHICAL", v.hierarchical, ()),
        ("HIERLEVELS", bool(v.hier_levels), tuple(str(n) for n in v.hier_levels)),
        ("HIERCODELIST", v.hier_codelist is not None, (v.hier_codelist or "",)),
        ("HIERLEADSTRING", v.hier_lead_string is not None, (v.hier_lead_string or "",)),
        ("NUMERIC", v.numeric, ()),
        ("WEIGHT", v.weight, ()),
        ("HOLDING", v.holding, ()),
        ("REQUEST", bool(v.request), v.request),
        ("RECORDKEY", v.record_key, ()),
        ("PFILE_FREQ", v.pfile_freq is not None, (v.pfile_freq or "",)),
        ("PFILE_CONT", v.pfile_cont is not None, (v.pfile_cont or "",)),
        ("PFILE_SEP", v.pfile_sep is not None, (v.pfile_sep or "",)),
        ("DECIMALS", v.decimals > 0, (str(v.decimals),)),
        ("TRUNCABLE", v.truncable, ()),
    ]
    return tuple(RdaTag(name, values, 0) for name, present, values in flags if present)
