"""Properties of the core additivity check on random hierarchical cubes (Handbook on SDC v2, 5.4)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.gates.additivity import check_additivity
from tests.strategies import cube_pairs, cubes, override


def _parents(cube) -> list[list[int]]:
    out = []
    for d in cube["count"].dims:
        codes = [str(c) for c in cube[d].values]
        out.append([codes.index(str(p)) if str(p) else -1 for p in cube[f"{d}.parent"].values])
    return out


def _brute_force(cube) -> tuple[int, int, int]:
    """(checked, violations, max gap) by looping over every cell and dimension."""
    values = cube["count"].values
    parents = _parents(cube)
    checked = violations = max_gap = 0
    for cell in itertools.product(*(range(n) for n in values.shape)):
        has_children = off = False
        for k, parent in enumerate(parents):
            kids = [i for i, p in enumerate(parent) if p == cell[k]]
            if not kids:
                continue
            has_children = True
            gap = int(values[cell]) - sum(int(values[(*cell[:k], i, *cell[k + 1 :])]) for i in kids)
            off |= gap != 0
            max_gap = max(max_gap, abs(gap))
        checked += has_children
        violations += off
    return checked, violations, max_gap


@settings(max_examples=60, deadline=None)
@given(cubes(max_dims=3))
def test_a_cube_built_additive_has_no_violations(cube) -> None:
    found = check_additivity(cube)
    assert (found.violations, found.max_gap, found.examples) == (0, 0, ())
    assert all(g.non_additive == 0 and g.parent_total == g.children_total for g in found.groups)


@settings(max_examples=60, deadline=None)
@given(cube=cubes(max_dims=3), delta=st.integers(1, 5), pick=st.integers(0, 10**6))
def test_perturbing_an_interior_cell_breaks_exactly_its_parents(cube, delta: int, pick: int) -> None:
    parents = _parents(cube)
    leaves = [[i for i in range(len(p)) if i not in p] for p in parents]
    cell = tuple(leaf[pick % len(leaf)] for leaf in leaves)
    counts = cube["count"].values.copy()
    counts[cell] += delta
    found = check_additivity(override(cube, counts))
    # one parent per dimension: the cell with that coordinate replaced by its parent code
    assert found.violations == len(parents) and found.max_gap == delta
    expected = {
        (cube["count"].dims[k], str(cube[cube["count"].dims[k]].values[parents[k][cell[k]]]))
        for k in range(len(parents))
    }
    assert {(g.dim, g.parent) for g in found.groups if g.non_additive} == expected
    assert all(g.non_additive == 1 for g in found.groups if g.non_additive)


@settings(max_examples=80, deadline=None)
@given(pair=cube_pairs(max_dims=3), slab_cells=st.integers(1, 50))
def test_agrees_with_a_brute_force_count(pair, slab_cells: int) -> None:
    _, protected = pair
    found = check_additivity(protected.chunk({protected["count"].dims[0]: 1}), slab_cells=slab_cells)
    assert (found.checked, found.violations, found.max_gap) == _brute_force(protected)
    assert sum(g.new_non_additive for g in found.groups) == found.violations
    assert sum(g.new_cells for g in found.groups) == found.checked
    assert len(found.examples) == min(found.violations and 5, sum(g.non_additive for g in found.groups))
