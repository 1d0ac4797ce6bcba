"""Tabulation split over row-group partitions (Dask workers) equals the single pass, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cubeguard.config import load_release
from cubeguard.microdata.read import partitions
from cubeguard.pipeline.tabulate_parts import plan_parts, sum_parts, tabulate_part
from cubeguard.pipeline.tabulation import tabulate_release
from tests.conftest import TINY_CONFIG, tiny_microdata


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    tiny_microdata().to_parquet(tmp_path / "data" / "persons.parquet", row_group_size=700)
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_CONFIG)
    return path


def test_partitions_cover_every_row_group_once(config: Path) -> None:
    spec = load_release(config).config.input
    for parts in (2, 3, 5, 50):
        found = partitions(spec, parts)
        assert [g for groups, _ in found for g in groups] == list(range(11))
        assert len(found) == min(parts, 11)
        assert [first for _, first in found] == [700 * groups[0] for groups, _ in found]


@pytest.mark.parametrize("overrides", [{}, {"input.record_key": {"generate_seed": 11}, "input.person_id": None}])
@pytest.mark.parametrize("parts", [2, 3, 5])
def test_sum_of_parts_is_the_single_pass(config: Path, parts: int, overrides: dict[str, object]) -> None:
    release = load_release(config, overrides)
    whole = tabulate_release(release)
    files = [tabulate_part(release, k, part) for k, part in enumerate(plan_parts(release, parts))]
    total = sum_parts(release, files[::-1])  # the order of the sum does not matter
    assert total.records == whole.records == 7585
    np.testing.assert_array_equal(total.counts, whole.counts)
    np.testing.assert_array_equal(total.key_sums, whole.key_sums)
    assert whole.key_sums.any()
