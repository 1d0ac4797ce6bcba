"""YAML loading with key lines (``cubeguard.config.yamlmap``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cubeguard.config.yamlmap import KeyPath, LocatedYaml, load_yaml
from cubeguard.errors import ConfigError

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


def _load(tmp_path: Path, text: str, name: str = "x.yaml") -> LocatedYaml:
    file = tmp_path / name
    file.write_text(text)
    return load_yaml(file)


def _duplicates(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, text, "demo.yaml")
    return info.value.problems


SECRETS = ("4711", "8152", "9903", "s3cret")  # values that must never appear in a message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: a\nD: 4711\nV: 3\nD: 8152\n", "D (demo.yaml lines 2 and 4): the key 'D' is given twice; keep one"),
        (
            "input:\n  microdata: s3cret.parquet\n  strata: [x]\n  microdata: 9903.parquet\n",
            "input.microdata (demo.yaml lines 2 and 4): the key 'microdata' is given twice; keep one",
        ),
        (
            "steps:\n  - method: cell_key\n    D: 4711\n    V: 3\n    D: 8152\n",
            "steps[0].D (demo.yaml lines 3 and 5): the key 'D' is given twice; keep one",
        ),
        (
            "steps:\n  - {D: 4711, D: 8152, D: 9903}\n",
            "steps[0].D (demo.yaml line 2): the key 'D' is given 3 times; keep one",
        ),
        ("1: 4711\n1.0: 8152\n", "1 (demo.yaml lines 1 and 2): the key '1' is given twice; keep one"),  # equal keys
    ],
)
def test_a_key_given_twice_names_both_lines_and_no_value(tmp_path: Path, text: str, expected: str) -> None:
    (problem,) = _duplicates(tmp_path, text)
    assert problem == expected
    assert not any(secret in problem for secret in SECRETS)


def test_every_duplicate_is_listed_in_line_order(tmp_path: Path) -> None:
    text = "steps:\n  - {method: cell_key, D: 5, D: 8}\nname: a\nname: b\nx: &x {k: 1, k: 2}\ny: *x\n"
    assert _duplicates(tmp_path, text) == [
        "steps[0].D (demo.yaml line 2): the key 'D' is given twice; keep one",
        "name (demo.yaml lines 3 and 4): the key 'name' is given twice; keep one",
        "x.k (demo.yaml line 5): the key 'k' is given twice; keep one",  # once, not again at its alias y
    ]


MERGES = [
    "base: &b {x: 1, y: {deep: 2}}\nuse:\n  <<: *b\n",
    "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n  z: 4\n",  # a written key overrides a merged one
    "a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nuse:\n  <<: [*a, *b]\n  w: 0\n",  # the first of a list wins
    "a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nuse: {<<: *b, x: 3}\n",  # nested merges
    "use:\n  y: 3\n  <<: {x: 1, y: 2}\n",  # written before the merge, still wins
    "list: &l [1, 2]\nuse: [*l, *l]\nmap: &m {k: *l}\nagain: *m\n",  # plain aliases
]


@pytest.mark.parametrize("text", MERGES)
def test_merge_keys_give_safe_load_data(tmp_path: Path, text: str) -> None:
    assert _load(tmp_path, text).data == yaml.safe_load(text)


def test_merged_keys_keep_the_line_where_they_are_written(tmp_path: Path) -> None:
    text = "a: &a\n  x: 1\n  y: {deep: 2}\nb: &b\n  y: 3\n  z: 4\nuse:\n  <<: [*a, *b]\n  x: 9\n"
    loaded = _load(tmp_path, text)
    assert loaded.data["use"] == {"x": 9, "y": {"deep": 2}, "z": 4} == yaml.safe_load(text)["use"]
    assert loaded.lines[("use", "x")] == 9  # written here, overriding a's x
    assert loaded.lines[("use", "y")] == 3  # from a
    assert loaded.lines[("use", "y", "deep")] == 3
    assert loaded.lines[("use", "z")] == 6  # from b
    assert ("use", "<<") not in loaded.lines


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("use: {<<: 3}\n", "use (demo.yaml line 1): a merge key '<<' takes a mapping or a list of mappings"),
        ("a: &a\n  <<: *a\n", "a (demo.yaml line 1): an alias refers to a mapping or list that contains it"),
        ("a: &a [1, *a]\n", "a[1] (demo.yaml line 1): an alias refers to a mapping or list that contains it"),
        (
            "a: &a {x: 1}\nb: &b {y: 1}\nuse:\n  <<: *a\n  <<: *b\n",
            "use.<< (demo.yaml lines 4 and 5): the key '<<' is given twice; keep one",
        ),
    ],
)
def test_bad_merges_and_alias_cycles_are_one_located_sentence(tmp_path: Path, text: str, expected: str) -> None:
    (problem,) = _duplicates(tmp_path, text)
    assert problem.startswith(expected)
