"""cubeguard ptable: ptable's CSV byte for byte, plots, and a one-sentence error when infeasible."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.main import app
from cubeguard.ckm.ptable_io import read_ptable

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "golden" / "ptable"


@pytest.mark.skipif(not GOLDEN.exists(), reason="shared golden data not present")
def test_ptable_csv_is_byte_identical_to_r_ptable(tmp_path: Path) -> None:
    out = tmp_path / "p.csv"
    args = [
        "ptable",
        "--D",
        "8",
        "--V",
        "3",
        "--js",
        "2",
        "--out",
        str(out),
        "--plot",
        str(tmp_path / "p.png"),
        "--risk",
        str(tmp_path / "r.png"),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == (GOLDEN / "ptable_D8_V3_js2_pstayNA_optim1_monoT.csv").read_bytes()
    assert (tmp_path / "p.png").stat().st_size > 10_000 and (tmp_path / "r.png").stat().st_size > 10_000


def test_infeasible_parameters_exit_2_with_one_sentence(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["ptable", "--D", "5", "--V", "2", "--js", "2", "--out", str(tmp_path / "p.csv")])
    assert result.exit_code == 2
    assert "meets the p-table constraints" in result.output and "change" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "p.csv").exists()


@pytest.mark.skipif(not GOLDEN.exists(), reason="shared golden data not present")
def test_no_mono_writes_r_ptables_table_without_monotony(tmp_path: Path) -> None:
    out = tmp_path / "p.csv"
    args = ["ptable", "--D", "5", "--V", "2", "--no-mono", "--format", "r", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == (GOLDEN / "ptable_D5_V2_js0_pstayNA_optim1_monoF.csv").read_bytes()
    mono = tmp_path / "m.csv"
    assert CliRunner().invoke(app, ["ptable", "--D", "5", "--V", "2", "--mono", "--out", str(mono)]).exit_code == 0
    assert mono.read_bytes() == (GOLDEN / "ptable_D5_V2_js0_pstayNA_optim1_monoT.csv").read_bytes()


def test_the_tau_format_reads_back_as_the_same_p_table(tmp_path: Path) -> None:
    for fmt in ("r", "tau"):
        args = ["ptable", "--D", "4", "--V", "2", "--js", "1", "--format", fmt, "--out", str(tmp_path / f"p.{fmt}")]
        assert CliRunner().invoke(app, args).exit_code == 0
    r, tau = read_ptable(tmp_path / "p.r"), read_ptable(tmp_path / "p.tau")
    assert (tmp_path / "p.tau").read_text().splitlines()[0] == "i;j;p;v;p_int_ub"
    np.testing.assert_array_equal(r.i, tau.i)
    np.testing.assert_array_equal(r.j, tau.j)
    np.testing.assert_allclose(r.p, tau.p, rtol=0, atol=1e-8)  # tau-ARGUS's file rounds p to 8 digits


# --- numeric p-tables (--numeric, R ptable's create_num_ptable) ---------------------------------

NUM_GOLDEN = GOLDEN.parent / "cellkey_num"
PT_EX_NUMS = ["ptable", "--numeric", "--D", "10", "--V", "3", "--step", "2", "--icat", "1,5,10", "--optim", "4,1,1"]


@pytest.mark.skipif(not NUM_GOLDEN.exists(), reason="shared golden data not present")
def test_numeric_csv_is_r_ptables_pt_ex_nums(tmp_path: Path) -> None:
    out = tmp_path / "p.csv"
    result = CliRunner().invoke(app, [*PT_EX_NUMS, "--out", str(out)])
    assert result.exit_code == 0, result.output
    golden = (NUM_GOLDEN / "ptab_used_A.csv").read_text()  # cellKey renamed the bounds to lb, ub
    assert out.read_text() == golden.replace("i,j,p,v,lb,ub,type", "i,j,p,v,p_int_lb,p_int_ub,type", 1)
    shipped = Path(__file__).resolve().parents[2] / "configs" / "ptables" / "demo_age_num.csv"
    assert shipped.read_text() == out.read_text()


def test_numeric_type_labels_the_rows_and_reads_back(tmp_path: Path) -> None:
    from cubeguard.ckm.magnitude import read_num_ptable

    out = tmp_path / "odd.csv"
    args = ["ptable", "--numeric", "--D", "2", "--V", "1", "--icat", "1,2", "--type", "odd", "--out", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    table = read_num_ptable(out)
    assert table.types() == {"odd"}
    assert table.j[:3].tolist() == [0.0, 0.0, 0.5]  # i = 0, then i = 1 on the default step 1/2


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--numeric", "--js", "2", "--icat", "1,2"],
            "--js apply to count p-tables only; leave them out with --numeric",
        ),
        (["--numeric", "--format", "tau", "--icat", "1,2"], "--format tau apply to count p-tables only"),
        (["--icat", "1,2", "--step", "4"], "--icat, --step apply to numeric p-tables only; add --numeric"),
        (["--numeric"], "--numeric needs --icat"),
        (["--numeric", "--icat", "1;2"], "--icat '1;2': give whole numbers separated by commas"),
        (["--optim", "4,1"], "--optim takes one value \\(1 or 4\\) for count p-tables"),
        (["--numeric", "--icat", "1"], "invalid numeric p-table parameters: icat must hold 1 and D"),
    ],
)
def test_numeric_option_errors_exit_2_with_one_sentence(tmp_path: Path, extra: list[str], message: str) -> None:
    out = tmp_path / "p.csv"
    result = CliRunner().invoke(app, ["ptable", "--D", "2", "--V", "1", *extra, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert re.search(message, " ".join(result.output.split()))
    assert "Traceback" not in result.output and not out.exists()


def test_numeric_infeasible_parameters_exit_2(tmp_path: Path) -> None:
    args = ["ptable", "--numeric", "--D", "1", "--V", "5", "--step", "1", "--icat", "1", "--optim", "4"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "p.csv")])
    assert result.exit_code == 2
    assert "No noise distribution for i = 1 meets the numeric p-table constraints" in " ".join(result.output.split())
    assert not (tmp_path / "p.csv").exists()
