"""Run-time overrides of a release config: ``{"steps[0].js": 3, "gates.max_hellinger": 0.1}``.

A rerun from the Prefect UI (or ``cubeguard release --set KEY=VALUE``) changes a few keys of the
config without editing the file. Keys are the same dotted paths the config errors print, so a
user copies them from an error message. Overrides are applied to the YAML data before validation,
so the changed config is checked exactly like a written one and its hash covers the change.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from cubeguard.config.yamlmap import KeyPath, dotted

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
