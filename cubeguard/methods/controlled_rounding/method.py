"""Controlled rounding as a release step: the cube function, public parameters, config checks."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import numpy as np
import xarray as xr

from cubeguard.cubes.tree import DimHierarchy, hierarchies
from cubeguard.errors import CubeguardError
from cubeguard.methods.base import BoundsFunction, CubeFunction
from cubeguard.methods.bounds import BoolArray, Bounds, IntArray, offsets, open_margins
from cubeguard.methods.cells import last_step_problems, publish
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.controlled_rounding.existence import Existence, zero_restricted
from cubeguard.methods.controlled_rounding.hold import held_cells
from cubeguard.methods.controlled_rounding.kernel import Solution, controlled_round
from cubeguard.methods.controlled_rounding.model import ControlledRoundingStep
from cubeguard.methods.controlled_rounding.partition import partitioned_round, rapid

#: The largest table solved as one program after its blocks failed: the Handbook's "up to 150K
#: cells on an average computer" (5.5.1). HiGHS does not always stop at its time limit on larger
#: programs (seen: a 16,000-variable block ran 300 s past a 20 s limit), and a program of millions
#: of cells takes gigabytes to build.
WHOLE_TABLE_MAX_CELLS = 150_000

#: Tables above the first size and up to the second are asked first whether a zero-restricted
#: rounding exists (CP-SAT, :mod:`~cubeguard.methods.controlled_rounding.existence`): HiGHS decides
#: smaller ones at once, and building the constraint model of a larger one in Python takes minutes.
EXISTENCE_CELLS = (10_000, 500_000)

#: At most this long (and never beyond the step's ``time_limit_s``) for that question.
EXISTENCE_LIMIT_S = 60.0

#: The cube attribute holding the step's report (JSON): public facts about the solve, no counts.
REPORT_ATTR = "controlled_rounding"


def round_cube(cube: xr.Dataset, step: ControlledRoundingStep) -> xr.Dataset:
    """The cube rounded under control (Hundepool et al. 2024, Handbook on SDC v2, 5.5.1).

    ``count`` becomes the published count, additive at every level, and ``noise`` published minus
    original added to an earlier step's noise. The report of the solve goes to
    ``attrs["controlled_rounding"]`` as JSON (see :meth:`Solution.report`). The whole cube is read
    into memory: the program couples all its cells, or, above ``partition_above_cells``, the
    blocks of :mod:`~cubeguard.methods.controlled_rounding.partition` do. An earlier step may leave
    the cube non-additive (e.g. the cell key method); the published cube is additive all the same,
    each cell within ``steps_used`` bases of the count it was given (any distance with RAPID).

    Raises:
        CubeguardError: no rounding exists within ``steps`` (raise ``steps``), or the stop rule was
            not met within ``time_limit_s``, and ``fallback`` is ``none``.
    """
    found = hierarchies(cube)
    count = cube["count"]
    counts = np.asarray(count.values).astype(np.int64)
    cube_id = str(cube.attrs.get("cube_id", "?"))
    hier = [found[str(d)] for d in count.dims]
    fixed = _held(counts, hier, step, cube_id)
    solution = solve_table(counts, hier, step, fixed)
    published = _accepted(solution, step, cube_id)
    out = publish(cube, published)  # additive: controlled_round checks every equation of the program
    held = 0 if fixed is None else int(np.count_nonzero(fixed >= 0))
    report = {"base": step.base, "steps": step.steps, "stop": step.stop, **solution.report(), "held_cells": held}
    return out.assign_attrs({REPORT_ATTR: json.dumps(report)})


def _held(
    counts: np.ndarray, hier: list[DimHierarchy], step: ControlledRoundingStep, cube_id: str
) -> np.ndarray | None:
    """The cells held at the rounded margin tables of ``hold`` (None without ``hold``), or the error saying which failed."""
    if not step.hold:
        return None
    fixed, solves = held_cells(counts, hier, step.hold, step.base, step.steps, step.time_limit_s)
    for margin, solution in solves:
        if solution.status != "optimal":
            raise CubeguardError(
                f"cube {cube_id!r}: the margin table over {' x '.join(margin)} named in 'hold' of step {step.name!r} "
                f"got no proven optimal rounding within {step.steps} step(s) and {step.time_limit_s:g} s "
                f"({solution.status}), so other cubes could publish it differently; raise 'steps' or "
                "'time_limit_s', or hold fewer breakdowns"
            )
    return fixed


def solve_table(
    counts: np.ndarray, hier: list[DimHierarchy], step: ControlledRoundingStep, fixed: np.ndarray | None = None
) -> Solution:
    """The step's rounding of one table: block by block above ``partition_above_cells``, else as a whole.

    A table of ``EXISTENCE_CELLS`` cells is first asked whether it has a zero-restricted rounding
    at all (:mod:`~cubeguard.methods.controlled_rounding.existence`): where none exists, one step
    is refused at once and the whole table starts at two; where one exists, it is published when
    nothing better is found, unless ``stop: optimal`` asks for a proof (then the step says what to change). When a block has no rounding, a table of at most
    ``WHOLE_TABLE_MAX_CELLS`` cells is solved whole in the time left; RAPID when asked and nothing
    was found.
    """
    started = time.perf_counter()
    exist = _existence(counts, hier, step, fixed)
    answer = None if exist is None else exist.answer
    if answer == "none" and step.steps == 1:
        return replace(_nothing(counts), zero_restricted=answer)
    solution = None
    if counts.size > step.partition_above_cells:
        solution = partitioned_round(
            counts, hier, step.base, step.steps, step.stop, _left(step, started), step.block_cells, fixed
        )
    blocked = (  # a block has no rounding, time is left, and the whole table may be one program
        solution is not None and solution.status == "infeasible" and counts.size <= WHOLE_TABLE_MAX_CELLS
    )
    if solution is None or blocked:  # small, or the whole table in the time left
        least = 2 if answer == "none" else 1
        whole = controlled_round(counts, hier, step.base, step.steps, step.stop, _left(step, started), fixed, least)
        if solution is None or whole.published is not None or whole.status == "infeasible":
            solution = whole
    solution = replace(solution, zero_restricted=answer)
    if solution.published is None and exist is not None and exist.published is not None:
        return _found_first(counts, solution, exist.published)
    if solution.published is not None or step.fallback == "none":
        return solution
    published = rapid(counts, hier, step.base)
    deviation = np.abs(published - counts)
    return replace(
        solution,
        published=published,
        status="rapid",
        objective=int(deviation.sum()),
        gap=None,
        steps_used=int(deviation.max(initial=0)) // step.base + 1,
    )


def _existence(
    counts: np.ndarray, hier: list[DimHierarchy], step: ControlledRoundingStep, fixed: np.ndarray | None
) -> Existence | None:
    """CP-SAT's answer for a table of ``EXISTENCE_CELLS`` cells (``None`` for others: HiGHS decides small ones)."""
    if not EXISTENCE_CELLS[0] < counts.size <= EXISTENCE_CELLS[1]:
        return None
    return zero_restricted(counts, hier, step.base, min(EXISTENCE_LIMIT_S, step.time_limit_s), fixed)


