"""The release's attack step: the intruder of :mod:`cubeguard.attack` on the cubes a release publishes.

Reads every protected cube and its original (the cube of the microdata as delivered when the release
has pre-tabular steps, as the measures do), gives each cube the bounds an intruder who knows the
methods, secret parameters included, would use (the post-tabular steps that apply to it, last
step first; none for a cube protected only by a pre-tabular step, whose counts are exact for the
changed microdata and say nothing cell by cell about the delivered ones), and links persons to
households through ``tables.household_size`` when the release offers it. A cube that publishes sums
(``sum.<column>``) carries them to the means attack (:mod:`cubeguard.attack.means`) with the range of
the column's values in each cell, from its classification, and the bound of their perturbation by
the first cell key step of the cube that declares the column's ``magnitudes`` (:func:`sum_views`).
Writes the findings to ``internal/attack.json`` (cell codes and counts of cells, never an original value).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.attack import AttackReport, CubeView, Limits, Link, attack_release
from cubeguard.attack.cells import SumView
from cubeguard.attack.means import noise_bound
from cubeguard.attack.system import Bounder
from cubeguard.ckm.magnitude import read_num_ptable
from cubeguard.config.load import Release
from cubeguard.config.tables import size_linked_persons
from cubeguard.cubes.hierarchy import Classification
from cubeguard.cubes.store import open_cube
from cubeguard.cubes.values import sum_name, summed_columns
from cubeguard.errors import CubeguardError
from cubeguard.pipeline.bounds import step_bounds
from cubeguard.pipeline.earlier import earlier_views
from cubeguard.pipeline.measure import cube_pairs
from cubeguard.pipeline.resolved_steps import resolved_step
from cubeguard.secrets import SecretResolver

FloatArray = npt.NDArray[np.float64]
Progress = Callable[[str, int], None]


def attack_file(release: Release) -> Path:
    """Where the attack step writes its findings (internal: they name the cells recovered)."""
    return release.config.output.internal / "attack.json"


def attack_step(release: Release, resolver: SecretResolver | None = None, progress: Progress | None = None,
                limits: Limits = Limits(), published: Path | None = None, current: str | None = None
                ) -> Path:  # fmt: skip
    """Attack every published cube of ``release`` (and its unprotected counts); write :func:`attack_file`.

    ``published``: a published release's cube store to attack instead of the protected store; it
    must hold the cubes of the release's last run (their originals are the ones at hand).
    ``current``: this run's release id. Earlier publications of the same microdata are attacked
    together with it (:mod:`cubeguard.pipeline.earlier`).
    """
    report = attack_cubes(release, resolver, progress, limits, published, current)
    return write_attack(report, attack_file(release))


def write_attack(report: AttackReport, target: Path) -> Path:
    """Write ``report`` to ``target`` (internal: it names the cells recovered)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report.as_dict(), indent=1))
    return target


def read_attack(release: Release) -> AttackReport | None:
    """The findings of the release's last attack step, or None if it did not run."""
    path = attack_file(release)
    return AttackReport.from_dict(json.loads(path.read_text())) if path.is_file() else None


def attack_cubes(release: Release, resolver: SecretResolver | None = None, progress: Progress | None = None,
                 limits: Limits = Limits(), published: Path | None = None, current: str | None = None
                 ) -> AttackReport:  # fmt: skip
    """:func:`~cubeguard.attack.attack_release` on the release's cube pairs with their methods' bounds."""
    views, bounds = cube_views(release, resolver, published, current)
    return attack_release(views, bounds, limits, household_link(release), progress)


def cube_views(release: Release, resolver: SecretResolver | None = None, published: Path | None = None,
               current: str | None = None) -> tuple[list[CubeView], dict[str, Bounder | None]]:  # fmt: skip
    """The release's cubes as the intruder reads them (with their originals, to score), and their bounds.

    The cubes of earlier publications of the same microdata that an intruder holds join them
    (``<cube>@<release id>``, :func:`~cubeguard.pipeline.earlier.earlier_views`); ``current`` (or the
    folder of ``published``) is this release's id, not an earlier one.
    """
    pairs = sorted(cube_pairs(release).items())
    if published is not None:
        pairs = [(c, (o, _same_cube(published, c, p))) for c, (o, p) in pairs]
    views = [_view(release, p.load(), o.load(), resolver) for _, (o, p) in pairs]
    bounds = {v.cube: cube_bounds(release, v.cube, resolver) for v in views}
    earlier, earlier_bounds = earlier_views(release, views, published.parent.name if published else current)
    return views + earlier, bounds | earlier_bounds


def _view(release: Release, published: xr.Dataset, original: xr.Dataset, resolver: SecretResolver | None) -> CubeView:
    view = CubeView.of(published, original)
    sums = sum_views(release, view, published, original, resolver)
    return replace(view, sums=sums) if sums else view


def sum_views(release: Release, view: CubeView, published: xr.Dataset, original: xr.Dataset,
              resolver: SecretResolver | None = None) -> tuple[SumView, ...]:  # fmt: skip
    """The sums ``published`` holds, with each cell's range of values and the bound of their perturbation.

    None for a release with pre-tabular steps: its sums are of the changed microdata (as its counts,
    which get no bounds either). Sums no cell key step perturbs are exact (``delta = 0``).
    """
    if release.config.pre_tabular:
        return ()
    out = []
    for column in summed_columns(published):
        name = sum_name(column)
        dims = list(view.dims)
        shown = np.asarray(published[name].transpose(*dims).values, dtype=np.float64)
        exact = np.asarray(original[name].transpose(*dims).values, dtype=np.float64) if name in original else None
        whole = column_range(release, column)
        low, high = cell_ranges(release, view, column, whole)
        delta = _delta(release, view.cube, column, shown, low, high, whole, resolver)
        out.append(SumView(column, shown, exact, low, high, delta))
    return tuple(out)


