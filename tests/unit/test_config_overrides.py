"""Run-time overrides of a release config (Prefect UI reruns, ``cubeguard release --set``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubeguard.config import load_release
from cubeguard.config.overrides import apply_overrides, inline_secret_overrides, parse_key
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


def test_overridden_value_is_validated_like_a_written_one_and_its_error_names_the_override(config_file: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_release(config_file, {"steps[0].js": "many"})
    assert info.value.problems[0].startswith("steps[0].js (--set steps[0].js): input should be a valid integer")


def test_an_error_inside_an_overridden_mapping_names_the_override(config_file: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_release(config_file, {"gates": {"max_hellinger": 3}})
    assert info.value.problems[0].startswith("gates.max_hellinger (--set gates): input should be less than")


def test_unknown_override_key_is_a_config_error(config_file: Path) -> None:
    with pytest.raises(ConfigError, match=r"overrides: 'step\[0\].js': the config has no step; check the key"):
        load_release(config_file, {"step[0].js": 3})


SWAP_CONFIG = TINY_CONFIG.replace(
    "  household_columns: [region]\n",
    "  household_columns: [region]\n  record_key: {generate_seed: {env: CG_UNSET_KEY_SEED}}\n",
).replace(
    "steps:\n",
    "pre_tabular:\n  - {method: random_swap, swap_columns: [region], seed: 11, swap_rate: {env: CG_UNSET_RATE}}\nsteps:\n",
)
CKM_BY_REFERENCE = {"method": "cell_key", "D": {"env": "CG_UNSET_D"}, "V": {"env": "CG_UNSET_V"}, "js": 2}


@pytest.mark.parametrize(
    ("overrides", "found"),
    [
        ({"steps[0].js": 1, "pre_tabular[0].swap_columns": ["region"]}, {}),  # public keys
        ({"steps[0].V": 6}, {"steps[0].V": "steps[0].V"}),
        ({"steps.0.D": 8}, {"steps.0.D": "steps[0].D"}),
        ({"steps[0].D": {"env": "CG_UNSET_D"}, "pre_tabular[0].swap_rate": {"prefect_secret": "rate"}}, {}),
        ({"steps[0]": CKM_BY_REFERENCE}, {}),
        ({"steps[0]": {**CKM_BY_REFERENCE, "V": 3}}, {"steps[0]": "steps[0].V"}),  # a container holding one
        ({"steps": [{**CKM_BY_REFERENCE, "D": 5}]}, {"steps": "steps[0].D"}),
        ({"pre_tabular[0].seed": 12}, {"pre_tabular[0].seed": "pre_tabular[0].seed"}),
        ({"input.record_key.generate_seed": 7}, {"input.record_key.generate_seed": "input.record_key.generate_seed"}),
        ({"input.record_key": {"generate_seed": 7}}, {"input.record_key": "input.record_key.generate_seed"}),
        ({"input.record_key.generate_seed": {"env": "CG_UNSET_KEY_SEED"}}, {}),
    ],
)
def test_overrides_that_give_a_secret_inline_are_found(
    tmp_path: Path, overrides: dict[str, object], found: dict[str, str]
) -> None:
    path = tmp_path / "swap.yaml"
    path.write_text(SWAP_CONFIG)
    release = load_release(path, overrides)
    assert inline_secret_overrides(release.config, overrides) == found
