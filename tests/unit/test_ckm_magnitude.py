"""Unit tests of cubeguard.ckm.magnitude: R number emulation, keys, top-k, parameters, errors, Q6/Q7."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from cubeguard.ckm.magnitude import (
    FlexParams,
    MagnitudeCells,
    MagnitudeInputError,
    MagnitudeParams,
    NumPTable,
    NumPTableError,
    SimpleParams,
    merge_top,
    perturb_magnitudes,
    read_num_ptable,
    scramble_key,
    separation,
    stored_counts,
    top_contributions,
)
from cubeguard.ckm.magnitude._rnum import _accumulated, _digits_value, r_as_character, r_strtod, r_sum
from cubeguard.ckm.magnitude.lookup import UNDEFINED


def table(rows: list[tuple[float, float, float, float, float, str]]) -> NumPTable:
    """A p-table from (i, j, v, lb, ub, type) rows."""
    i, j, v, lb, ub, kind = (np.array(c) for c in zip(*rows, strict=True))
    return NumPTable(i=i.astype(float), j=j.astype(float), p=(ub - lb).astype(float), v=v.astype(float),
                     lb=lb.astype(float), ub=ub.astype(float), type=kind.astype(str))  # fmt: skip


MINUS_ONE = table([(0, 0, 0, 0, 1, "all"), (1, 0, -1, 0, 1, "all")])  # every lookup at a >= 1 gives v = -1


def cells(
    sums: list[float], top: list[list[float]], keys: list[float], counts: list[int] | None = None
) -> MagnitudeCells:
    n = len(sums)
    padded = np.full((n, 6), np.nan)
    for c, values in enumerate(top):
        padded[c, : len(values)] = values
    counts_arr = np.array(counts or [len(t) for t in top])
    s = np.array(sums, dtype=float)
    return MagnitudeCells(
        sums=s, counts=counts_arr, top=padded, n_top=np.minimum(counts_arr, 6), means=s / np.maximum(counts_arr, 1),
        spreads=np.zeros(n), keys=np.array(keys), keys_nz=np.array(keys),
    )  # fmt: skip


# --- R's numbers -------------------------------------------------------------------------------


def test_r_strtod_is_not_correctly_rounded_like_r() -> None:
    assert r_strtod("0.194739484693862") == 0.19473948469386199
    assert float("0.194739484693862") != 0.19473948469386199
    assert r_strtod("0.5") == 0.5
    assert np.isnan(r_strtod("1.-0623e"))
    assert r_strtod("1.e-0623") == 0.0


@given(st.text(alphabet="0123456789", min_size=1, max_size=24))
def test_r_strtod_digits_equal_rs_digit_loop(digits: str) -> None:
    # up to 19 digits the value is formed in one step; R's loop is exact there, so both agree to the bit
    # (a mantissa of double's 53 bits instead of x87's 64 would differ from 16 digits on)
    fast, loop = _digits_value(digits), _accumulated(digits)
    assert fast.tobytes() == loop.tobytes()
    if len(digits) <= 19:
        assert int(fast) == int(digits)


def test_r_as_character_uses_15_digits_and_r_notation() -> None:
    assert r_as_character(0.2906835649628192) == "0.290683564962819"
    assert r_as_character(0.5) == "0.5"
    assert r_as_character(0.0001234) == "0.0001234"
    assert r_as_character(1.23e-06) == "1.23e-06"
    assert r_as_character(0.0) == "0"


def test_r_sum_accumulates_in_long_double() -> None:
    assert r_sum([1.0, 0.8 * 0.8, 0.25]) == 1.8900000000000001
    assert r_sum([1e16, 1.0, 1.0]) == 1.0000000000000002e16  # double sums would lose both ones


def test_scramble_key_rotates_digits_as_cellkey() -> None:
    assert scramble_key(0.2906835649628192, 3, same_key=False) == [
        0.906835649628192,
        0.068356496281929,
        0.68356496281929,
    ]
    assert scramble_key(0.2906835649628192, 2, same_key=True) == [0.290683564962819, 0.906835649628192]
    assert scramble_key(0.2906835649628192, 1, same_key=True) == [0.2906835649628192]
    assert scramble_key(0.5, 3, same_key=False) == [0.05, 0.0, 0.0]
    assert scramble_key(0.0, 2, same_key=False) == [0.0, 0.0]


# --- top-k ---------------------------------------------------------------------------------------


def test_top_contributions_order_by_absolute_value_then_rank() -> None:
    top = top_contributions([0, 0, 0, 1], [3.0, -3.0, 5.0, 1.0], [2, 1, 0, 3], 3, k=2)
    assert top.values[0].tolist() == [5.0, -3.0]  # the tie goes to the lower rank
    assert top.n.tolist() == [2, 1, 0]
    assert np.isnan(top.values[2]).all()


def test_merge_top_equals_top_of_the_union() -> None:
    values = np.array([4.0, -9.0, 2.0, 7.0, -7.5, 1.0, 8.0])
    child = np.array([0, 0, 0, 1, 1, 2, 2])
    ranks = np.arange(7)
    children = top_contributions(child, values, ranks, 3, k=2)
    merged = merge_top([0, 0, 1], children, 2)
    direct = top_contributions(np.array([0, 0, 0, 0, 0, 1, 1]), values, ranks, 2, k=2)
    np.testing.assert_array_equal(merged.values, direct.values)
    assert merged.values[0].tolist() == [-9.0, -7.5]


def test_stored_counts_correct_and_cellkey_bug() -> None:
    counts = [20, 7, 3, 9, 0, 12, 1]
    assert stored_counts(counts).tolist() == [6, 6, 3, 6, 0, 6, 1]
    # cellKey 1.0.2: running minimum, then a single value once it reached 0 (golden README Q1)
    assert stored_counts(counts, "cellkey_1_0_2").tolist() == [6, 6, 3, 3, 0, 1, 1]


# --- parameters and their errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fp": 100, "p_small": 0.05, "p_large": 0.3}, "p_small must be >= p_large"),
        ({"fp": 100, "p_small": 0.3, "p_large": 0.05, "epsilon": (0.5,)}, "the first value of epsilon must equal 1"),
        ({"fp": 100, "p_small": 0.3, "p_large": 0.05, "epsilon": (1, 0.2, 0.5)}, "epsilon must be in descending order"),
        ({"fp": 100, "p_small": 0.3, "p_large": 0.05, "epsilon": (1, -0.5)}, r"epsilon values must lie in \[0, 1\]"),
        ({"fp": 100, "p_small": 0.3, "p_large": 0.05, "epsilon": ()}, "epsilon needs at least one value"),
        ({"fp": 0, "p_small": 0.3, "p_large": 0.05}, "greater than 0"),
    ],
)
def test_flex_params_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        FlexParams(**kwargs)  # type: ignore[arg-type]


def test_simple_params_error() -> None:
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        SimpleParams(p=1.5)


def test_magnitude_params_errors() -> None:
    flex = FlexParams(fp=100, p_small=0.3, p_large=0.05, epsilon=(1, 0.5))
    with pytest.raises(ValidationError, match="top_k must be 1 for type 'mean'"):
        MagnitudeParams(type="mean", top_k=2, mult=flex)
    with pytest.raises(ValidationError, match="epsilon has 2 values but top_k is 3"):
        MagnitudeParams(type="top_contr", top_k=3, mult=flex)
    with pytest.raises(ValidationError, match="less than or equal to 6"):
        MagnitudeParams(type="top_contr", top_k=7, mult=flex)


# --- p-tables and their errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([(0, 0, 0, 0, 1, "all"), (1, 0, -1, 0, 1, "many")], r"unknown row types \['many'\]"),
        ([(1, 0, -1, 0, 1, "all")], "type 'all' has no rows with i = 0"),
        (
            [(0, 0, 0, 0, 1, "all"), (1, 0, -1, 0, 0.5, "all")],
            "type 'all', i = 1: the rows must be adjacent with ub ascending to 1",
        ),
    ],
)
def test_num_ptable_errors(rows: list[tuple[float, float, float, float, float, str]], message: str) -> None:
    with pytest.raises(NumPTableError, match=message):
        table(rows)


def test_read_num_ptable_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    missing.write_text("i,j,p,v,type\n0,0,1,0,all\n")
    with pytest.raises(NumPTableError, match=r"no rows or no columns \['p_int_lb', 'p_int_ub'\]"):
        read_num_ptable(missing)
    bad = tmp_path / "bad.csv"
    bad.write_text("i,j,p,v,p_int_lb,p_int_ub,type\n0,0,1,zero,0,1,all\n")
    with pytest.raises(NumPTableError, match="must be numbers"):
        read_num_ptable(bad)
    broken = tmp_path / "broken.csv"
    broken.write_text("i,j,p,v,p_int_lb,p_int_ub,type\n1,0,1,0,0,1,all\n")
    with pytest.raises(NumPTableError, match=r"broken.csv: not a usable numeric p-table"):
        read_num_ptable(broken)


def test_a_table_of_one_parity_is_read_but_not_used_alone() -> None:
    even = table([(0, 0, 0, 0, 1, "even"), (1, 0, -1, 0, 1, "even")])  # as create_num_ptable(type="even")
    params = MagnitudeParams(mult=FlexParams(fp=10, p_small=0.3, p_large=0.1, epsilon=(1,)))
    with pytest.raises(NumPTableError, match="needs rows of type 'all', or of both 'even' and 'odd'; add the missing"):
        separation(params, even)


def test_even_odd_tables_need_top_k_one() -> None:
    even_odd = table([(0, 0, 0, 0, 1, "even"), (1, 1, 0, 0, 1, "even"), (0, 0, 0, 0, 1, "odd"), (1, 1, 0, 0, 1, "odd")])
    params = MagnitudeParams(top_k=2, mult=FlexParams(fp=10, p_small=0.3, p_large=0.1, epsilon=(1, 0.5)))
    with pytest.raises(NumPTableError, match="even/odd p-tables need top_k = 1"):
        separation(params, even_odd)


def test_cells_of_other_lengths_are_refused() -> None:
    c = cells([10.0, 5.0], [[10.0], [5.0]], [0.3, 0.6])
    params = MagnitudeParams(mult=SimpleParams(p=0.1))
    with pytest.raises(MagnitudeInputError, match="sensitive must have one entry per cell"):
        perturb_magnitudes(c, params, MINUS_ONE, sensitive=[True])


# --- where cellKey stops (Q6, Q7) -------------------------------------------------------------------


def test_q6_simple_params_sum_zero_with_a_key_does_not_crash() -> None:
    """cellKey stops on a = 0/0; cubeguard skips the component and the cell stays 0."""
    params = MagnitudeParams(type="sum", mult=SimpleParams(p=0.05))
    result = perturb_magnitudes(cells([0.0], [[0.0, 0.0]], [0.37]), params, MINUS_ONE)
    assert result.perturbed.tolist() == [0.0]
    assert result.mode[0, 0] == UNDEFINED
    assert not result.returned_early[0]


def test_q7_component_after_a_clamp_to_zero_does_not_crash() -> None:
    """Flex, zs = 0: component 1 rescales, gets v = -1 and clamps to 0; component 2 is 0/0 in cellKey."""
    params = MagnitudeParams(top_k=2, mult=FlexParams(fp=1e9, p_small=0.5, p_large=0.1, epsilon=(1, 0.5)))
    result = perturb_magnitudes(cells([100.0], [[-500.0, 400.0]], [0.37]), params, MINUS_ONE)
    assert result.steps["x_hat"][0].tolist() == [-100.0, 0.0]
    assert result.mode[0].tolist() == [0, UNDEFINED]
    assert result.perturbed.tolist() == [0.0]


def test_mu_c_applies_to_sensitive_cells_on_every_component() -> None:
    zero = table([(0, 0, 0, 0, 1, "all"), (1, 1, 0, 0, 1, "all")])
    params = MagnitudeParams(top_k=2, mu_c=2.0, mult=FlexParams(fp=1e9, p_small=0.1, p_large=0.05, epsilon=(1, 0.5)))
    c = cells([1000.0, 1000.0], [[600.0, 400.0], [600.0, 400.0]], [0.37, 0.37])
    result = perturb_magnitudes(c, params, zero, sensitive=[True, False])
    # v = 0 everywhere: only mu moves the sensitive cell, by 2 |x_delta| per component (Q4)
    assert result.steps["x_hat"][0].tolist() == [120.0, 80.0]
    assert result.perturbed.tolist() == [1200.0, 1000.0]


def test_a_cell_key_of_zero_leaves_the_sum_unperturbed() -> None:
    """Deviation: cellKey publishes 0 for a cell whose key is 0, even with a non-zero sum."""
    params = MagnitudeParams(type="sum", mult=SimpleParams(p=0.5))
    result = perturb_magnitudes(cells([40.0, 40.0], [[40.0], [40.0]], [0.0, 0.37]), params, MINUS_ONE)
    assert result.returned_early.tolist() == [True, False]
    assert result.perturbed.tolist() == [40.0, 20.0]
