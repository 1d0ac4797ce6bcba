"""Run-time overrides of a release config: ``{"steps[0].js": 3, "gates.max_hellinger": 0.1}``.

A rerun from the Prefect UI (or ``cubeguard release --set KEY=VALUE``) changes a few keys of the
config without editing the file. Keys are the same dotted paths the config errors print, so a
user copies them from an error message. Overrides are applied to the YAML data before validation,
so the changed config is checked exactly like a written one and its hash covers the change.

Overrides travel as the flow run's parameters, which the orchestrator stores and shows, so a
secret (any field that may be given by reference) must be overridden by reference, never inline:
:func:`inline_secret_overrides` finds the keys that would put one there.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from cubeguard.config.yamlmap import KeyPath, dotted
from cubeguard.methods.models import secret_fields
from cubeguard.secrets import EnvSecret, PrefectSecret

_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def parse_key(key: str) -> KeyPath:
    """``steps[0].D`` (or ``steps.0.D``) -> ``("steps", 0, "D")``; raises ValueError if malformed."""
    parts: list[str | int] = []
    pos = 0
    for m in _PART.finditer(key):
        gap = key[pos : m.start()]
        name, index = m.groups()
        if gap != ("." if name is not None and parts else ""):
            raise ValueError(key)
        parts.append(int(index) if index is not None else (int(name) if name.isdigit() else name))
        pos = m.end()
    if not parts or key[pos:] or key.startswith("."):
        raise ValueError(key)
    return tuple(parts)


def apply_overrides(data: dict[str, Any], overrides: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``data`` with each override set; returns it and one sentence per key that cannot be set.

    Every container on the way must exist; the last key may be new (e.g. an optional ``pstay``).
    """
    out = copy.deepcopy(data)
    problems = []
    for key, value in overrides.items():
        try:
            path = parse_key(key)
        except ValueError:
            problems.append(f"overrides: {key!r} is not a key path; write it as in config errors, e.g. steps[0].js")
            continue
        problem = _set(out, path, value)
        if problem:
            problems.append(f"overrides: {key!r}: {problem}")
    return out, problems


def _set(node: Any, path: KeyPath, value: Any) -> str | None:
    for depth, part in enumerate(path[:-1]):
        node = _child(node, part)
        if node is None:
            return f"the config has no {dotted(path[: depth + 1])}; check the key"
    last = path[-1]
    if isinstance(node, dict) and isinstance(last, str):
        node[last] = value
        return None
    if isinstance(node, list) and isinstance(last, int) and 0 <= last < len(node):
        node[last] = value
        return None
    return f"{dotted(path[:-1])} has no place for {last!r}; check the key"


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, dict) and isinstance(part, str):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def inline_secret_overrides(config: BaseModel, overrides: Mapping[str, Any]) -> dict[str, str]:
    """Override keys that give a secret of the validated ``config`` inline, each with that secret's key path.

    A key matches when it names the secret, an item of it, or a container holding it (``steps[0]``
    replaced as a whole); a secret given by reference (``{env: NAME}``) is never a match.
    """
    inline = list(_inline_secrets(config, ()))
    found: dict[str, str] = {}
    for key in overrides:
        path = parse_key(key)
        hit = next((p for p in inline if p[: len(path)] == path or path[: len(p)] == p), None)
        if hit is not None:
            found[key] = dotted(hit)
    return found


def _inline_secrets(node: Any, path: KeyPath) -> Iterator[KeyPath]:
    """Key paths of every secret field in ``node`` whose value is written inline (not a reference)."""
    if isinstance(node, BaseModel):
        secret = set(secret_fields(type(node)))
        for name in type(node).model_fields:
            walk = _inline_values if name in secret else _inline_secrets
            yield from walk(getattr(node, name), (*path, name))
    elif isinstance(node, list | tuple):
        for i, item in enumerate(node):
            yield from _inline_secrets(item, (*path, i))
    elif isinstance(node, dict):
        for key, item in node.items():
            yield from _inline_secrets(item, (*path, key))


def _inline_values(value: Any, path: KeyPath) -> Iterator[KeyPath]:
    """``path`` (or its items' paths) where a secret field holds an inline value."""
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _inline_values(item, (*path, i))
    elif value is not None and not isinstance(value, EnvSecret | PrefectSecret):
        yield path