def _delta(release: Release, cube_id: str, column: str, shown: FloatArray, low: FloatArray, high: FloatArray,
           whole: tuple[float, float], resolver: SecretResolver | None) -> FloatArray:  # fmt: skip
    """The bound of the perturbation of the sums of ``column`` by the first step of the cube that declares them."""
    for k, step in release.config.steps_for(cube_id):
        if column in getattr(step, "magnitudes", {}):
            spec = resolved_step(step, f"steps[{k}]", resolver).magnitudes[column]
            vmax = float(np.abs(read_num_ptable(spec.ptable_file).v).max())
            return noise_bound(spec, vmax, spec.unit, shown, low, high, whole)
    return np.zeros_like(shown)


def column_range(release: Release, column: str) -> tuple[float, float]:
    """Every value ``column`` can hold: the leaves of each classification of it (the schema admits no other)."""
    lo, hi = -np.inf, np.inf
    for classification in _classifications(release, column):
        values = [v for leaf in classification.leaf_values for v in leaf if isinstance(v, int)]
        if values and len(values) == sum(len(leaf) for leaf in classification.leaf_values):
            lo, hi = max(lo, min(values)), min(hi, max(values))
    return float(lo), float(hi)


def cell_ranges(release: Release, view: CubeView, column: str, whole: tuple[float, float]
                ) -> tuple[FloatArray, FloatArray]:  # fmt: skip
    """Each cell's range of ``column``: its code's leaves on each axis that classifies the column, else ``whole``."""
    low = np.full(view.published.shape, whole[0])
    high = np.full(view.published.shape, whole[1])
    for k, variable in enumerate(view.variables):
        classification = next((c for c in _classifications(release, column) if c.variable == variable), None)
        if classification is None:
            continue
        ends = code_ranges(classification)
        shape = [-1 if j == k else 1 for j in range(len(view.dims))]
        low = np.maximum(low, np.array([ends[c][0] for c in view.codes[k]]).reshape(shape))
        high = np.minimum(high, np.array([ends[c][1] for c in view.codes[k]]).reshape(shape))
    return low, high


def code_ranges(classification: Classification) -> dict[str, tuple[float, float]]:
    """Each code's smallest and largest raw value, over the leaves under it (unbounded if one is not a number)."""
    out: dict[str, tuple[float, float]] = {}

    def walk(at: int) -> tuple[float, float]:
        kids = classification.children[at]
        if kids:
            ends = [walk(c) for c in kids]
            found = (min(e[0] for e in ends), max(e[1] for e in ends))
        else:
            values = classification.leaf_values[at]
            numbers = all(isinstance(v, int) for v in values) and bool(values)
            found = (float(min(values)), float(max(values))) if numbers else (-np.inf, np.inf)
        out[classification.codes[at]] = found
        return found

    walk(classification.parent.index(-1))
    return out


def _classifications(release: Release, column: str) -> list[Classification]:
    found = {b.classification.variable: b.classification for b in release.breakdowns.values()}
    return [c for c in found.values() if c.column == column and c.dtype == "integer"]


def _same_cube(store: Path, cube: str, protected: xr.Dataset) -> xr.Dataset:
    """Cube ``cube`` of a published store, refused unless it is the protected store's (same counts)."""
    found = open_cube(store, cube).load()
    if found["count"].shape != protected["count"].shape or not np.array_equal(found["count"], protected["count"]):
        raise CubeguardError(
            f"cube {cube} of {store.parent.name} differs from the release's last run, whose originals are the ones "
            "kept; attack it without --release-id after rerunning that release, or attack the last release"
        )
    return found


def cube_bounds(release: Release, cube_id: str, resolver: SecretResolver | None = None) -> Bounder | None:
    """What an intruder knowing every post-tabular step of ``cube_id`` learns of its counts (None: unbounded)."""
    return step_bounds(release, cube_id, lambda k, step: resolved_step(step, f"steps[{k}]", resolver))


def household_link(release: Release) -> Link | None:
    """Persons against households through ``tables.household_size``, when the release offers it."""
    spec = release.config.tables
    if spec is None or spec.household_size is None:
        return None
    size = spec.household_size
    persons = size_linked_persons(spec, release.config.populations, release.config.input.household_columns)
    classification = next(
        (b.classification for b in release.breakdowns.values() if b.classification.variable == size.variable), None
    )
    if not persons or classification is None:
        return None
    sizes = {c: int(v[0]) for c, v in zip(classification.codes, classification.leaf_values, strict=True)
             if len(v) == 1 and isinstance(v[0], int) and v[0] >= 1}  # fmt: skip
    return Link(size.variable, sizes, persons[0], size.population)


def by_cube(report: AttackReport) -> Mapping[str, int]:
    """Small cells recovered with certainty per cube (the gate's fact)."""
    return {f.cube: report.recovered(f.cube) for f in report.published}
