"""Directly disclosive cells (Handbook on SDC v2, 5.9) and record-swapping success (Frend et al. 2011)."""

from __future__ import annotations

import numpy as np
import pytest

from cubeguard.measures import disclosive
from cubeguard.measures.errors import MeasureConfigError
from tests.strategies import Tree, build_cube, flat_tree, override

# A (T: a1, a2) x B (T: b1, b2), interior [[3, 0], [1, 1]]:
#         T  b1 b2
#   T     5   4  1
#   a1    3   3  0
#   a2    2   1  1
CUBE = build_cube({"A": flat_tree("T", "a1", "a2"), "B": flat_tree("T", "b1", "b2")}, np.array([[3, 0], [1, 1]]))


def cells(mask: np.ndarray) -> set[tuple[str, str]]:
    a, b = np.nonzero(mask)
    codes_a, codes_b = ["T", "a1", "a2"], ["T", "b1", "b2"]
    return {(codes_a[i], codes_b[j]) for i, j in zip(a.tolist(), b.tolist(), strict=True)}


def test_k0_cells_equal_to_a_marginal() -> None:
    # |p_c| - 0 <= |c| with |p_c| > 0: (a1, b1) = 3 = (a1, T); (a2, b2) = 1 = (T, b2). Nothing else
    # equals a marginal: (T, b1) = 4 < 5, (a2, b1) = 1 < 2 and < 4, (a1, T) = 3 < 5, ...
    out = disclosive.directly_disclosive(CUBE, coalition=0)
    assert cells(out.values) == {("a1", "b1"), ("a2", "b2")}


def test_k1_cells_within_one_of_a_marginal() -> None:
    # |p_c| - 1 <= |c| and |p_c| > 1:
    #   along B: (a1, b1) 3 - 3 = 0; (a2, b1) 2 - 1 = 1; (a2, b2) 2 - 1 = 1; (T, b1) 5 - 4 = 1
    #   along A: (a1, b1) 4 - 3 = 1; (a1, b2) and (a2, b2) have the marginal (T, b2) = 1, not > 1
    out = disclosive.directly_disclosive(CUBE, coalition=1)
    assert cells(out.values) == {("a1", "b1"), ("a2", "b1"), ("a2", "b2"), ("T", "b1")}


def test_sensitive_dims_restrict_the_marginals() -> None:
    # only marginals within A (the cells (T, b)): (a2, b2) = 1 = (T, b2) for k = 0
    out = disclosive.directly_disclosive(CUBE, coalition=0, sensitive_dims=["A"])
    assert cells(out.values) == {("a2", "b2")}


def test_sole_children_are_not_compared_with_their_parent() -> None:
    # G: T -> (g1 -> g11, g2); g11 is g1's only child, so g11 = g1 discloses nothing.
    # counts: g11 = 2 (so g1 = 2), g2 = 3, T = 5. With k = 0 nothing is disclosive; with k = 3,
    # g11 (vs T: 5 - 3 <= 2) and g2 (5 - 3 <= 3) are, and g1 too (5 - 3 <= 2); g11 is never
    # flagged against g1.
    geo = Tree(("T", "g1", "g11", "g2"), (-1, 0, 1, 0), (0, 1, 2, 1))
    cube = build_cube({"G": geo}, np.array([2, 3]))
    assert cube["count"].values.tolist() == [5, 2, 2, 3]
    assert disclosive.directly_disclosive(cube, coalition=0).values.tolist() == [False] * 4
    assert disclosive.directly_disclosive(cube, coalition=3).values.tolist() == [False, True, True, True]


def test_grandparents_count_when_the_protected_cube_is_not_additive() -> None:
    # protected T = 3, g1 = 4, g11 = 3, g12 = 1, g2 = 0 (T -> (g1 -> g11, g12), g2):
    # g11 = 3 is below its parent g1 = 4 but equals the grandparent T = 3, so it is flagged;
    # g1 = 4 >= T = 3 is flagged too (3 - 0 <= 4); g12 = 1 and g2 = 0 are not
    geo = Tree(("T", "g1", "g11", "g12", "g2"), (-1, 0, 1, 1, 0), (0, 1, 2, 2, 1))
    cube = override(build_cube({"G": geo}, np.array([2, 1, 3])), np.array([3, 4, 3, 1, 0]))
    assert disclosive.directly_disclosive(cube, coalition=0).values.tolist() == [False, True, True, False, False]


def test_disclosive_cells_before_and_after() -> None:
    # protected interior [[2, 1], [2, 0]] with margins kept: k = 0 apparent disclosures are
    # (a2, b1) = 2 = (a2, T) and (a1, b2) = 1 = (T, b2); none of them is a true one
    protected = override(CUBE, np.array([[5, 4, 1], [3, 2, 1], [2, 2, 0]]))
    got = disclosive.disclosive_cells(CUBE, protected, coalition=0)
    assert got == (2, 2, 0, 2 / 9, 2 / 9)


# Swapping: A (T: a1, a2, a3) x B (T: b1, b2); original interior [[3, 0], [1, 1], [0, 2]];
# real k = 0 cases: (a1, b1) = 3 = (a1, T) and (a3, b2) = 2 = (a3, T).
# Swapping the A codes of a person in (a2, b1) and one in (a3, b2) gives [[3, 0], [0, 2], [1, 1]]:
# apparent cases (a1, b1) = 3 and (a2, b2) = 2. Removed: (a3, b2), 1 of 2 real -> 0.5;
# false: (a2, b2), 1 of 2 apparent -> 0.5.
A3 = flat_tree("T", "a1", "a2", "a3")
B2 = flat_tree("T", "b1", "b2")
SW_ORIGINAL = build_cube({"A": A3, "B": B2}, np.array([[3, 0], [1, 1], [0, 2]]))
SW_SWAPPED = build_cube({"A": A3, "B": B2}, np.array([[3, 0], [0, 2], [1, 1]]))


def test_swap_success_by_hand() -> None:
    assert disclosive.swap_success(SW_ORIGINAL, SW_SWAPPED) == (2, 2, 0.5, 0.5)


def test_swap_success_with_imputed_records() -> None:
    # if both persons of (a3, b2) were imputed, the case is not real: real = {(a1, b1)}, kept
    # after swapping -> removed 0 of 1; apparent (a2, b2) is false, (a1, b1) true -> 1 of 2
    imputed = build_cube({"A": A3, "B": B2}, np.array([[0, 0], [0, 0], [0, 2]]))
    assert disclosive.swap_success(SW_ORIGINAL, SW_SWAPPED, imputed=imputed) == (1, 2, 0.0, 0.5)


def test_negative_coalition() -> None:
    with pytest.raises(MeasureConfigError, match="the coalition size k must be 0 or more, got -1"):
        disclosive.directly_disclosive(CUBE, coalition=-1)


def test_unknown_sensitive_dimension() -> None:
    with pytest.raises(MeasureConfigError, match=r"sensitive dimensions: unknown dimension\(s\) \['C'\]; known: A, B"):
        disclosive.directly_disclosive(CUBE, sensitive_dims=["C"])


def test_plain_arrays_are_rejected() -> None:
    with pytest.raises(MeasureConfigError, match="need a cube with hierarchy coordinates"):
        disclosive.directly_disclosive(np.ones((2, 2)))  # type: ignore[arg-type]
