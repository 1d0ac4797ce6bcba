"""cubeguard ptable: ptable's CSV byte for byte, plots, and a one-sentence error when infeasible."""

from __future__ import annotations

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
