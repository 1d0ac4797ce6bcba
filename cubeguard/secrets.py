"""Secret parameters given by reference, so their values never sit in a config or a log.

A secret (cell key D and V, swap rates, record-key seeds) may be written inline in a config, or as
``{env: NAME}`` (an environment variable) or ``{prefect_secret: BLOCK}`` (a secret block of the
orchestrator). Environment variables are read here; other stores are read through a
:data:`SecretResolver` (name -> text) that the orchestration layer passes in, so the core never
imports it. Only the internal audit store ever records a resolved value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from cubeguard.errors import CubeguardError


class EnvSecret(BaseModel):
    """A secret read from an environment variable."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    env: str


class PrefectSecret(BaseModel):
    """A secret read from a Prefect Secret block (resolved through the flow layer's resolver)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    prefect_secret: str


SecretRef = EnvSecret | PrefectSecret
SecretNumber = float | EnvSecret | PrefectSecret
SecretInt = int | EnvSecret | PrefectSecret


SecretResolver = Callable[[str], str]


def resolve_number(value: SecretNumber | SecretInt, key: str, resolver: SecretResolver | None = None) -> float:
    """The numeric value of an inline or referenced secret; ``key`` names it in errors.

    ``resolver`` reads a secret block by name (the flow layer passes the orchestrator's in, so the
    core never imports it); without one, only inline values and environment variables resolve.
    """
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, EnvSecret):
        raw = os.environ.get(value.env)
        if raw is None:
            raise CubeguardError(
                f"{key}: environment variable {value.env} is not set; set it where the command runs, and on every "
                "Dask worker with --dask-address (or use a Prefect Secret block)."
            )
    elif resolver is None:
        raise CubeguardError(f"{key}: prefect_secret references resolve only in a Prefect run; use {{env: NAME}} here.")
    else:
        raw = resolver(value.prefect_secret)
    return parse_number(raw, key)


_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def parse_number(raw: str, key: str) -> float:
    """The number a referenced secret holds: an integer, or a finite decimal; nothing else.

    Parsed strictly, so "5.5" stays 5.5 (an integer parameter then rejects it rather than
    truncating it) and "nan", "inf", "0x10" or "5 apples" are refused. The message never shows
    the text, which may be the secret itself.
    """
    text = raw.strip()
    if _INTEGER.fullmatch(text):
        return int(text)
    if _DECIMAL.fullmatch(text):
        return float(text)
    raise CubeguardError(f"{key}: the referenced secret is not a number; store a plain integer or decimal in it.")


def secret_references(node: object, path: str = "") -> dict[str, SecretRef]:
    """Every secret given by reference in a config model, by key path (e.g. ``steps[0].D``)."""
    if isinstance(node, (EnvSecret, PrefectSecret)):
        return {path: node}
    found: dict[str, SecretRef] = {}
    if isinstance(node, BaseModel):
        for name in type(node).model_fields:
            found |= secret_references(getattr(node, name), f"{path}.{name}" if path else name)
    elif isinstance(node, (list, tuple)):
        for i, item in enumerate(node):
            found |= secret_references(item, f"{path}[{i}]")
    elif isinstance(node, dict):
        for key, item in node.items():
            found |= secret_references(item, f"{path}.{key}" if path else str(key))
    return found


def resolve_references(node: object, resolver: SecretResolver | None = None) -> dict[str, float]:
    """The values of every referenced secret of a config (for the internal audit record and run keys)."""
    return {key: resolve_number(ref, key, resolver) for key, ref in secret_references(node).items()}


def check_environment_references(node: object) -> None:
    """Resolve every ``{env: NAME}`` reference of a config now, so an unset one stops the command at once.

    Raises:
        CubeguardError: a variable is unset or holds no number (named by key, never by value).
    """
    for key, ref in secret_references(node).items():
        if isinstance(ref, EnvSecret):
            resolve_number(ref, key, None)
