"""Secret parameters given by reference, so their values never sit in a config or a log.

A secret (cell key D and V, swap rates, record-key seeds) may be written inline in a config, or as
``{env: NAME}`` (an environment variable) or ``{prefect_secret: BLOCK}`` (a Prefect Secret block).
Only the internal audit store ever records the resolved value.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from cubeguard.errors import CubeguardError


class EnvSecret(BaseModel):
    """A secret read from an environment variable."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    env: str


class PrefectSecret(BaseModel):
    """A secret read from a Prefect Secret block (resolved by the flow layer)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    prefect_secret: str


SecretRef = EnvSecret | PrefectSecret
SecretNumber = float | EnvSecret | PrefectSecret
SecretInt = int | EnvSecret | PrefectSecret


SecretReader = Callable[[str], str]


def resolve_number(value: SecretNumber | SecretInt, key: str, prefect_reader: SecretReader | None = None) -> float:
    """The numeric value of an inline or referenced secret; ``key`` names it in errors.

    ``prefect_reader`` reads a Prefect Secret block by name; the flow layer passes it in so that the
    core never imports Prefect.
    """
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, EnvSecret):
        raw = os.environ.get(value.env)
        if raw is None:
            raise CubeguardError(
                f"{key}: environment variable {value.env} is not set; set it or give the value inline."
            )
    elif prefect_reader is None:
        raise CubeguardError(f"{key}: prefect_secret references resolve only in a Prefect run; use {{env: NAME}} here.")
    else:
        raw = prefect_reader(value.prefect_secret)
    try:
        return float(raw) if "." in raw or "e" in raw.lower() else int(raw)
    except ValueError:
        raise CubeguardError(f"{key}: the referenced secret is not a number; store a number in it.") from None


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


def resolve_references(node: object, prefect_reader: SecretReader | None = None) -> dict[str, float]:
    """The values of every referenced secret of a config (for the internal audit record and run keys)."""
    return {key: resolve_number(ref, key, prefect_reader) for key, ref in secret_references(node).items()}
