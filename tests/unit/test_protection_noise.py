"""However steps stack on a cube, its published ``noise`` is the published count minus the original."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import CELL_KEY_STEP, protect_tiny

STACKS = {
    "cell key twice": CELL_KEY_STEP + "  - {method: cell_key, name: again, D: 4, V: 2, allow_stacking: true}\n",
    "identity after cell key": CELL_KEY_STEP + "  - {method: identity, cubes: [c1]}\n",
    "rounding after cell key": CELL_KEY_STEP + "  - {method: conventional_rounding, base: 3}\n",
}


@pytest.mark.parametrize("steps", STACKS.values(), ids=list(STACKS))
def test_noise_is_the_published_count_minus_the_original(tmp_path: Path, steps: str) -> None:
    original, protected, _ = protect_tiny(tmp_path, steps)
    changed = 0
    for cid, cube in protected.items():
        np.testing.assert_array_equal(cube["noise"].values, cube["count"].values - original[cid]["count"].values)
        changed += int((cube["noise"].values != 0).sum())
    assert changed > 0
