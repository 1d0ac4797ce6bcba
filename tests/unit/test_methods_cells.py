"""The shared interior/margin machinery of the methods that publish margins as sums of their interior."""

from __future__ import annotations

import numpy as np
import xarray as xr
from hypothesis import given, settings

from cubeguard.methods.cells import interior, leaf_index, publish_interior, summed
from tests.strategies import cubes


@settings(max_examples=200, deadline=None)
@given(cube=cubes())
def test_summing_the_interior_rebuilds_every_total_and_subtotal(cube: xr.Dataset) -> None:
    index = leaf_index(cube)
    inner = interior(cube["count"].values, index)
    np.testing.assert_array_equal(summed(cube, inner), cube["count"].values)
    tripled = publish_interior(cube, inner * 3)
    np.testing.assert_array_equal(tripled["count"].values, cube["count"].values * 3)
    np.testing.assert_array_equal(tripled["noise"].values, cube["count"].values * 2)  # published minus original
