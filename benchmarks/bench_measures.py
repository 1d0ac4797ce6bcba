"""Time ``measure_cube`` on a synthetic cube of about 5 million cells (10 million persons).

Run: ``uv run python benchmarks/bench_measures.py [cells_millions]``. The cube has six dimensions
with two- and three-level hierarchies; interior counts are Poisson draws from skewed cell means
(most cells 0, as in census hypercubes); the protected cube gets cell-key-like noise in [-2, 2] on
every cell, published counts kept >= 0.
"""

from __future__ import annotations

import os
import sys
import time
from typing import get_args

import numpy as np
import xarray as xr

from cubeguard.measures.table import MeasureSpec, measure_cube, measure_cubes


def tree(prefix: str, sizes: list[int]) -> tuple[list[str], list[int], list[int]]:
    """A hierarchy with ``sizes[l]`` children per node at level ``l``, in pre-order."""
    codes, parent, depth = [f"{prefix}_T"], [-1], [0]

    def grow(node: int, level: int) -> None:
        if level == len(sizes):
            return
        for _ in range(sizes[level]):
            codes.append(f"{prefix}{len(codes)}")
            parent.append(node)
            depth.append(level + 1)
            grow(len(codes) - 1, level + 1)

    grow(0, 0)
    return codes, parent, depth


def build(dims: dict[str, list[int]], persons: int, rng: np.random.Generator) -> xr.Dataset:
    trees = {d: tree(d.replace(".", ""), s) for d, s in dims.items()}
    leaves = {d: [i for i in range(len(c)) if i not in set(p)] for d, (c, p, _) in trees.items()}
    shape = tuple(len(v) for v in leaves.values())
    weights = rng.lognormal(0.0, 2.5, size=shape)
    leaf = rng.poisson(weights / weights.sum() * persons).astype(np.int64)
    count = leaf
    for axis, (d, (codes, parent, _)) in enumerate(trees.items()):
        agg = np.zeros((len(codes), len(leaves[d])), dtype=np.int64)
        for j, node in enumerate(leaves[d]):
            while node >= 0:
                agg[node, j] = 1
                node = parent[node]
        count = np.moveaxis(np.tensordot(agg, count, axes=(1, axis)), 0, axis)
    coords = {}
    for d, (codes, parent, depth) in trees.items():
        coords[d] = (d, np.array(codes, dtype=object))
        coords[f"{d}.parent"] = (d, np.array([codes[p] if p >= 0 else "" for p in parent], dtype=object))
        coords[f"{d}.depth"] = (d, np.array(depth, dtype=np.int64))
    return xr.Dataset({"count": (list(dims), count)}, coords=coords)


def main() -> None:
    target = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    rng = np.random.default_rng(20260101)
    dims = {"GEO.M": [8, 6], "SEX": [2], "AGE.M": [5, 4], "EDU.L": [8], "CAS.L": [4, 2], "COC.L": [3, 2]}
    original = build(dims, 10_000_000, rng)
    scale = original["count"].size / 1e6
    print(
        f"cube: {dict(original.sizes)} = {scale:.2f}M cells (target {target}M), total {int(original['count'][(0,) * 6])}"
    )
    protected = original.copy()
    noise = rng.integers(-2, 3, size=original["count"].shape)
    protected["count"] = original["count"].copy(data=np.maximum(original["count"].values + noise, 0))
    scopes = ("interior", "cube", ("GEO.M", "SEX"), ("AGE.M", "EDU.L"))
    every = get_args(get_args(MeasureSpec.model_fields["measures"].annotation)[0])
    specs = {
        "default measures, interior": MeasureSpec(),
        "default measures, 4 scopes": MeasureSpec(scopes=scopes),
        "every measure, 4 scopes": MeasureSpec(
            measures=every,
            scopes=scopes,
            entropy_groups=("GEO.M", "SEX", "AGE.M"),
            variance_by=("GEO.M",),
            anova_target="AGE.M",
        ),
    }
    for name, spec in specs.items():
        times, cpu = [], []
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            out = measure_cube(original, protected, spec)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        best = min(times)
        print(
            f"{name}: {len(out)} values, best of 3 {best:.2f} s wall, {min(cpu):.2f} s CPU "
            f"({best / scale:.3f} s per million cells)"
        )
    n_cubes = round(100 / scale)
    t0, c0 = time.perf_counter(), time.process_time()
    frame = measure_cubes(
        {f"c{i}": (original, protected) for i in range(n_cubes)}, specs["default measures, interior"], workers=2
    )
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"programme: {n_cubes} cubes x {scale:.2f}M = {n_cubes * scale:.0f}M cells, default spec, 2 workers: "
        f"{dt:.1f} s wall, {dc:.1f} s CPU, load average {os.getloadavg()[0]:.1f} ({frame.shape})"
    )


if __name__ == "__main__":
    main()
