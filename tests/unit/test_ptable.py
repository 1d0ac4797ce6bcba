"""P-table parameters, structure checks, the modified p-table and the readers (ptable 1.0.0)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from cubeguard.ckm.ptable import PTable, PTableFormatError, PTableParams, create_cnt_ptable, identity_ptable
from cubeguard.ckm.ptable_io import read_ptable, write_ptable
from cubeguard.ckm.ptable_modify import adjacent_equal_noise, modify_cnt_ptable
from cubeguard.errors import CubeguardError

SHARED = Path(__file__).resolve().parents[3] / "shared"
TAU = SHARED / "external" / "censusprotection" / "ptables"
GOLDEN = SHARED / "golden" / "ptable"


@pytest.fixture(scope="module")
def d5v3js2() -> PTable:
    return create_cnt_ptable(PTableParams(D=5, V=3, js=2))


def _small() -> dict[str, list[float] | list[int] | list[str]]:
    # Handbook on SDC v2, Table 5.16 (D = 1, no published 1s).
    return {
        "i": [0, 1, 1, 2, 2, 3, 3, 3],
        "j": [0, 0, 2, 2, 3, 2, 3, 4],
        "p": [1, 0.5, 0.5, 0.8, 0.2, 0.3, 0.4, 0.3],
        "v": [0, -1, 1, 0, 1, -1, 0, 1],
        "p_int_lb": [0, 0, 0.5, 0, 0.8, 0, 0.3, 0.7],
        "p_int_ub": [1, 0.5, 1, 0.8, 1, 0.3, 0.7, 1],
        "type": ["all"] * 8,
    }


# --- parameters ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"D": -1, "V": 1.0}, "greater than or equal to 0"),
        ({"D": 3, "V": 0.0}, "greater than 0"),
        ({"D": 3, "V": float("nan")}, "finite number"),
        ({"D": 3, "V": 1.0, "js": -2}, "greater than or equal to 0"),
        ({"D": 3, "V": 1.0, "pstay": 1.0}, "less than 1"),
        ({"D": 3, "V": 1.0, "optim": 2}, "Input should be 1 or 4"),
        ({"D": 2.5, "V": 1.0}, "valid integer"),
        ({"D": 3, "V": 1.0, "label": "x"}, "Extra inputs are not permitted"),
        ({"D": 0, "V": 1.0, "js": 2}, "set D >= 1 or js = 0"),
    ],
)
def test_invalid_parameters_are_rejected(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        PTableParams(**kwargs)  # type: ignore[arg-type]


def test_params_hide_secret_values_and_give_ncat() -> None:
    params = PTableParams(D=8, V=3.0, js=2, pstay=0.5)
    assert "3.0" not in repr(params) and "0.5" not in repr(params) and "D=" not in repr(params)
    assert params.ncat == 11
    assert PTableParams(D=5, V=2.0).ncat == 5
    with pytest.raises(ValidationError):
        params.D = 3  # type: ignore[misc]


# --- construction ----------------------------------------------------------------------------


def test_rows_follow_ptable_layout(d5v3js2: PTable) -> None:
    assert d5v3js2.max_i == 8 and d5v3js2.max_noise == 5 and d5v3js2.i.size == 66
    assert d5v3js2.j[d5v3js2.block(1)].tolist() == [0, 3, 4, 5, 6]  # 1 and 2 are blocked
    assert d5v3js2.j[d5v3js2.block(0)].tolist() == [0]
    assert d5v3js2.block(8) == d5v3js2.block(10_000)  # the i >= max i block
    assert not set(d5v3js2.j.tolist()) & {1, 2}


def test_noise_moments(d5v3js2: PTable) -> None:
    counts, mean, variance = d5v3js2.row_moments()
    assert counts.tolist() == list(range(9))
    np.testing.assert_allclose(mean, 0.0, atol=1e-7)
    np.testing.assert_allclose(variance[1:], 3.0, atol=1e-3)  # index.csv: p_var = 3 for all i


def test_table_is_read_only_and_repr_hides_values(d5v3js2: PTable) -> None:
    with pytest.raises(ValueError, match="read-only"):
        d5v3js2.p[0] = 0.5
    assert repr(d5v3js2) == "PTable(rows=66, max_i=8, intervals='default')"


def test_pstay_bound_is_lowered_until_the_variance_is_reached() -> None:
    # ptable's outer loop: p_stay >= pstay, lowered by 0.05 while round(var, 3) != V. For i = 1
    # the variance stays below V = 1 at p_stay >= 0.5, so the bound drops once, to 0.45.
    table = create_cnt_ptable(PTableParams(D=3, V=1.0, pstay=0.5))
    stay = table.p[(table.v == 0) & (table.i > 0)]
    np.testing.assert_allclose(stay, [0.45, 0.5, 0.5], atol=1e-8)


def test_optim_4_makes_the_variance_exact() -> None:
    table = create_cnt_ptable(PTableParams(D=5, V=2.0, optim=4))
    _, _, variance = table.row_moments()
    np.testing.assert_allclose(variance[1:], 2.0, atol=1e-6)


def test_identity_ptable() -> None:
    table = create_cnt_ptable(PTableParams(D=0, V=1.0))
    assert table.v.tolist() == [0, 0] and table.max_i == 1 and table.max_noise == 0
    assert identity_ptable().p.tolist() == [1.0, 1.0]


# --- structure checks ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"v": [0, -1, 1, 0, 1, -1, 0, 2]}, "every row needs v = j - i"),
        ({"i": [0, 1, 1, 3, 3, 4, 4, 4], "j": [0, 0, 2, 3, 4, 3, 4, 5]}, "without gaps"),
        ({"p_int_ub": [1, 0.5, 1, 0.8, 1, 0.3, 0.7, 0.9]}, "end at exactly 1"),
        ({"p_int_lb": [0, 0, 0.4, 0, 0.8, 0, 0.3, 0.7]}, "previous p_int_ub"),
        ({"p": [1, 0.5, 0.5, 0.8, 0.2, 0.3, 1.4, 0.3]}, r"must lie in \[0, 1\]"),
        (
            {"v": [1, -1, 1, 0, 1, -1, 0, 1], "j": [1, 0, 2, 2, 3, 2, 3, 4]},
            "count 0 must have noise 0",
        ),
        ({"type": ["all"] * 7}, "equally long"),
    ],
)
def test_malformed_tables_are_rejected(change: dict[str, list[object]], message: str) -> None:
    columns = _small() | change
    with pytest.raises(PTableFormatError, match=message):
        PTable(**columns)  # type: ignore[arg-type]
    assert issubclass(PTableFormatError, CubeguardError)


# --- modified p-table ------------------------------------------------------------------------


def test_modified_ptable_keeps_the_noise_distribution(d5v3js2: PTable) -> None:
    modified = modify_cnt_ptable(d5v3js2, 0.2, rng=np.random.default_rng(5467))
    assert modified.intervals == "modified" and modified.max_i == d5v3js2.max_i
    for count in range(d5v3js2.max_i + 1):
        before, after = d5v3js2.block(count), modified.block(count)
        for noise in np.unique(d5v3js2.v[before]):
            p_before = d5v3js2.p[before][d5v3js2.v[before] == noise].sum()
            p_after = modified.p[after][modified.v[after] == noise].sum()
            assert p_after == pytest.approx(p_before, abs=2e-8)
    assert np.all((modified.p <= 0.2 + 1e-8) | (modified.i == 0))
    assert modified.i.size > d5v3js2.i.size
    assert adjacent_equal_noise(modified) >= 0


def test_modified_ptable_is_reproducible(d5v3js2: PTable) -> None:
    first = modify_cnt_ptable(d5v3js2, rng=np.random.default_rng(1))
    again = modify_cnt_ptable(d5v3js2, rng=np.random.default_rng(1))
    other = modify_cnt_ptable(d5v3js2, rng=np.random.default_rng(2))
    np.testing.assert_array_equal(first.v, again.v)
    assert not np.array_equal(first.v, other.v)


def test_modified_ptable_threshold_is_checked(d5v3js2: PTable) -> None:
    with pytest.raises(CubeguardError, match=r"threshold of modify_cnt_ptable must be in \(0, 1\]"):
        modify_cnt_ptable(d5v3js2, 0.0, rng=np.random.default_rng(1))


def test_adjacent_equal_noise_counts_neighbours() -> None:
    assert adjacent_equal_noise(PTable(**_small())) == 0  # type: ignore[arg-type]


# --- readers ---------------------------------------------------------------------------------


def test_read_tau_argus_export() -> None:
    table = read_ptable(TAU / "ptab1.csv")
    assert table.max_i == 4 and table.i.size == 17 and table.max_noise == 2
    np.testing.assert_array_equal(table.p_int_lb[table.block(1)], [0.0, 0.51333333, 0.97333333])
    np.testing.assert_allclose(table.p[table.block(1)], [0.51333333, 0.46, 0.02666667], atol=1e-12)
    for name in ("ptab2.csv", "ptab3.csv", "ptab6.csv"):
        other = read_ptable(TAU / name)
        assert other.max_i == 8 and other.max_noise == 8
        _, mean, _ = other.row_moments()
        np.testing.assert_allclose(mean, 0.0, atol=1e-6)


def test_read_ptable_csv_keeps_every_digit() -> None:
    table = read_ptable(GOLDEN / "ptable_D8_V3_js2_pstayNA_optim1_monoT.csv")
    assert table.p[2] == 0.14867984999999995 and table.p_int_ub[2] == 0.88016398


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("i;j;p;v\n0;0;1;0\n", r"lacks the columns \['p_int_ub'\]"),
        ("i;j;p;v;p_int_ub\n0;0;1;0;1\n1;0;x;-1;1\n", "must be integers and p, bounds numbers"),
        ("i;j;p;v;p_int_ub\n0;0;1;0;1\n1;0;0.5;-1\n", "line 3 has 4 fields"),
        ("i;j;p;v;p_int_ub\n0;0;1;0;1\n1;0;0.4;-1;0.5\n1;2;0.5;1;1\n", "line 3: p differs"),
        ("i,j,p,v,p_int_lb,p_int_ub,type\n0,0,1,0,0,1,even\n", "only count p-tables"),
        ("i;j;p;v;p_int_ub\n0;0;1;0;1\n1;0;0.5;-1;0.5\n1;2;0.4;1;0.9\n", "end at exactly 1"),
    ],
)
def test_malformed_files_are_rejected(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(PTableFormatError, match=message):
        read_ptable(path)


# --- writers ---------------------------------------------------------------------------------


def test_write_ptable_csv_reproduces_ptables_file(tmp_path: Path) -> None:
    # fwrite's shortest digits, e.g. 0.14867984999999995 and 7.082e-05, and 1 / 0 without ".0"
    for name in ("ptable_D8_V3_js2_pstayNA_optim1_monoT.csv", "ptable_D3_V0.5_js0_pstayNA_optim1_monoT.csv"):
        written = write_ptable(read_ptable(GOLDEN / name), tmp_path / name)
        assert written.read_bytes() == (GOLDEN / name).read_bytes()


def test_write_ptable_tau_reproduces_pt_export(tmp_path: Path) -> None:
    # ptab*.csv were written by ptable::pt_export for tau-ARGUS (CRLF, as R on Windows writes).
    for name in ("ptab1.csv", "ptab2.csv"):
        written = write_ptable(read_ptable(TAU / name), tmp_path / name, format="tau")
        assert written.read_text().splitlines() == (TAU / name).read_text().splitlines()


def test_written_tables_read_back_unchanged(tmp_path: Path, d5v3js2: PTable) -> None:
    for fmt in ("ptable", "tau"):
        again = read_ptable(write_ptable(d5v3js2, tmp_path / f"t.{fmt}", format=fmt))  # type: ignore[arg-type]
        for name in ("i", "j", "v", "p_int_lb", "p_int_ub"):
            np.testing.assert_array_equal(getattr(again, name), getattr(d5v3js2, name))


def test_write_ptable_rejects_unknown_format(tmp_path: Path, d5v3js2: PTable) -> None:
    with pytest.raises(CubeguardError, match="unknown p-table format 'sas'; use 'ptable' or 'tau'"):
        write_ptable(d5v3js2, tmp_path / "t.txt", format="sas")  # type: ignore[arg-type]


def test_moved_names_stay_importable_from_ptable() -> None:
    from cubeguard.ckm import ptable, ptable_io, ptable_modify

    assert ptable.read_ptable is ptable_io.read_ptable
    assert ptable.modify_cnt_ptable is ptable_modify.modify_cnt_ptable
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        _ = ptable.nothing
