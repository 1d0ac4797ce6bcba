"""Configured steps with their secrets resolved at run time, and the cube functions of post-tabular steps.

Secret parameters are resolved here, when a step runs, and never leave the resolved step object
(whose model never echoes an input in an error). Every other check ran when the config loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from cubeguard.errors import CubeguardError
from cubeguard.methods.base import CubeFunction
from cubeguard.methods.models import CubeStep, StepModel
from cubeguard.methods.registry import CUBE_METHODS, UNION_TAGS
from cubeguard.methods.resolve import resolve
from cubeguard.methods.validation import problems
from cubeguard.secrets import EnvSecret, PrefectSecret, SecretInt, SecretNumber, SecretResolver, resolve_number

S = TypeVar("S", bound=StepModel)


def recorded_step(step: S, where: str, secrets: Mapping[str, Any], release_id: str) -> S:
    """``step`` with its referenced secrets replaced by the values an audit record holds for a publication.

    ``where`` is the step's key path (e.g. ``steps[0]``), ``secrets`` the record's values by key path.

    Raises:
        CubeguardError: the record holds no value for a referenced secret (named by key, never by value).
    """

    def number(key: str, value: SecretNumber | SecretInt) -> float:
        if not isinstance(value, EnvSecret | PrefectSecret):
            return value
        try:
            return float(secrets[f"{where}.{key}"])
        except KeyError:
            raise CubeguardError(
                f"the audit record of release {release_id} holds no value for {where}.{key}; release again"
            ) from None

    return resolve(step, number)


def resolved_step(step: S, where: str, resolver: SecretResolver | None = None) -> S:
    """``step`` with every secret resolved; ``where`` names it in errors (e.g. ``steps[0]``).

    Raises:
        CubeguardError: a reference does not resolve, or its value breaks the method's rules
            (the message names the key, never the value).
    """

    def number(key: str, value: SecretNumber | SecretInt) -> float:
        return resolve_number(value, f"{where}.{key}", resolver)

    try:
        return resolve(step, number)
    except ValidationError as exc:
        lines = [f"{where}{''.join(_key(p) for p in loc)}: {msg}" for loc, msg in problems(exc, UNION_TAGS)]
        raise CubeguardError("; ".join(lines)) from None


def _key(part: str | int) -> str:
    return f"[{part}]" if isinstance(part, int) else f".{part}"


def build_step(spec: CubeStep, where: str, resolver: SecretResolver | None = None) -> CubeFunction:
    """The cube function of one configured post-tabular step; ``where`` names it in errors."""
    return CUBE_METHODS[spec.method].prepare(resolved_step(spec, where, resolver))
