"""Run-time overrides of a release config (Prefect UI reruns, ``cubeguard release --set``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubeguard.config import load_release
from cubeguard.config.overrides import apply_overrides, parse_key
from cubeguard.errors import ConfigError
from tests.conftest import TINY_CONFIG


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("steps[0].js", ("steps", 0, "js")),
        ("steps.0.js", ("steps", 0, "js")),
        ("gates", ("gates",)),
        ("a[1][2].b", ("a", 1, 2, "b")),
    ],
)
def test_parse_key(key: str, path: tuple[object, ...]) -> None:
    assert parse_key(key) == path


@pytest.mark.parametrize("key", ["", ".a", "a..b", "a[x]", "a]", "a[1"])
def test_parse_key_rejects_malformed(key: str) -> None:
    with pytest.raises(ValueError):
        parse_key(key)


def test_apply_sets_values_on_a_copy() -> None:
    data = {"steps": [{"method": "cell_key", "D": 5}], "output": {"folder": "out"}}
    out, problems = apply_overrides(data, {"steps[0].D": 7, "steps[0].pstay": 0.5, "output.folder": "x"})
    assert problems == []
    assert out == {"steps": [{"method": "cell_key", "D": 7, "pstay": 0.5}], "output": {"folder": "x"}}
    assert data["steps"][0] == {"method": "cell_key", "D": 5}


def test_apply_reports_every_bad_key() -> None:
    data = {"steps": [{"D": 5}]}
    _, problems = apply_overrides(data, {"steps[3].D": 1, "nothing.here": 1, "steps[0]x": 2})
    assert problems == [
        "overrides: 'steps[3].D': the config has no steps[3]; check the key",
        "overrides: 'nothing.here': the config has no nothing; check the key",
        "overrides: 'steps[0]x' is not a key path; write it as in config errors, e.g. steps[0].js",
    ]


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "release.yaml"
    path.write_text(TINY_CONFIG)
    return path


def test_override_changes_the_release_and_its_hash(config_file: Path) -> None:
    plain = load_release(config_file)
    changed = load_release(config_file, {"steps[0].js": 1})
    assert plain.config.steps[0].js == 2  # type: ignore[union-attr]
    assert changed.config.steps[0].js == 1  # type: ignore[union-attr]
    assert changed.config_hash != plain.config_hash
    assert load_release(config_file, {"steps[0].js": 2}).config_hash == plain.config_hash


def test_overridden_value_is_validated_like_a_written_one(config_file: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_release(config_file, {"steps[0].js": "many"})
    assert info.value.problems[0].startswith("steps[0].js (release.yaml line ")


def test_unknown_override_key_is_a_config_error(config_file: Path) -> None:
    with pytest.raises(ConfigError, match=r"overrides: 'step\[0\].js': the config has no step; check the key"):
        load_release(config_file, {"step[0].js": 3})
