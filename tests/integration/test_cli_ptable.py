"""cubeguard ptable: ptable's CSV byte for byte, plots, and a one-sentence error when infeasible."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

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