def _left(step: ControlledRoundingStep, started: float) -> float:
    return max(step.time_limit_s - (time.perf_counter() - started), 0.0)


def _nothing(counts: np.ndarray) -> Solution:
    """The solution of a table proven to have no rounding within its steps."""
    return Solution(None, "infeasible", None, None, None, int(counts.size), 0, 0, 0.0, 0.0)


def _found_first(counts: np.ndarray, solution: Solution, published: np.ndarray) -> Solution:
    """CP-SAT's zero-restricted rounding, published as found (not optimised)."""
    deviation = int(np.abs(published.reshape(counts.shape) - counts).sum())
    return replace(
        solution,
        published=published.reshape(counts.shape),
        status="first_feasible",
        objective=deviation,
        gap=None,
        steps_used=1,
    )


def _accepted(solution: Solution, step: ControlledRoundingStep, cube_id: str) -> np.ndarray:
    """The published table, or the user error that says why there is none to publish."""
    rapid_too = "" if step.hold else ", or set 'fallback' to 'rapid'"  # RAPID cannot keep held cells
    if solution.status == "infeasible" and not solution.whole:
        raise CubeguardError(
            f"a block of cube {cube_id!r} (rounded block by block, above partition_above_cells) has no controlled "
            f"rounding to base {step.base} within {step.steps} step(s) given the totals already held; raise 'steps' "
            f"(e.g. to {step.steps + 1}) or 'block_cells' of step {step.name!r}{rapid_too}"
        )
    if solution.status == "infeasible":
        raise CubeguardError(
            f"cube {cube_id!r} has no controlled rounding to base {step.base} with every cell within "
            f"{step.steps} step(s) of its count; raise 'steps' of step {step.name!r} (e.g. to {step.steps + 1})"
            + _blocks(solution, step, "with more steps a whole table of this size may take long to prove")
        )
    if solution.published is None:
        raise CubeguardError(
            f"the solver found no controlled rounding of cube {cube_id!r} within {step.time_limit_s:g} s; "
            f"raise 'time_limit_s' of step {step.name!r}, or raise 'steps' to make one easier to find{rapid_too}"
            + _blocks(solution, step, "or round it block by block")
        )
    if step.stop == "optimal" and solution.status not in ("optimal", "partitioned", "rapid"):
        raise CubeguardError(
            f"the solver did not prove the controlled rounding of cube {cube_id!r} optimal within "
            f"{step.time_limit_s:g} s ({_gap(solution)}); raise 'time_limit_s' of step {step.name!r}, "
            "or set 'stop' to 'time_limit' or 'first_feasible'" + _blocks(solution, step, "or round it block by block")
        )
    return solution.published


