"""A cellwise method's array path (what flexible tables use) publishes what its cube path publishes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cubeguard.ckm.keys import KeyScale
from cubeguard.methods.cell_key import CellKeyStep
from cubeguard.methods.random_rounding import RandomRoundingStep
from cubeguard.methods.registry import CUBE_METHODS
from tests.unit.test_ckm_perturb_cube import _cube

STEPS: dict[str, Any] = {
    "cell_key": CellKeyStep(method="cell_key", name="ckm", D=5, V=3, js=2),
    "random_rounding": RandomRoundingStep(method="random_rounding", name="rr", base=3),
}


def test_every_cellwise_method_has_an_array_path_and_a_case_here() -> None:
    cellwise = {name for name, m in CUBE_METHODS.items() if m.cells is not None}
    assert cellwise == set(STEPS)
    assert all(CUBE_METHODS[name].cellwise(step) for name, step in STEPS.items())


@pytest.mark.parametrize("name", sorted(STEPS))
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_cells_publish_what_the_cube_function_publishes(name: str, seed: int) -> None:
    method, step = CUBE_METHODS[name], STEPS[name]
    assert method.cells is not None
    cube = _cube(seed)
    by_cube = method.prepare(step)(cube)["count"].values
    by_cells = method.cells(step)(
        cube["count"].values, cube["key_sum"].values, KeyScale.from_label(cube.attrs["key_scale"])
    )
    np.testing.assert_array_equal(by_cells, by_cube)
    assert not np.array_equal(by_cells, cube["count"].values)  # protection changed something: the test can fail


@pytest.mark.parametrize(
    "step", [RandomRoundingStep(method="random_rounding", name="rr", base=3, margins="summed"),
             RandomRoundingStep(method="random_rounding", name="rr", base=3, seed=7)],
)  # fmt: skip
def test_rounding_with_summed_margins_or_a_seed_is_not_cellwise(step: RandomRoundingStep) -> None:
    assert not CUBE_METHODS["random_rounding"].cellwise(step)
