"""Apply the release's post-tabular steps to every cube: original store -> protected store."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from cubeguard.config.load import Release
from cubeguard.cubes.store import list_cubes, load_cube, write_cube
from cubeguard.cubes.values import unperturbed
from cubeguard.errors import InternalError
from cubeguard.methods.base import CubeFunction
from cubeguard.pipeline.resolved_steps import build_step
from cubeguard.secrets import SecretResolver


@dataclass(frozen=True)
class ProtectionSummary:
    """What changed in one cube (no secret parameter appears here)."""

    cube_id: str
    steps: list[str]
    cells: int
    changed_share: float
    small_published: int  # cells published as 1 or 2
    max_abs_noise: int

    def as_dict(self) -> dict[str, object]:
        """Plain-dict form (for task results and artifacts)."""
        return asdict(self)


def protect_release(
    release: Release,
    original: Path,
    protected: Path,
    resolver: SecretResolver | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> list[ProtectionSummary]:
    """Run every configured step on every cube it targets; write all cubes to ``protected``."""
    out = []
    prepare = functools.cache(lambda k: build_step(release.config.steps[k], f"steps[{k}]", resolver))
    for cube_id in start_protected_store(original, protected):
        out.append(protect_cube(release, cube_id, original, protected, resolver, prepare))
        if progress:
            progress("protect", 1)
    return out


def start_protected_store(original: Path, protected: Path) -> list[str]:
    """Empty the protected store (its root group created) and list the cubes to protect.

    After this, :func:`protect_cube` may run for different cubes at once, in threads, processes
    or Dask workers: each writes only its own group.
    """
    if protected.exists():
        shutil.rmtree(protected)
    zarr.open_group(protected, mode="w", zarr_format=3)
    return list_cubes(original)


def protect_cube(
    release: Release,
    cube_id: str,
    original: Path,
    protected: Path,
    resolver: SecretResolver | None = None,
    prepare: Callable[[int], CubeFunction] | None = None,
) -> ProtectionSummary:
    """Apply the steps that target ``cube_id`` and write it to ``protected``; the same wherever it runs.

    ``prepare`` gives post-tabular step ``k`` ready to apply, prepared once for every cube (the
    release plan's); without it each step is prepared for this cube alone.
    """
    if prepare is None:
        prepare = lambda k: build_step(release.config.steps[k], f"steps[{k}]", resolver)  # noqa: E731
    steps = [(s, prepare(k)) for k, s in release.config.steps_for(cube_id)]
    cube = load_cube(original, cube_id)
    applied = [s.name for s, _ in steps]
    for _, fn in steps:
        cube = fn(cube)
    if "noise" not in cube:
        cube = cube.assign(noise=cube["count"] * 0)
    if exact := unperturbed(cube):
        raise InternalError(f"cube {cube_id}: no step perturbed the sums of {exact}; this is a bug in cubeguard")
    published = cube.drop_vars("key_sum").assign_attrs(steps=applied)
    write_cube(protected, published, release.config.output.chunk_cells)
    return _summary(cube_id, applied, published)  # the values just written


def _summary(cube_id: str, applied: list[str], cube: xr.Dataset) -> ProtectionSummary:
    noise = cube["noise"].values
    count = cube["count"].values
    return ProtectionSummary(
        cube_id,
        applied,
        int(count.size),
        float(np.mean(noise != 0)) if noise.size else 0.0,
        int(np.isin(count, (1, 2)).sum()),
        int(np.abs(noise).max()) if noise.size else 0,
    )
