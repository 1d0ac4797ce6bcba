"""YAML loading with key lines (``cubeguard.config.yamlmap``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cubeguard.config.yamlmap import KeyPath, load_yaml

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").rglob("*.yaml"))


def _reference_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    """Key lines from PyYAML's pure-Python composer, walked the plain way."""
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(yaml.safe_load(yaml.serialize(key_node)))
            lines[(*path, key)] = key_node.start_mark.line + 1
            _reference_lines(value_node, (*path, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _reference_lines(item, (*path, i), lines)


@pytest.mark.parametrize("file", CONFIGS, ids=[str(f.relative_to(f.parents[1])) for f in CONFIGS])
def test_shipped_yaml_loads_as_safe_load_with_every_key_line(file: Path) -> None:
    text = file.read_text(encoding="utf-8")
    loaded = load_yaml(file)
    assert loaded.data == yaml.safe_load(text)
    expected: dict[KeyPath, int] = {}
    _reference_lines(yaml.compose(text, Loader=yaml.SafeLoader), (), expected)
    assert loaded.lines == expected


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: [1.5, true, null, '007', 2021-01-01, 0x1F, .inf, ~]\n3: three\n",
        "base: &b {x: 1}\nother: *b\nlist: [*b, *b]\n",
    ],
)
def test_scalars_and_aliases_as_safe_load(tmp_path: Path, text: str) -> None:
    file = tmp_path / "x.yaml"
    file.write_text(text)
    assert load_yaml(file).data == yaml.safe_load(text)
