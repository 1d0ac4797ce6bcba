"""A classification's codes read from a tau-ARGUS hierarchy file: ``codes: {hrc: file, ...}``.

tau-ARGUS pads codes with blanks and tells ``11`` from ``" 11"`` (tau-ARGUS 4.2 user's manual,
section 5.1, hierarchical codelists). A release publishes one clean code per category, so the
config strips the padding; a group and a leaf that then read alike (the course AGE hierarchy:
group ``11``, ages 0-4, and age ``" 11"``) are kept apart by ``group_prefix``, put before every
group code. Codes that still collide are a config error naming both lines of the file. The
file's own spelling of each code is kept (:attr:`HrcClassification.written`) so that
``cubeguard tau`` writes the file back as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cubeguard.cubes.spec import HrcCodes
from cubeguard.errors import CubeguardError
from cubeguard.io.hrc import HrcCode, hrc_leaves, read_hrc

__all__ = ["HrcClassification", "HrcCodesError", "hrc_classification"]


class HrcCodesError(CubeguardError):
    """Codes of a ``.hrc`` file that are one code once their padding is stripped."""


@dataclass(frozen=True)
class HrcClassification:
    """A ``.hrc`` file as config codes.

    Attributes:
        file: the file read.
        codes: the codes as ``CodeSpec`` fields (code, label, parent), the total first.
        written: each code but the total, with its spelling in the file (padding, no prefix).
    """

    file: Path
    codes: list[dict[str, Any]]
    written: dict[str, str]


def hrc_classification(ref: Mapping[str, Any], base: Path) -> HrcClassification:
    """Read ``{hrc: file, total:, lead:, group_prefix:}`` into clean codes (the file relative to ``base``).

    Raises:
        pydantic.ValidationError: the mapping is not an :class:`HrcCodes`.
        HrcError: the file cannot be read or is not a hierarchy.
        HrcCodesError: two codes are one once padding is stripped and the prefix put before groups.
    """
    spec = HrcCodes.model_validate(ref)
    file = (base / spec.hrc).resolve()
    read = read_hrc(file, lead=spec.lead, total_code=spec.total, strip=False)
    leaves = set(hrc_leaves(read))
    clean = {c.code: _clean(c, leaves, spec.group_prefix) for c in read}
    _check_distinct(read, leaves, clean, spec)
    codes = [{"code": clean[c.code], "label": clean[c.code], "parent": _parent(c, clean)} for c in read]
    written = {clean[c.code]: c.code for c in read if c.depth > 0}
    return HrcClassification(file, codes, written)


def _clean(code: HrcCode, leaves: set[str], prefix: str) -> str:
    if code.depth == 0 or code.code in leaves:
        return code.code.strip()
    return prefix + code.code.strip()


def _parent(code: HrcCode, clean: dict[str, str]) -> str | None:
    return None if code.parent is None else clean[code.parent]


def _check_distinct(read: list[HrcCode], leaves: set[str], clean: dict[str, str], spec: HrcCodes) -> None:
    """Raise :class:`HrcCodesError` on the first pair of codes with one clean code, counting the others."""
    first: dict[str, HrcCode] = {}
    pairs: list[tuple[HrcCode, HrcCode]] = []
    for c in read:
        other = first.setdefault(clean[c.code], c)
        if other is not c:
            pairs.append((other, c))
    if not pairs:
        return
    a, b = pairs[0]
    kinds = {_kind(a, leaves), _kind(b, leaves)}
    more = f", and so are {len(pairs) - 1} more pair(s) of codes" if len(pairs) > 1 else ""
    raise HrcCodesError(
        f"{_kind(a, leaves)} {a.code!r} ({_line(a, spec)}) and {_kind(b, leaves)} {b.code!r} ({_line(b, spec)}) "
        f"are both {clean[a.code]!r} once the padding is stripped{more}; {_fix(kinds, spec)}"
    )


def _kind(code: HrcCode, leaves: set[str]) -> str:
    return "the total" if code.depth == 0 else "leaf" if code.code in leaves else "group"


def _line(code: HrcCode, spec: HrcCodes) -> str:
    return "codes.total" if code.depth == 0 else f"{spec.hrc.name} line {code.line}"


def _fix(kinds: set[str], spec: HrcCodes) -> str:
    if "the total" in kinds:
        return "set codes.total to a code the file does not use"
    if kinds != {"group", "leaf"}:
        return "rename one of them in the .hrc file (group_prefix only tells groups from leaves)"
    if spec.group_prefix:
        return f"set codes.group_prefix to another prefix than {spec.group_prefix!r}"
    return 'set codes.group_prefix (e.g. "G") to put a prefix before every group code and keep groups and leaves apart'