def _gap(solution: Solution) -> str:
    """How far a rounding not proven optimal may be from the optimum, in words."""
    if solution.gap is None:  # CP-SAT's zero-restricted rounding, found when HiGHS found none
        return "only a rounding found by the existence check, with no bound on its distance from the optimum"
    return f"gap {solution.gap:.2%}"


#: A whole table of more cells may need more than a minute to solve at two steps or more (the ESTP
#: course's 4-D table of 4,032 cells was not proven optimal in 60 s; block by block it took seconds).
WHOLE_TABLE_ADVICE_CELLS = 1_000


def _blocks(solution: Solution, step: ControlledRoundingStep, why: str) -> str:
    """Advice to round a large cube solved whole block by block instead (empty where it does not apply)."""
    if not solution.whole or solution.cells <= WHOLE_TABLE_ADVICE_CELLS or step.partition_above_cells < solution.cells:
        return ""
    below = max(WHOLE_TABLE_ADVICE_CELLS, solution.cells // 4)
    return (
        f" ({why}: set 'partition_above_cells' below its {solution.cells:,} cells, e.g. to {below:,}, to round it "
        "block by block, additive and in seconds, though not proven optimal as a whole)"
    )


def prepare(step: ControlledRoundingStep) -> CubeFunction:
    """Round a cube under control to the step's base, steps and stop rule."""

    def rounded(cube: xr.Dataset) -> xr.Dataset:
        return round_cube(cube, step)

    return rounded


def bounds(step: ControlledRoundingStep) -> BoundsFunction:
    """Every cell, totals included, within ``steps * base - 1`` of its published value (Handbook on SDC v2, 5.5.1.2).

    :func:`~cubeguard.methods.controlled_rounding.kernel.build_program` lets a count ``b u + r``
    take ``b (u + t)`` with ``t`` in ``[-(K - 1), K]`` (``[-(K - 1), K - 1]`` when ``r = 0``), and
    every solve is checked against ``|a - x| < K b``; the held grand total goes to its nearest
    multiple. With ``fallback: rapid`` a cube may instead get RAPID (interior to the nearest
    multiple, inside that bound; totals summed, any distance): a bounds function cannot tell which
    cubes did, so it then leaves every total to additivity.
    """
    reach = step.steps * step.base - 1

    def within_steps(published: IntArray, interior: BoolArray) -> Bounds:
        found = offsets(published, reach, reach)
        return open_margins(found, interior) if step.fallback == "rapid" else found

    return within_steps


def public(step: ControlledRoundingStep) -> dict[str, object]:
    """Every parameter is public: users read the published counts knowing the base and the steps (5.5.1.2)."""
    return {
        "base": step.base,
        "steps": step.steps,
        "stop": step.stop,
        "time_limit_s": step.time_limit_s,
        "partition_above_cells": step.partition_above_cells,
        "block_cells": step.block_cells,
        "fallback": step.fallback,
        "hold": step.hold,
    }


def check(step: ControlledRoundingStep, ctx: CheckContext) -> list[Problem]:
    """The held breakdowns exist, RAPID is not asked to keep them, and no later step protects a cube this step rounds (it would no longer be additive multiples of the base).

    Earlier steps may perturb the cube (e.g. the cell key method): rounding their output keeps the
    published cube additive and every count a multiple of the base.
    """
    found: list[Problem] = [
        (("hold", k, j), f"unknown breakdown {bid!r}; name a breakdown id of the release's variables")
        for k, group in enumerate(step.hold)
        for j, bid in enumerate(group)
        if ctx.breakdowns and bid not in ctx.breakdowns
    ]
    if step.hold and step.fallback == "rapid":
        found.append(
            (
                ("fallback",),
                "RAPID publishes each total as the sum of its rounded interior, so it cannot keep the margin cells "
                "of 'hold' at the value other cubes publish; set 'fallback' to 'none', or drop 'hold'",
            )
        )
    return found + last_step_problems(ctx, f"all be multiples of {step.base} and add up")
