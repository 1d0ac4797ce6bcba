"""Read and write tau-ARGUS hierarchy files (``.hrc``).

A hierarchy file lists one code a line in depth-first order. Each line starts with the lead string
(``<HIERLEADSTRING>`` in the ``.rda`` metadata, usually ``@``) once per level below the top, then
the code::

    1
    @11
    @@111
    @@112
    @12
    2

The total is not written in the file: tau-ARGUS adds it as the root (tau-ARGUS 4.2 user's manual,
section 5.1 "Meta data files", hierarchical codelists; libtauargus ``CVariable::SetCodeList``).
Like tau-ARGUS this reader ignores blank lines and trailing white space, and rejects a code that is
more than one level deeper than the code above it and a line with lead strings but no code.
cubeguard also rejects duplicate codes and lead characters inside a code, which tau-ARGUS accepts.

tau-ARGUS keeps leading spaces in codes and compares them with data codes right-justified to the
variable's width, so ``1`` and ``  1`` are two different codes there. cubeguard strips them by
default (data codes are read without padding); pass ``strip=False`` to keep the tau-ARGUS spelling.
A release config reads the file with ``strip=False`` and then strips the codes itself, keeping
groups and leaves apart with a prefix and each code's line for its messages
(:mod:`cubeguard.config.hrc_codes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cubeguard.io.errors import FileProblemsError

__all__ = ["HrcCode", "HrcError", "format_hrc", "hrc_leaves", "parse_hrc", "read_hrc", "write_hrc"]


@dataclass(frozen=True)
class HrcCode:
    """One code of a hierarchy.

    Attributes:
        code: the code as it is matched against the data.
        parent: the code one level up; ``None`` only for the total (the root).
        depth: 0 for the total, 1 for the top-level codes of the file, +1 per lead string.
        line: the line of the file the code was read from (0 for the total and for codes not
            read from a file); not compared, so a hierarchy equals its copy written elsewhere.
    """

    code: str
    parent: str | None
    depth: int
    line: int = field(default=0, compare=False, repr=False)


class HrcError(FileProblemsError):
    """A hierarchy file (or a list of codes to write as one) that cubeguard cannot use.

    Attributes:
        source: the file (or description) the problems were found in.
        problems: every problem found, each prefixed with its line number where there is one.
    """


def read_hrc(
    path: str | Path,
    lead: str = "@",
    total_code: str = "Total",
    *,
    strip: bool = True,
    encoding: str = "utf-8",
) -> list[HrcCode]:
    """Read a tau-ARGUS hierarchy file into its codes, the total first.

    Args:
        path: the ``.hrc`` file.
        lead: the lead string that marks one level of depth (``<HIERLEADSTRING>``).
        total_code: the code of the root added above the file's top-level codes.
        strip: drop leading spaces of codes (``True``) or keep them as tau-ARGUS does.
        encoding: text encoding of the file; a UTF-8 byte order mark is always skipped.

    Returns:
        The total (depth 0, no parent) followed by the file's codes in file order.

    Raises:
        HrcError: the file is missing or unreadable, or has any of the problems listed in the
            module docstring; every problem is reported at once, each with its line.
    """
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise HrcError(source, ["file not found; check the path"]) from None
    except OSError as exc:
        raise HrcError(source, [f"cannot be read ({exc.strerror}); check the path"]) from None
    lines: list[str] = []
    problems: list[str] = []
    for number, raw in enumerate(data.splitlines(), start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            lines.append(raw.decode(encoding))
        except UnicodeDecodeError as exc:
            problems.append(
                f"line {number}: byte {raw[exc.start : exc.start + 1]!r} at column {exc.start + 1} "
                f"is not valid {encoding}; save the file as {encoding} or pass the right encoding"
            )
            lines.append("")
    if problems:
        raise HrcError(source, problems)
    return parse_hrc(lines, lead=lead, total_code=total_code, strip=strip, source=source)


def parse_hrc(
    lines: Iterable[str],
    *,
    lead: str = "@",
    total_code: str = "Total",
    strip: bool = True,
    source: str = "hierarchy",
) -> list[HrcCode]:
    """Parse the lines of a hierarchy file; see :func:`read_hrc`.

    Args:
        lines: the lines of the file, with or without their line ends.
        lead: the lead string that marks one level of depth.
        total_code: the code of the root.
        strip: drop leading spaces of codes.
        source: how to name the input in error messages.

    Returns:
        The total followed by the codes in input order.

    Raises:
        HrcError: every problem found, each with its line.

    Example:
        >>> parse_hrc(["A", "@A1", "B"])  # doctest: +NORMALIZE_WHITESPACE
        [HrcCode(code='Total', parent=None, depth=0), HrcCode(code='A', parent='Total', depth=1),
         HrcCode(code='A1', parent='A', depth=2), HrcCode(code='B', parent='Total', depth=1)]
    """
    if not lead or lead != lead.strip():
        raise HrcError(source, [f"lead string {lead!r} must be non-empty and hold no spaces"])
    if not total_code.strip():
        raise HrcError(source, ["the total code must not be empty"])
    codes = [HrcCode(total_code, None, 0)]
    seen: dict[str, tuple[int, str]] = {total_code: (0, total_code)}
    stack = [total_code]  # stack[d] is the latest code at depth d
    problems: list[str] = []
    padding_clash = False
    for number, line in enumerate(lines, start=1):
        text = line.rstrip()  # tau-ARGUS trims spaces, tabs and line ends on the right
        if not text:
            continue
        n_leads = 0
        while text.startswith(lead, n_leads * len(lead)):
            n_leads += 1
        written = text[n_leads * len(lead) :]
        code = written.strip() if strip else written
        depth = n_leads + 1
        where = f"line {number}"
        if not code.strip():
            problems.append(f"{where}: {n_leads} lead string(s) {lead!r} but no code; add the code")
            continue
        if lead[0] in code:
            problems.append(
                f"{where}: code {code!r} contains the lead character {lead[0]!r}; put all lead "
                f"strings {lead!r} at the start of the line with no spaces between them"
            )
            continue
        if depth > len(stack):
            problems.append(
                f"{where}: code {code!r} is {depth - len(stack) + 1} levels deeper than the code "
                f"above it; a code may be at most one {lead!r} deeper than the line above"
            )
            depth = len(stack)
        problem = _duplicate(code, written, seen, where)
        if problem:
            problems.append(problem)
            padding_clash = padding_clash or seen[code][1] != written
        else:
            seen[code] = (number, written)
        del stack[depth:]
        codes.append(HrcCode(code, stack[-1], depth, number))
        stack.append(code)
    if len(codes) == 1 and not problems:
        problems.append("no codes found; a hierarchy file needs at least one code")
    if problems:
        hint = _PADDING_HINT if padding_clash and strip else ""
        raise HrcError(source, problems, hint)
    return codes


_PADDING_HINT = (
    "some codes differ only by leading spaces, which tau-ARGUS keeps: pass strip=False to keep "
    "them too, and right-justify data codes to the variable width before matching"
)


def _duplicate(code: str, written: str, seen: dict[str, tuple[int, str]], where: str) -> str | None:
    if code not in seen:
        return None
    first_line, first_written = seen[code]
    if first_line == 0:
        return (
            f"{where}: code {code!r} is the total code; the total is added as the root, so "
            f"remove the line or pass another total_code"
        )
    spelled = f" (written {first_written!r} there)" if first_written != written else ""
    return f"{where}: code {code!r} already appears on line {first_line}{spelled}; give every code a unique name"


def hrc_leaves(codes: Sequence[HrcCode]) -> list[str]:
    """The codes without children (the basic codes matched against the data), in order.

    Example:
        >>> hrc_leaves(parse_hrc(["A", "@A1", "@A2", "B"]))
        ['A1', 'A2', 'B']
    """
    parents = {c.parent for c in codes}
    return [c.code for c in codes if c.code not in parents]


def format_hrc(codes: Sequence[HrcCode], lead: str = "@", newline: str = "\n") -> str:
    r"""Render codes in the ``.hrc`` format; the inverse of :func:`parse_hrc`.

    Args:
        codes: codes in depth-first order, as :func:`read_hrc` returns them; a leading total
            (depth 0) is left out, as tau-ARGUS expects.
        lead: the lead string written once per level below the top.
        newline: the line end (tau-ARGUS on Windows writes ``"\r\n"``).

    Returns:
        The file content, ending with a line end.

    Raises:
        HrcError: the codes are not a depth-first list of one tree (each code's parent must be
            the latest code one level up), or a code is empty or holds the lead or a line end.

    Example:
        >>> format_hrc(parse_hrc(["A", "@A1", "B"]))
        'A\n@A1\nB\n'
    """
    if not lead or lead != lead.strip():
        raise HrcError("codes to write", [f"lead string {lead!r} must be non-empty and hold no spaces"])
    body = list(codes)
    root = body[0].code if body and body[0].depth == 0 else None
    if root is not None:
        body = body[1:]
    stack: list[str | None] = [root]
    problems: list[str] = []
    out: list[str] = []
    for index, item in enumerate(body, start=1 if root is not None else 0):
        where = f"codes[{index}] ({item.code!r})"
        if not item.code.strip() or lead[0] in item.code or "\n" in item.code or "\r" in item.code:
            problems.append(f"{where}: a code must be non-empty and hold no {lead[0]!r} or line end")
        elif not 1 <= item.depth <= len(stack):
            problems.append(
                f"{where}: depth {item.depth} must be between 1 and {len(stack)} (one more than the code before it)"
            )
        elif stack[item.depth - 1] is not None and item.parent != stack[item.depth - 1]:
            problems.append(
                f"{where}: parent {item.parent!r} is not the latest code one level up "
                f"({stack[item.depth - 1]!r}); list codes depth-first, as read_hrc returns them"
            )
        else:
            del stack[item.depth :]
            stack.append(item.code)
            out.append(lead * (item.depth - 1) + item.code + newline)
    if problems:
        raise HrcError("codes to write", problems)
    return "".join(out)


def write_hrc(
    codes: Sequence[HrcCode],
    path: str | Path,
    lead: str = "@",
    *,
    newline: str = "\n",
    encoding: str = "utf-8",
) -> None:
    """Write codes as a tau-ARGUS hierarchy file; see :func:`format_hrc` for the rules.

    Args:
        codes: codes in depth-first order, a leading total (depth 0) is left out.
        path: the file to write (replaced if it exists).
        lead: the lead string written once per level below the top.
        newline: the line end.
        encoding: text encoding of the file.

    Raises:
        HrcError: the codes do not form a depth-first list of one tree.
    """
    text = format_hrc(codes, lead=lead, newline=newline)
    with Path(path).open("w", encoding=encoding, newline="") as handle:
        handle.write(text)
