"""Feasibility intervals (Hypothesis): they always hold the original, and on tiny tables equal brute force.

Tables are hierarchical in one or two dimensions (a total, subtotals, bottom codes), filled with
small originals; each published bound is a random interval around the original. The brute force
enumerates every non-negative integer interior whose cells and margins respect the bounds.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.attack.intervals import UNBOUNDED, Relations, propagate
from cubeguard.attack.lp import refine, refine_all

# Axis shapes as parent positions in pre-order: a total and bottom codes, or a subtotal level too.
AXES = [[-1, 0, 0], [-1, 0, 0, 0], [-1, 0, 1, 1, 0], [-1, 0, 1, 1, 0, 4, 4]]


def _leaves(parent: list[int]) -> list[int]:
    return [k for k in range(len(parent)) if k not in parent]


def _table(interior: np.ndarray, parents: list[list[int]]) -> np.ndarray:
    """The full table (margins in pre-order) from its bottom cells."""
    out = np.zeros([len(p) for p in parents], dtype=np.int64)
    leaves = [_leaves(p) for p in parents]
    out[np.ix_(*leaves)] = interior
    for k, parent in enumerate(parents):
        for pos in reversed(range(len(parent))):
            if parent[pos] >= 0:
                src = np.take(out, [pos], axis=k)
                dst = [slice(None)] * out.ndim
                dst[k] = slice(parent[pos], parent[pos] + 1)
                out[tuple(dst)] += src
    return out


@st.composite
def cases(draw: st.DrawFn, dims: int) -> tuple[list[list[int]], np.ndarray, np.ndarray, np.ndarray]:
    parents = [draw(st.sampled_from(AXES)) for _ in range(dims)]
    shape = [len(_leaves(p)) for p in parents]
    interior = np.array(draw(st.lists(st.integers(0, 3), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))))
    original = _table(interior.reshape(shape), parents)
    below = np.array(draw(st.lists(st.integers(0, 3), min_size=original.size, max_size=original.size)))
    above = np.array(draw(st.lists(st.integers(0, 4), min_size=original.size, max_size=original.size)))
    lo = np.maximum(original - below.reshape(original.shape), 0)
    hi = np.where(above.reshape(original.shape) == 4, UNBOUNDED, original + above.reshape(original.shape))
    return parents, original, lo.astype(np.int64), hi.astype(np.int64)


def _brute_force(parents: list[list[int]], lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    shape = [len(_leaves(p)) for p in parents]
    leaves = np.ix_(*[_leaves(p) for p in parents])
    top = np.minimum(hi[leaves], 12).ravel()
    best_lo = np.full(lo.shape, np.iinfo(np.int64).max)
    best_hi = np.full(lo.shape, -1)
    for values in itertools.product(*[range(int(a), int(b) + 1) for a, b in zip(lo[leaves].ravel(), top, strict=True)]):
        table = _table(np.array(values).reshape(shape), parents)
        if np.all(table >= lo) and np.all(table <= hi):
            best_lo, best_hi = np.minimum(best_lo, table), np.maximum(best_hi, table)
    return best_lo, best_hi


@settings(max_examples=150, deadline=None)
@given(cases(dims=2))
def test_propagated_and_refined_intervals_always_hold_the_original(case) -> None:  # type: ignore[no-untyped-def]
    parents, original, lo, hi = case
    axes = [Relations.of(p) for p in parents]
    propagate(lo, hi, axes)
    assert np.all(lo <= original) and np.all(original <= hi)
    refine(lo, hi, axes, range(lo.size))
    assert np.all(lo <= original) and np.all(original <= hi)


@settings(max_examples=60, deadline=None)
@given(cases(dims=1) | cases(dims=2).filter(lambda c: c[1].size <= 16 and np.prod(c[1].shape) <= 16))
def test_on_tiny_tables_the_lp_interval_equals_brute_force(case) -> None:  # type: ignore[no-untyped-def]
    parents, original, lo, hi = case
    hi = np.minimum(hi, original + 4)  # the enumeration needs finite bounds
    leaves = np.ix_(*[_leaves(p) for p in parents])
    if np.prod(hi[leaves] - lo[leaves] + 1) > 20_000:
        hi[leaves] = np.minimum(hi[leaves], original[leaves] + 1)
        lo[leaves] = np.maximum(lo[leaves], original[leaves] - 1)
    expected = _brute_force(parents, lo, hi)
    axes = [Relations.of(p) for p in parents]
    propagate(lo, hi, axes)
    refine_all(lo, hi, axes)
    np.testing.assert_array_equal(lo, expected[0])
    np.testing.assert_array_equal(hi, expected[1])


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_cubes_sharing_cells_never_give_a_false_certainty(data: st.DataObject) -> None:
    """Two cubes of one population (X, and X by Y): every attack's interval holds the original."""
    import xarray as xr

    from cubeguard.attack import CubeView, attack_release
    from cubeguard.attack.cells import CellIndex
    from cubeguard.attack.system import Intervals, Limits, solve, start

    x, y = data.draw(st.sampled_from(AXES)), data.draw(st.sampled_from(AXES))
    shape = (len(_leaves(x)), len(_leaves(y)))
    interior = np.array(
        data.draw(st.lists(st.integers(0, 3), min_size=shape[0] * shape[1], max_size=shape[0] * shape[1]))
    )
    both = _table(interior.reshape(shape), [x, y])
    one = both[:, 0]  # the Y total: cube A is cube B's margin

    def cube(name: str, counts: np.ndarray, dims: list[tuple[str, list[int]]]) -> xr.Dataset:
        coords: dict[str, object] = {}
        for d, parent in dims:
            codes = [f"{d}{k}" for k in range(len(parent))]
            coords[d] = codes
            coords[f"{d}.parent"] = (d, [codes[p] if p >= 0 else "" for p in parent])
        return xr.Dataset({"count": ([d for d, _ in dims], counts)}, coords=coords,
                          attrs={"cube_id": name, "population": "total", "variables": {d: d for d, _ in dims}})  # fmt: skip

    a, b = cube("A", one, [("X", x)]), cube("B", both, [("X", x), ("Y", y)])
    slack = {n: np.array(data.draw(st.lists(st.integers(0, 3), min_size=2 * c.size, max_size=2 * c.size))).reshape(2, *c.shape)
             for n, c in (("A", one), ("B", both))}  # fmt: skip

    def bounds(name: str):  # type: ignore[no-untyped-def]
        def f(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return (published - slack[name][0]).astype(float), np.where(
                slack[name][1] == 3, np.inf, published + slack[name][1]
            )

        return f

    views = [CubeView.of(a, a), CubeView.of(b, b)]
    state: Intervals = start(views, {"A": bounds("A"), "B": bounds("B")})
    solve(state, Limits(), CellIndex.of(views))
    for n, v in enumerate(views):
        assert np.all(state.lo[n] <= v.original) and np.all(v.original <= state.hi[n])
    report = attack_release(views, {"A": bounds("A"), "B": bounds("B")})
    assert report.broken == []


def _line_by_line(lo: np.ndarray, hi: np.ndarray, axes: list[Relations]) -> int:
    """:func:`propagate` written plainly: each line along an axis swept on its own, relations in order."""
    for rounds in range(1, 101):
        changed = 0
        for k, rel in enumerate(axes):
            a, b = int(np.prod(lo.shape[:k])), int(np.prod(lo.shape[k + 1 :]))
            low, high = lo.reshape(a, lo.shape[k], b), hi.reshape(a, lo.shape[k], b)
            for i, j in itertools.product(range(a), range(b)):
                line_lo, line_hi = low[i, :, j], high[i, :, j]
                for r, p in enumerate(rel.parents):
                    kids = rel.kids[rel.ptr[r] : rel.ptr[r + 1]]
                    slo, shi = int(line_lo[kids].sum()), int(line_hi[kids].sum())
                    plo, phi = max(int(line_lo[p]), slo), min(int(line_hi[p]), shi)
                    changed += (plo, phi) != (line_lo[p], line_hi[p])
                    line_lo[p], line_hi[p] = plo, phi
                    for c in kids:
                        clo = max(int(line_lo[c]), plo - (shi - int(line_hi[c])))
                        chi = min(int(line_hi[c]), phi - (slo - int(line_lo[c])))
                        changed += (clo, chi) != (line_lo[c], line_hi[c])
                        line_lo[c], line_hi[c] = clo, chi
        if not changed:
            return rounds
    return 100


@settings(max_examples=100, deadline=None)
@given(cases(dims=2) | cases(dims=3))
def test_propagation_sweeps_relations_as_line_by_line_does(case) -> None:  # type: ignore[no-untyped-def]
    parents, _, lo, hi = case
    axes = [Relations.of(p) for p in parents]
    want_lo, want_hi = lo.copy(), hi.copy()
    rounds = _line_by_line(want_lo, want_hi, axes)
    assert propagate(lo, hi, axes) == rounds
    np.testing.assert_array_equal(lo, want_lo)
    np.testing.assert_array_equal(hi, want_hi)
