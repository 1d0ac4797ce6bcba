from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.image import imread

from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
from cubeguard.ckm.risk import posterior_probabilities
from cubeguard.ckm.risk_plot import plot_risk


def test_risk_heat_map_is_written(tmp_path: Path) -> None:
    table = posterior_probabilities(create_cnt_ptable(PTableParams(D=5, V=3, js=2)), i_max=8)
    png = plot_risk(table, tmp_path / "risk.png")
    image = imread(png)
    assert png.stat().st_size > 10_000 and image.shape[0] > 200 and image.shape[1] > 400
    assert float(np.std(image[..., :3])) > 0.05  # not blank
    # js = 2: published 1 and 2 cannot occur, so their columns are empty (NaN), not zero.
    assert np.isnan(table.probability[:, 1]).all() and np.isnan(table.probability[:, 2]).all()
