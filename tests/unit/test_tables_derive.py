"""Which levels refine which: nested selections of one hierarchy, and nothing across classifications."""

from __future__ import annotations

import numpy as np

from cubeguard.tables.derive import refinement
from tests.conftest import tiny_breakdowns

B = tiny_breakdowns()


def test_a_finer_level_refines_a_coarser_one_with_contiguous_ranges() -> None:
    starts = refinement(B["GEO.2"], B["GEO.1"])  # bottoms A1, A2, B1 -> A, B
    assert starts is not None and starts.tolist() == [0, 2]
    starts = refinement(B["AGE.M"], B["AGE.L"])  # Y0-4, Y5-14, Y15-64, Y_GE65 -> Y_LT15, Y15-64, Y_GE65
    assert starts is not None and starts.tolist() == [0, 2, 3]
    same = refinement(B["SEX"], B["SEX"])
    assert same is not None and np.array_equal(same, np.arange(2))


def test_a_coarser_level_or_another_classification_refines_nothing() -> None:
    assert refinement(B["GEO.1"], B["GEO.2"]) is None
    assert refinement(B["AGE.L"], B["AGE.M"]) is None
    assert refinement(B["SEX"], B["GEO.1"]) is None
