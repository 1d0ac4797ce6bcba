"""The p-table plot (cubeguard.ckm.ptable_plot)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from matplotlib.image import imread

from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable, identity_ptable
from cubeguard.ckm.ptable_plot import plot_ptable


def test_plot_writes_a_png_with_one_panel_per_count(tmp_path: Path) -> None:
    table = create_cnt_ptable(PTableParams(D=5, V=3, js=2))  # i = 0..8: 9 panels, 3 rows of 4
    path = plot_ptable(table, tmp_path / "ptable.png", columns=4, dpi=80)
    assert path.stat().st_size > 10_000
    image = imread(path)
    assert image.shape == (round(3 * 1.9 * 80), round(4 * 2.4 * 80), 4)
    assert image[..., :3].std() > 0.05  # not a blank canvas


def test_plot_uses_no_pyplot_state(tmp_path: Path) -> None:
    before = "matplotlib.pyplot" in sys.modules
    plot_ptable(identity_ptable(), tmp_path / "identity.png", columns=8)
    assert ("matplotlib.pyplot" in sys.modules) == before
    assert imread(tmp_path / "identity.png").shape == (round(1.9 * 100), round(2 * 2.4 * 100), 4)


@pytest.mark.parametrize("columns", [1, 12])
def test_plot_columns_are_clipped_to_the_panels(tmp_path: Path, columns: int) -> None:
    table = create_cnt_ptable(PTableParams(D=3, V=2))  # i = 0..3
    image = imread(plot_ptable(table, tmp_path / "t.png", columns=columns, dpi=50))
    used = min(columns, 4)
    assert image.shape[:2] == (round(-(-4 // used) * 1.9 * 50), round(used * 2.4 * 50))
