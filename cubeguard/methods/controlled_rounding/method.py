"""Controlled rounding as a release step: the cube function, public parameters, config checks."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from cubeguard.errors import CubeguardError
from cubeguard.measures.select import hierarchies
from cubeguard.methods.base import CheckContext, CubeFunction, Problem
from cubeguard.methods.cells import last_step_problems, publish
from cubeguard.methods.controlled_rounding.kernel import Solution, controlled_round
from cubeguard.methods.controlled_rounding.model import ControlledRoundingStep

#: The cube attribute holding the step's report (JSON): public facts about the solve, no counts.
REPORT_ATTR = "controlled_rounding"


def round_cube(cube: xr.Dataset, step: ControlledRoundingStep) -> xr.Dataset:
    """The cube rounded under control (Hundepool et al. 2024, Handbook on SDC v2, 5.5.1).

    ``count`` becomes the published count, additive at every level, and ``noise`` published minus
    original added to an earlier step's noise. The report of the solve goes to
    ``attrs["controlled_rounding"]`` as JSON (see :meth:`Solution.report`). The whole cube is read
    into memory: the program couples all its cells. An earlier step may leave the cube
    non-additive (e.g. the cell key method); the published cube is additive all the same, each
    cell within ``steps`` bases of the count it was given.

    Raises:
        CubeguardError: no rounding exists within ``steps`` (raise ``steps``), or the stop rule was
            not met within ``time_limit_s``.
    """
    found = hierarchies(cube)
    count = cube["count"]
    counts = np.asarray(count.values).astype(np.int64)
    solution = controlled_round(
        counts, [found[str(d)] for d in count.dims], step.base, step.steps, step.stop, step.time_limit_s
    )
    published = _accepted(solution, step, str(cube.attrs.get("cube_id", "?")))
    out = publish(cube, published)  # additive: controlled_round checks every equation of the program
    report = {"base": step.base, "steps": step.steps, "stop": step.stop, **solution.report()}
    return out.assign_attrs({REPORT_ATTR: json.dumps(report)})


def _accepted(solution: Solution, step: ControlledRoundingStep, cube_id: str) -> np.ndarray:
    """The published table, or the user error that says why there is none to publish."""
    if solution.status == "infeasible":
        raise CubeguardError(
            f"cube {cube_id!r} has no controlled rounding to base {step.base} with every cell within "
            f"{step.steps} step(s) of its count; raise 'steps' of step {step.name!r} (e.g. to {step.steps + 1})"
        )
    if solution.published is None:
        raise CubeguardError(
            f"the solver found no controlled rounding of cube {cube_id!r} within {step.time_limit_s:g} s; "
            f"raise 'time_limit_s' of step {step.name!r}, or raise 'steps' to make one easier to find"
        )
    if step.stop == "optimal" and solution.status != "optimal":
        raise CubeguardError(
            f"the solver did not prove the controlled rounding of cube {cube_id!r} optimal within "
            f"{step.time_limit_s:g} s (gap {solution.gap:.2%}); raise 'time_limit_s' of step {step.name!r}, "
            "or set 'stop' to 'time_limit' or 'first_feasible'"
        )
    return solution.published


def prepare(step: ControlledRoundingStep) -> CubeFunction:
    """Round a cube under control to the step's base, steps and stop rule."""

    def rounded(cube: xr.Dataset) -> xr.Dataset:
        return round_cube(cube, step)

    return rounded


def public(step: ControlledRoundingStep) -> dict[str, object]:
    """Every parameter is public: users read the published counts knowing the base and the steps (5.5.1.2)."""
    return {"base": step.base, "steps": step.steps, "stop": step.stop, "time_limit_s": step.time_limit_s}


def check(step: ControlledRoundingStep, ctx: CheckContext) -> list[Problem]:
    """No later step protects a cube this step rounds (it would no longer be additive multiples of the base).

    Earlier steps may perturb the cube (e.g. the cell key method): rounding their output keeps the
    published cube additive and every count a multiple of the base.
    """
    return last_step_problems(ctx, f"all be multiples of {step.base} and add up")
