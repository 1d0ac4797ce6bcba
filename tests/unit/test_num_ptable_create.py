"""create_num_ptable: its parameters, its grid, its errors and the CSV it writes (goldens: tests/golden)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cubeguard.ckm.magnitude import NumPTableError, read_num_ptable
from cubeguard.ckm.magnitude.ptable_create import (
    NumPTableInfeasibleError,
    NumPTableParams,
    create_num_ptable,
    noise_grid,
    num_ptable_params,
    write_num_ptable,
)


def test_parameters_are_normalised_as_ptable_does() -> None:
    params = num_ptable_params(D=5, V=1.0, icat=(5, 1, 3, 3), optim=4, mono=False)
    assert params.icat == (1, 3, 5)
    assert params.points() == [(1, 4, False), (3, 4, False), (5, 4, False)]
    assert "D=" not in repr(params) and "V=" not in repr(params)  # secret


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"D": 10, "V": 3.0, "icat": (1, 5)}, "icat must hold 1 and D"),
        ({"D": 10, "V": 3.0, "icat": (1, 10, 12)}, "the largest entry of icat can be D"),
        ({"D": 10, "V": 3.0, "icat": (1, 10), "step": 5}, "D \\* step must be below 50: reduce D or step"),
        ({"D": 10, "V": 3.0, "icat": (1, 10), "optim": (4, 1, 1)}, "give one optim or one per entry of icat \\(2\\)"),
        ({"D": 10, "V": 3.0, "icat": (1, 10), "mono": (True,) * 3}, "give one mono or one per entry of icat"),
        ({"D": 10, "V": -3.0, "icat": (1, 10)}, "V: Input should be greater than 0"),
    ],
)
def test_parameter_errors_name_what_to_change(values: dict[str, object], message: str) -> None:
    with pytest.raises(NumPTableError, match=f"invalid numeric p-table parameters: .*{message}") as caught:
        num_ptable_params(**values)
    assert "-3" not in str(caught.value)  # never the (secret) values


def test_the_grid_is_r_seq_rounded_to_four_decimals() -> None:
    j, v = noise_grid(3, 5, 5)  # starts at max(i - D, 0) = 0
    assert j.size == 8 * 5 + 1 and j[0] == 0.0 and j[-1] == 8.0
    np.testing.assert_array_equal(j, np.round(np.arange(41) / 5, 4))
    np.testing.assert_array_equal(v, np.round(j - 3, 4))
    assert 0.6 in j and 0.6000000000000001 not in j  # 3 * 0.2 in R's seq, rounded back
    j3, _ = noise_grid(1, 1, 3)
    assert j3.tolist() == [0.0, 0.3333, 0.6667, 1.0, 1.3333, 1.6667, 2.0]


def test_a_table_meets_zero_mean_and_the_variance() -> None:
    table = create_num_ptable(NumPTableParams(D=4, V=1.5, step=2, icat=(1, 2, 4), optim=4))
    assert sorted(set(table.i.tolist())) == [0, 1, 2, 4]
    for point in (1.0, 2.0, 4.0):
        rows = table.i == point
        assert abs(float(table.p[rows] @ table.v[rows])) < 1e-6
        assert abs(float(table.p[rows] @ table.v[rows] ** 2) - 1.5) < 1e-6


def test_infeasible_parameters_raise_for_the_point() -> None:
    with pytest.raises(NumPTableInfeasibleError, match="No noise distribution for i = 1 meets") as caught:
        create_num_ptable(NumPTableParams(D=1, V=5.0, step=1, icat=(1,), optim=(4,)))
    assert caught.value.point == 1


def test_the_csv_reads_back_as_the_same_table(tmp_path: Path) -> None:
    table = create_num_ptable(NumPTableParams(D=2, V=1.0, step=4, icat=(1, 2), type="odd"))
    back = read_num_ptable(write_num_ptable(table, tmp_path / "p.csv"))
    assert (tmp_path / "p.csv").read_text().splitlines()[0] == "i,j,p,v,p_int_lb,p_int_ub,type"
    for name in ("i", "j", "p", "v", "lb", "ub", "type"):
        np.testing.assert_array_equal(getattr(back, name), getattr(table, name))
