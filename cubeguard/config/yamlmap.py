"""YAML loading that remembers where every key came from, so errors can name the line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cubeguard.errors import CubeguardError

KeyPath = tuple[str | int, ...]


@dataclass
class LocatedYaml:
    """Plain YAML data plus the source line (1-based) of every key path in it."""

    data: Any
    file: Path
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line_of(self, path: KeyPath) -> int | None:
        """The line of ``path`` or of its nearest ancestor that has one."""
        for n in range(len(path), -1, -1):
            if path[:n] in self.lines:
                return self.lines[path[:n]]
        return None


def dotted(path: KeyPath) -> str:
    """``("steps", 0, "D")`` -> ``steps[0].D``: how errors name a key."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _walk(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], build: _Scalars) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = build(key_node)
            lines[(*path, str(key))] = key_node.start_mark.line + 1
            out[key] = _walk(value_node, (*path, str(key)), lines, build)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(item, (*path, i), lines, build) for i, item in enumerate(node.value)]
    return build(node)


class _Scalars:
    """Python values of scalar nodes, as ``yaml.safe_load`` would give them (tags are resolved already)."""

    def __init__(self) -> None:
        self._constructor = yaml.constructor.SafeConstructor()

    def __call__(self, node: yaml.Node) -> Any:
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError:  # e.g. a merge key: let the full loader say what it is
            return yaml.safe_load(yaml.serialize(node))


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when the wheel has it


def load_yaml(file: Path) -> LocatedYaml:
    """Parse ``file`` into plain data, recording the line of each key and list item."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CubeguardError(f"{file}: no such file; check the path.") from None
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise CubeguardError(f"{file}{where}: not valid YAML ({problem}); fix the syntax.") from None
    lines: dict[KeyPath, int] = {}
    data = _walk(node, (), lines, _Scalars()) if node is not None else None
    return LocatedYaml(data, file, lines)
