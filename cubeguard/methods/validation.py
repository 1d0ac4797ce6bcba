"""A step model's validation errors as located problems a user can act on, without the values."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from cubeguard.methods.context import KeyPath, Problem

#: Parts of a pydantic error location that name a union member rather than a key.
_TYPE_TAGS = frozenset(
    {"int", "float", "str", "bool", "EnvSecret", "PrefectSecret", "list[str]", "list[int]", "none", "function-after"}
)


def union_tags(names: Sequence[str]) -> frozenset[str]:
    """The location parts of a validation error that are union tags, for these method names."""
    return _TYPE_TAGS | frozenset(names)


def problems(
    err: ValidationError, tags: frozenset[str] = _TYPE_TAGS, say: Callable[[Mapping[str, Any]], str] | None = None
) -> list[Problem]:
    """Each error of a step model as (key path inside the step, message); no value is shown.

    A secret that may be a number or a reference fails every member of its union; only the
    member the input was meant as is reported (a number's range, or a reference's keys).
    """
    return [(loc, (say or explain)(e)) for loc, e in meant_errors(err, tags)]


def meant_errors(err: ValidationError, tags: frozenset[str] = _TYPE_TAGS) -> list[tuple[KeyPath, Any]]:
    """The errors of the union members the inputs were meant as, each with its location minus union tags."""
    errors = err.errors()
    unmeant = _unmeant_references(errors)
    return [
        (tuple(p for p in e["loc"] if not (isinstance(p, str) and _is_tag(p, tags))), e)
        for e in errors
        if _meant(e, unmeant)
    ]


_REFERENCE_KEYS = {"EnvSecret": "env", "PrefectSecret": "prefect_secret"}


def _is_tag(part: str, tags: frozenset[str]) -> bool:
    return part in tags or part.startswith("constrained-")


def _unmeant_references(errors: Sequence[Mapping[str, Any]]) -> set[tuple[Any, ...]]:
    """``(*prefix, member)`` of the reference members whose own key the input lacks."""
    missing: set[tuple[Any, ...]] = set()
    for e in errors:
        loc = e["loc"]
        if e["type"] == "missing" and len(loc) >= 2 and _REFERENCE_KEYS.get(str(loc[-2])) == loc[-1]:
            missing.add(tuple(loc[:-1]))
    # A mapping with neither key is reported as the first member (env), not twice.
    return {m for m in missing if not (m[-1] == "EnvSecret" and (*m[:-1], "PrefectSecret") in missing)}


def _meant(err: Mapping[str, Any], unmeant: set[tuple[Any, ...]]) -> bool:
    """False for errors of a union member the input was not meant as (see :func:`problems`)."""
    loc = tuple(err["loc"])
    for i, part in enumerate(loc):
        if part in _REFERENCE_KEYS:
            return loc[: i + 1] not in unmeant and (len(loc) > i + 1 or isinstance(err.get("input"), dict))
        if isinstance(part, str) and (part in ("int", "float") or part.startswith("constrained-")):
            return not isinstance(err.get("input"), dict)
    return True


def explain(err: Mapping[str, Any]) -> str:
    """One pydantic error as what to change, lower-case, without the offending value."""
    kind = err["type"]
    if kind == "missing":
        return "this required key is missing; add it"
    if kind == "extra_forbidden":
        return f"unknown key {err['loc'][-1]!r}; remove it or fix its spelling"
    msg = str(err["msg"]).removeprefix("Value error, ")
    return msg[0].lower() + msg[1:] + ("" if msg.endswith(".") else "; change the value")
