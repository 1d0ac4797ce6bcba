"""YAML loading that remembers where every key came from, so errors can name the line."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cubeguard.errors import ConfigError, CubeguardError

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


_MERGE = "tag:yaml.org,2002:merge"  # the key ``<<``
_VALUE = "tag:yaml.org,2002:value"  # the key ``=``, a plain string to safe_load
Pair = tuple[Any, yaml.Node, yaml.Node]  # key, key node, value node


class _Walker:
    """Builds the data of a composed document as ``yaml.safe_load`` would, recording key lines.

    Unlike ``safe_load`` it refuses a key given twice in one mapping (the last would silently win,
    and it may be a secret such as D): every such key is collected in ``duplicates``. Merge keys
    (``<<: *defaults``, ``<<: [*a, *b]``) merge as in ``safe_load``: keys written in the mapping
    override merged ones, an earlier mapping of a merge list overrides a later one, and a merged
    key keeps the line where it is written in the merged mapping.
    """

    def __init__(self, file: Path, within: KeyPath) -> None:
        self.file = file
        self.within = within
        self.lines: dict[KeyPath, int] = {}
        self.duplicates: list[tuple[int, str]] = []  # (first line, message)
        self._build = _Scalars()
        self._checked: set[int] = set()  # mappings whose duplicates are reported (aliases repeat them)
        self._open: set[int] = set()  # collections being built: an alias to one of them is a cycle

    def walk(self, node: yaml.Node, path: KeyPath) -> Any:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if not isinstance(node, yaml.SequenceNode | yaml.MappingNode):
            return self._build(node)
        self._enter(node, path)
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.walk(item, (*path, i)) for i, item in enumerate(node.value)]
            winners: dict[Any, tuple[yaml.Node, yaml.Node]] = {}
            for key, key_node, value_node in self._pairs(node, path):
                winners[key] = (key_node, value_node)  # a dict keeps the first key's place, the last value
            out: dict[Any, Any] = {}
            for key, (key_node, value_node) in winners.items():
                self.lines[(*path, str(key))] = key_node.start_mark.line + 1
                out[key] = self.walk(value_node, (*path, str(key)))
            return out
        finally:
            self._open.discard(id(node))

    def _pairs(self, node: yaml.MappingNode, path: KeyPath) -> list[Pair]:
        """The mapping's pairs with merges expanded: merged pairs first, as SafeConstructor.flatten_mapping."""
        merged: list[Pair] = []
        written: list[Pair] = []
        merge_keys: list[yaml.Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merge_keys.append(key_node)
                merged.extend(self._merged(value_node, path))
            else:
                written.append((self._key(key_node, path), key_node, value_node))
        self._check_duplicates(node, path, [*((k, n) for k, n, _ in written), *(("<<", n) for n in merge_keys)])
        return merged + written

    def _merged(self, value: yaml.Node, path: KeyPath) -> list[Pair]:
        items = value.value if isinstance(value, yaml.SequenceNode) else [value]
        if not all(isinstance(item, yaml.MappingNode) for item in items):
            raise self._error(
                path, value, "a merge key '<<' takes a mapping or a list of mappings (<<: *defaults); fix the merge"
            )
        out: list[Pair] = []
        for item in reversed(items):  # the first mapping of a list wins, so its pairs come last
            self._enter(item, path)
            out.extend(self._pairs(item, path))
            self._open.discard(id(item))
        return out

    def _key(self, node: yaml.Node, path: KeyPath) -> Any:
        if node.tag == _VALUE:
            return node.value
        key = self._build(node)
        if not isinstance(key, Hashable):
            raise self._error(path, node, "a key must be a single value, not a list or mapping; fix the key")
        return key

    def _check_duplicates(self, node: yaml.Node, path: KeyPath, keys: list[tuple[Any, yaml.Node]]) -> None:
        if id(node) in self._checked:
            return
        self._checked.add(id(node))
        lines: dict[Any, list[int]] = {}
        for key, key_node in keys:
            lines.setdefault(key, []).append(key_node.start_mark.line + 1)
        for key, found in lines.items():
            if len(found) > 1:
                where = _lines_text(sorted(set(found)))
                times = "twice" if len(found) == 2 else f"{len(found)} times"
                self.duplicates.append(
                    (
                        min(found),
                        f"{dotted((*self.within, *path, str(key)))} ({self.file.name} {where}): "
                        f"the key '{key}' is given {times}; keep one",
                    )
                )

    def _enter(self, node: yaml.Node, path: KeyPath) -> None:
        if id(node) in self._open:
            raise self._error(path, node, "an alias refers to a mapping or list that contains it; remove the cycle")
        self._open.add(id(node))

    def _error(self, path: KeyPath, node: yaml.Node, message: str) -> ConfigError:
        where = f"{self.file.name} line {node.start_mark.line + 1}"
        return ConfigError(self.file, [f"{dotted((*self.within, *path))} ({where}): {message}"])


def _lines_text(lines: list[int]) -> str:
    """``[12]`` -> ``line 12``; ``[12, 14]`` -> ``lines 12 and 14``; ``[1, 2, 3]`` -> ``lines 1, 2 and 3``."""
    if len(lines) == 1:
        return f"line {lines[0]}"
    return "lines " + ", ".join(map(str, lines[:-1])) + f" and {lines[-1]}"


class _Scalars:
    """Python values of scalar nodes, as ``yaml.safe_load`` would give them (tags are resolved already)."""

    def __init__(self) -> None:
        self._constructor = yaml.constructor.SafeConstructor()

    def __call__(self, node: yaml.Node) -> Any:
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError:  # let the full loader say what it is
            return yaml.safe_load(yaml.serialize(node))


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when the wheel has it


def text_line(file: Path, offset: int) -> int:
    """The 1-based line of byte ``offset`` in ``file``."""
    with file.open("rb") as f:
        return f.read(offset).count(b"\n") + 1


def load_yaml(file: Path, within: KeyPath = ()) -> LocatedYaml:
    """Parse ``file`` into plain data, recording the line of each key and list item.

    Args:
        file: the YAML file.
        within: the key path the file's content stands at in the config, used in error messages
            (``("variables", "SEX")`` for a classification file).

    Raises:
        CubeguardError: if the file is missing or is not valid YAML.
        ConfigError: listing every key given twice in one mapping (lines, never values), or for a
            bad merge key or an alias cycle.
    """
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CubeguardError(f"{file}: no such file; check the path.") from None
    except IsADirectoryError:
        raise CubeguardError(f"{file} is a folder, not a YAML file; name the file.") from None
    except UnicodeDecodeError as exc:
        line = text_line(file, exc.start)
        raise CubeguardError(
            f"{file} line {line}: not UTF-8 text (byte {exc.object[exc.start]:#04x}); save the file as UTF-8."
        ) from None
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise CubeguardError(f"{file}{where}: not valid YAML ({problem}); fix the syntax.") from None
    walker = _Walker(file, within)
    data = walker.walk(node, ()) if node is not None else None
    if walker.duplicates:
        raise ConfigError(file, [message for _, message in sorted(walker.duplicates)])
    return LocatedYaml(data, file, walker.lines)
