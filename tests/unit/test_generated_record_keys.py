"""Record keys generated from person ids (``input.record_key.generate_seed``): whole numbers and text ids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cubeguard.config import load_release
from cubeguard.errors import CubeguardError
from cubeguard.microdata.rkeys import keys_from_ids
from cubeguard.pipeline.tabulation import tabulate_release
from tests.conftest import TINY_CONFIG, tiny_microdata


def test_text_ids_give_keys_fixed_per_person_whatever_the_order_or_dtype() -> None:
    ids = np.array([f"P{k:06d}" for k in range(20_000)], dtype=object)
    keys = keys_from_ids(ids, 11)
    assert ((keys >= 0) & (keys < 1)).all() and len(np.unique(keys)) == len(ids)
    order = np.random.default_rng(3).permutation(len(ids))
    np.testing.assert_array_equal(keys_from_ids(ids[order], 11), keys[order])
    np.testing.assert_array_equal(keys_from_ids(ids.astype(str), 11), keys)  # numpy text, the same persons
    assert not np.array_equal(keys_from_ids(ids, 12), keys)  # another seed, other keys
    assert abs(keys.mean() - 0.5) < 4 * (1 / 12 / len(ids)) ** 0.5  # uniform: a 4-sigma bound (FPR < 1e-4)
    assert keys_from_ids(np.array(["42"]), 11)[0] != keys_from_ids(np.array([42]), 11)[0]


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (np.array([1.0, 2.5]), "input.person_id holds numbers that are not whole"),
        (np.array(["a", None], dtype=object), "input.person_id has empty ids"),
    ],
)
def test_ids_that_cannot_key_a_person_say_what_to_give(ids: np.ndarray, message: str) -> None:
    with pytest.raises(CubeguardError, match=message):
        keys_from_ids(ids, 11)


def test_a_release_with_text_person_ids_generates_its_keys(tmp_path: Path) -> None:
    data = tiny_microdata()
    data["pid"] = [f"person-{k}" for k in data["pid"]]
    (tmp_path / "data").mkdir()
    data.to_parquet(tmp_path / "data" / "persons.parquet", row_group_size=2000)
    data.iloc[::-1].to_parquet(tmp_path / "data" / "reversed.parquet", row_group_size=2000)
    (tmp_path / "tiny.yaml").write_text(TINY_CONFIG)
    generated = {"input.record_key": {"generate_seed": 11}, "input.person_id": "pid"}
    whole = tabulate_release(load_release(tmp_path / "tiny.yaml", generated))
    other = tabulate_release(
        load_release(tmp_path / "tiny.yaml", {**generated, "input.microdata": "data/reversed.parquet"})
    )
    assert whole.records == len(data) and whole.key_sums.any()
    np.testing.assert_array_equal(whole.key_sums, other.key_sums)  # the keys follow the persons, not the rows
