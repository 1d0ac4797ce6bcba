"""The report's plots return valid, non-blank PNGs, draw without pyplot, and check their input."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

from cubeguard.measures.deviations import deviation_by_size
from cubeguard.report import plots
from cubeguard.report.errors import ReportError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _pixels(png: bytes) -> np.ndarray:
    assert png.startswith(PNG_SIGNATURE)
    return imread(io.BytesIO(png), format="png")


def _assert_drawn(png: bytes, width: int, height: int) -> None:
    image = _pixels(png)
    assert image.shape[:2] == (height, width)
    assert float(image[..., :3].std()) > 0.05  # not a blank canvas


def _noise(values: dict[int, int]) -> pd.Series:
    return pd.Series(values, name="cells", dtype=np.int64).rename_axis("noise")


def test_noise_distribution() -> None:
    png = plots.plot_noise(_noise({-2: 5, -1: 20, 0: 50, 1: 20, 2: 5}), _noise({-1: 3, 1: 4}), title="c1")
    _assert_drawn(png, 768, 326)  # 8 x 3.4 inches at 96 dpi


def test_noise_distribution_without_small_cells() -> None:
    png = plots.plot_noise(_noise({0: 9}), _noise({}), small_values=(1, 2, 3))
    _assert_drawn(png, 768, 326)


def test_deviation_by_size() -> None:
    rng = np.random.default_rng(3)
    original = rng.integers(0, 50_000, 2_000)
    protected = np.maximum(original + rng.integers(-4, 5, original.size), 0)
    _assert_drawn(plots.plot_deviation_by_size(deviation_by_size(original, protected), title="c1"), 768, 326)
    empty = deviation_by_size(np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64))
    _assert_drawn(plots.plot_deviation_by_size(empty), 768, 326)


@pytest.mark.parametrize("n_cells", [50, 50_000])  # below and above the hexbin limit
def test_original_vs_protected(n_cells: int) -> None:
    rng = np.random.default_rng(4)
    original = rng.integers(0, 10_000, 200)
    pairs = pd.DataFrame(
        {
            "original": original,
            "protected": np.maximum(original + rng.integers(-3, 4, 200), 0),
            "cells": np.full(200, n_cells // 200, dtype=np.int64),
        }
    )
    _assert_drawn(plots.plot_original_vs_protected(pairs, title="big" if n_cells > 5000 else "small"), 499, 441)


def test_original_vs_protected_without_cells() -> None:
    empty = pd.DataFrame({"original": [], "protected": [], "cells": []}, dtype=np.int64)
    assert _pixels(plots.plot_original_vs_protected(empty)).shape[:2] == (441, 499)


def test_ru_map() -> None:
    points = pd.DataFrame(
        {
            "name": ["D=5 V=3", "D=8 V=3", "D=3 V=1", "no value"],
            "risk": [0.10, 0.05, 0.30, np.nan],
            "utility": [0.02, 0.04, 0.01, 0.5],
            "passes": [True, None, False, True],
        }
    )
    _assert_drawn(plots.plot_ru_map(points), 576, 422)


def test_ru_map_names_every_problem() -> None:
    with pytest.raises(ReportError, match=r"missing column\(s\) \['passes'\].*column 'risk' must be numeric"):
        plots.plot_ru_map(pd.DataFrame({"name": ["a"], "risk": ["high"], "utility": [0.1]}))


def test_plots_leave_pyplot_alone() -> None:
    code = (
        "import sys, pandas as pd\n"
        "from cubeguard.report import plots\n"
        "plots.plot_noise(pd.Series({0: 1}), pd.Series({0: 1}))\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot was imported'\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
