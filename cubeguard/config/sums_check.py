"""Config-time checks of the hypercubes' ``sums``, before any data is read.

A published sum must be perturbed (cell key method for magnitudes; Handbook on SDC v2, 5.7): an
exact sum next to a perturbed count gives the count back (a column of whole years summed over
one-year ages is count x age), so only a step that declares the column's ``magnitudes`` may
publish it, and a cube may not sum a column one of its own breakdowns reads (the table service's
rule ``mean_of_a_crossed_column``, for the same reason).
"""

from __future__ import annotations

from collections.abc import Callable

from cubeguard.config.models import HypercubeSpec, ReleaseConfig
from cubeguard.config.yamlmap import KeyPath
from cubeguard.cubes.hierarchy import Breakdown

Add = Callable[[KeyPath, str], None]


def check_sums(cfg: ReleaseConfig, breakdowns: dict[str, Breakdown], add: Add) -> None:
    """Every problem of ``hypercubes[k].sums``, located at its entry."""
    for k, cube in enumerate(cfg.hypercubes):
        for j, column in enumerate(cube.sums):
            crossing = next((b for b in cube.breakdowns if b in breakdowns and breakdowns[b].column == column), None)
            if crossing is not None:
                add(
                    ("hypercubes", k, "sums", j),
                    f"cube {cube.id} is broken down by {crossing}, which reads column {column!r}, so its sums would "
                    f"give the counts back (in one-year ages, count = sum / age); remove {column!r} from sums or "
                    "sum it in a cube without that breakdown",
                )
            elif not _perturbed(cfg, cube, column):
                add(("hypercubes", k, "sums", j), _unperturbed(cfg, cube, column))


def _applies(step: object, cube: HypercubeSpec) -> bool:
    cubes = getattr(step, "cubes", None)  # the steps are not yet validated: ReleaseConfig.steps_for may not hold
    return cubes is None or cube.id in cubes


def _perturbed(cfg: ReleaseConfig, cube: HypercubeSpec, column: str) -> bool:
    """Whether a step that protects ``cube`` perturbs the sums of ``column`` (its ``magnitudes`` declare it)."""
    return any(_applies(s, cube) and column in getattr(s, "magnitudes", {}) for s in cfg.steps)


def _unperturbed(cfg: ReleaseConfig, cube: HypercubeSpec, column: str) -> str:
    """What to change when no step would perturb the sums of ``column`` in ``cube``."""
    keyed = [k for k, s in enumerate(cfg.steps) if _applies(s, cube) and s.method == "cell_key"]
    where = f"steps[{keyed[0]}].magnitudes.{column}" if keyed else "the magnitudes of a cell_key step that protects it"
    return (
        f"cube {cube.id} would publish exact sums of {column!r}, which give the counts back; only the cell key "
        f"method perturbs sums: declare the column in {where}, or remove it from sums"
    )
