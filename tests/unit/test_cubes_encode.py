"""Encoding record batches for the tabulation kernels (``cubeguard.cubes.encode``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from cubeguard.ckm.keys import KeyScale
from cubeguard.config import load_release
from cubeguard.cubes.encode import column_positions, encode_batch
from cubeguard.cubes.tabulate import CubePlan, Tabulator

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"
AGES = [0, 7, 15, 44, 85, 99, 120, None, -3, 200]  # -3 and 200 are outside AGE.M; None is missing
SEXES = ["1", "2", "2", "1", None, "1", "2", "9", "1", "2"]


@pytest.fixture(scope="module")
def release():
    return load_release(CONFIG)


def _tabulate(release, age: pa.Array, sex: pa.Array) -> Tabulator:
    bds = (release.breakdowns["SEX"], release.breakdowns["AGE.M"])
    tab = Tabulator([CubePlan("c", bds, "total")], release.config.populations, KeyScale(), "rkey", None)
    keys = pa.array(np.linspace(0.0, 0.9, len(AGES)))
    tab.add_batch(pa.RecordBatch.from_arrays([age, sex, keys], ["age", "sex", "rkey"]))
    return tab


@pytest.mark.parametrize("age_type", [pa.int8(), pa.uint8(), pa.int16(), pa.int32(), pa.int64(), pa.uint64()])
@pytest.mark.parametrize("sex_type", [pa.string(), pa.dictionary(pa.int8(), pa.string())])
def test_every_integer_and_dictionary_type_gives_the_same_cells(release, age_type, sex_type) -> None:
    reference = _tabulate(release, pa.array(AGES, pa.int64()), pa.array(SEXES))
    bits = age_type.bit_width
    low, high = (0, 2**bits) if pa.types.is_unsigned_integer(age_type) else (-(2 ** (bits - 1)), 2 ** (bits - 1))
    ages = [a if a is not None and low <= a < high else None for a in AGES]  # what the type can hold
    tab = _tabulate(release, pa.array(ages, pa.int64()).cast(age_type), pa.array(SEXES).cast(sex_type))
    expected = _tabulate(release, pa.array(ages, pa.int64()), pa.array(SEXES))
    assert _raw_is_integer(release, ages, age_type, sex_type)
    np.testing.assert_array_equal(tab.counts, expected.counts)
    np.testing.assert_array_equal(tab.key_sums, expected.key_sums)
    assert tab.bad[0] == expected.bad[0]
    # records with a missing or unknown code are counted as bad, never placed in a cell
    assert reference.bad[0] == 4 and reference.counts.sum() == 6  # rows 4 (sex), 7, 8, 9 (age)


def _raw_is_integer(release, ages: list[int | None], age_type: pa.DataType, sex_type: pa.DataType) -> bool:
    batch = pa.RecordBatch.from_arrays(
        [pa.array(ages, pa.int64()).cast(age_type), pa.array(SEXES).cast(sex_type)], ["age", "sex"]
    )
    return encode_batch(batch, [release.breakdowns["SEX"], release.breakdowns["AGE.M"]]).raw.dtype.kind == "i"


def test_encoded_batch_maps_raw_values_through_each_breakdowns_table(release) -> None:
    bds = [release.breakdowns["SEX"], release.breakdowns["AGE.M"], release.breakdowns["AGE.H"]]
    batch = pa.RecordBatch.from_arrays(
        [pa.array([44, 7], pa.int8()), pa.array(["2", "1"]).dictionary_encode()], ["age", "sex"]
    )
    enc = encode_batch(batch, bds)
    assert enc.raw.dtype == np.int32 and enc.raw.shape == (2, 2)  # age read once for AGE.M and AGE.H
    for b, bd in enumerate(bds):
        x = enc.raw[enc.column_of[b]] - enc.first[b]
        got = enc.luts[b, x]
        values = ["2", "1"] if bd.id == "SEX" else [44, 7]
        expected = bd.lookup_codes(values) if bd.id == "SEX" else bd.lookup_ints(np.array(values))
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(column_positions(batch.column(bd.column), bd), expected)
