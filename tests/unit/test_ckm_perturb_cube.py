"""``perturb_cube`` gives the same published counts and noise for an in-memory and a chunked (Dask) cube."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from cubeguard.ckm.keys import KeyScale
from cubeguard.ckm.perturb import perturb_cube
from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
from cubeguard.cubes.model import make_cube
from tests.hierarchies import breakdown_of


def _cube(seed: int) -> xr.Dataset:
    from cubeguard.cubes.spec import CodeSpec, VariableSpec

    def spec(name: str, kids: list[str]) -> VariableSpec:
        codes = [CodeSpec(code=name)] + [CodeSpec(code=c, parent=name) for c in kids]
        return VariableSpec(column=name.lower(), codes=codes, breakdowns={f"{name}.ALL": {}})  # type: ignore[arg-type]

    bds = [breakdown_of(spec("A", ["a1", "a2", "a3"]), "A"), breakdown_of(spec("B", ["b1", "b2"]), "B")]
    rng = np.random.default_rng(seed)
    shape = tuple(len(b.codes) for b in bds)
    counts = rng.integers(0, 9, size=shape)
    keys = rng.integers(0, 2**63, size=shape, dtype=np.uint64)
    return make_cube(bds, counts, keys, {"cube_id": "t", "key_scale": KeyScale().label})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_in_memory_and_chunked_cubes_are_perturbed_alike(seed: int) -> None:
    ptable = create_cnt_ptable(PTableParams(D=5, V=3, js=2))
    cube = _cube(seed)
    memory = perturb_cube(cube, ptable)
    chunked = perturb_cube(cube.chunk({"A.None": 2}), ptable)
    assert chunked["count"].chunks is not None  # the Dask path was taken
    np.testing.assert_array_equal(memory["count"].values, chunked["count"].values)
    np.testing.assert_array_equal(memory["noise"].values, chunked["noise"].values)
    np.testing.assert_array_equal(memory["count"].values - cube["count"].values, memory["noise"].values)
    twice = perturb_cube(memory, ptable)  # a second step adds its noise to the first's
    np.testing.assert_array_equal(twice["noise"].values, twice["count"].values - cube["count"].values)


def test_cubes_of_one_breakdown_share_no_attributes() -> None:
    first, second = _cube(1), _cube(1)
    first["A.None.label"].attrs["note"] = "changed in one cube"
    assert "note" not in second["A.None.label"].attrs
    xr.testing.assert_identical(second, _cube(1))
