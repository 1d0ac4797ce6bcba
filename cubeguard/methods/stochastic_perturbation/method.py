"""Invariant stochastic perturbation as a release step: the cube function, public parameters, config checks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.cubes.tree import hierarchies
from cubeguard.errors import CubeguardError, InternalError
from cubeguard.methods.base import BoundsFunction, CubeFunction
from cubeguard.methods.bounds import BoolArray, Bounds, by_value, open_margins
from cubeguard.methods.cells import (
    FloatArray,
    IntArray,
    control_groups,
    held_sets,
    interior,
    last_step_problems,
    leaf_index,
    publish,
    summed,
    summed_real,
    uniforms,
)
from cubeguard.methods.context import CheckContext, KeyPath, Problem
from cubeguard.methods.stochastic_perturbation.hold import Held, held_tables
from cubeguard.methods.stochastic_perturbation.kernel import Perturbation, perturb
from cubeguard.methods.stochastic_perturbation.model import StochasticPerturbationStep
from cubeguard.methods.stochastic_perturbation.restore import Fit, controlled_integers, ipf, table_of

#: How long HiGHS may look for the controlled rounding of one cube's fitted interior.
CONTROLLED_LIMIT_S = 600.0

#: The cube attribute holding the step's report (JSON): public facts, no counts and no parameter.
REPORT_ATTR = "stochastic_perturbation"
#: The report's facts shown as measures (``perturbation_<fact>@cube``).
FACTS = ("groups", "fitted_tables", "held_tables", "ipf_cycles", "ipf_max_gap")


class _NoRounding(Exception):
    """HiGHS found no rounding of a fitted interior that keeps its tables exact (``args[0]``: how many, controls aside)."""


def perturb_cube(
    cube: xr.Dataset, step: StochasticPerturbationStep, spec: Perturbation, seed: int | None
) -> xr.Dataset:
    """The cube with its interior perturbed by ``spec``, fitted and made integral as ``step`` says (see its model)."""
    found = hierarchies(cube)
    held = _held(cube, step, spec, seed)
    dims = [str(d) for d in cube["count"].dims]
    whole = next((h for h in held if set(h.dims) == set(dims)), None)
    if whole is not None:  # the cube is a held or fitted table itself: publish it as every other cube does
        inner: npt.NDArray[np.int64] = np.transpose(whole.values, [whole.dims.index(d) for d in dims])
        report: dict[str, object] = {"held_tables": len(held_sets(step.hold, dims))} if step.hold else {}
        return _reported(publish(cube, summed(cube, np.ascontiguousarray(inner), found)), report)
    try:
        restored, report = _restore(cube, step, spec, seed, held, step.rounding)
    except _NoRounding as failed:
        raise CubeguardError(
            f"cube {cube.attrs.get('cube_id', '?')!r}: HiGHS found no rounding of the fitted cells that keeps every "
            f"cell of the {failed.args[0]} margin tables of {_named(step)} of step {step.name!r} and the control totals exact (none "
            f"exists, or none within {CONTROLLED_LIMIT_S:g} s); {_fewer(step)}"
        ) from None
    if step.hold:
        report["held_tables"] = len(held_sets(step.hold, dims))
    if restored.dtype.kind == "f":  # every_cell: each cell of the fitted table rounded on its own
        full = np.rint(summed_real(cube, restored.astype(np.float64), found)).astype(np.int64)
        return _reported(publish(cube, full), report)
    return _reported(publish(cube, summed(cube, restored.astype(np.int64, copy=False), found)), report)


def _held(cube: xr.Dataset, step: StochasticPerturbationStep, spec: Perturbation, seed: int | None) -> list[Held]:
    """The cube's largest margin tables of ``hold`` and ``fit``, each perturbed on its own (:func:`held_tables`).

    A table of ``fit`` goes through the same machinery as the held tables, so it is published
    perturbed, never at its original counts; one the cube lacks a breakdown of is skipped, and one
    inside a group of ``hold`` is that group's held table.
    """

    def margin(sub: xr.Dataset, below: list[Held]) -> IntArray:
        try:
            inner, _ = _restore(sub, step, spec, seed, below, "controlled")
        except _NoRounding:
            raise CubeguardError(_margin_failure(cube, step, [str(d) for d in sub["count"].dims])) from None
        return inner.astype(np.int64, copy=False)

    return held_tables(cube, step.hold, margin, step.fit) if step.hold or step.fit else []


def _margin_failure(cube: xr.Dataset, step: StochasticPerturbationStep, margin: list[str]) -> str:
    """Why a perturbed margin table of ``hold`` or ``fit`` could not be published, and what to change."""
    where = f"cube {cube.attrs.get('cube_id', '?')!r}: HiGHS found no rounding of the perturbed margin table over "
    limit = f"(none exists, or none within {CONTROLLED_LIMIT_S:g} s)"
    if any(set(margin) <= set(group) for group in step.hold):
        return (
            f"{where}{' x '.join(margin)} named in 'hold' of step {step.name!r} that keeps its own held margins and "
            f"control totals exact {limit}, so other cubes could publish it differently; hold fewer breakdowns"
        )
    return (
        f"{where}{' x '.join(margin)} named in 'fit' of step {step.name!r} that keeps its own margins and the control "
        f"totals exact {limit}, so it cannot be published perturbed; fit fewer or smaller tables"
    )


def _restore(
    cube: xr.Dataset,
    step: StochasticPerturbationStep,
    spec: Perturbation,
    seed: int | None,
    held: list[Held],
    rounding: str,
) -> tuple[npt.NDArray[np.int64] | FloatArray, dict[str, object]]:
    """The interior (shaped) perturbed, fitted to the perturbed tables ``held`` and the controls, rounded by ``rounding``.

    Integers, or the fitted reals for ``every_cell``; without tables to fit, the perturbed interior.
    Raises :class:`_NoRounding` when the controlled rounding finds none.
    """
    counts = np.asarray(cube["count"].values, dtype=np.int64)
    found = hierarchies(cube)
    index = leaf_index(cube, found)
    group, totals = control_groups(cube, step.control, step.control_depth, index, found)
    inner = interior(counts, index)
    u = uniforms(cube, seed)
    moved = perturb(inner.ravel(), interior(u, index).ravel(), group.ravel(), u.ravel()[totals], spec)
    report: dict[str, object] = {"groups": int(group.max(initial=0)) + 1, "fitted_tables": 0}
    dims = [str(d) for d in cube["count"].dims]
    tables = [h.table(dims, inner.shape) for h in held]
    if not tables:
        return moved.reshape(inner.shape), report
    tables.append(table_of(group.ravel(), inner.ravel().astype(np.float64)))  # the controls stay exact
    fitted = ipf(moved.astype(np.float64), tables, step.tolerance, step.cycles)
    report |= _fit_report(fitted, len(tables) - 1, rounding)
    if rounding == "every_cell":
        return fitted.fitted.reshape(inner.shape), report
    if rounding == "interior":
        return np.rint(fitted.fitted).astype(np.int64).reshape(inner.shape), report
    out = controlled_integers(fitted.fitted, tables, CONTROLLED_LIMIT_S)
    if out is None:
        raise _NoRounding(len(tables) - 1)
    return out.reshape(inner.shape), report


def _named(step: StochasticPerturbationStep) -> str:
    return " and ".join(f"'{k}'" for k in ("fit", "hold") if getattr(step, k))


def _fewer(step: StochasticPerturbationStep) -> str:
    if step.hold:
        return "hold fewer breakdowns, or fit fewer tables"
    return "fit fewer tables, or set 'rounding' to 'interior'"


def _fit_report(fit: Fit, tables: int, rounding: str) -> dict[str, object]:
    return {
        "fitted_tables": tables,
        "ipf_cycles": fit.iterations,
        "ipf_max_gap": fit.max_gap,
        "ipf_converged": fit.converged,
        "rounding": rounding,
    }


def _reported(cube: xr.Dataset, report: dict[str, object]) -> xr.Dataset:
    return cube.assign_attrs({REPORT_ATTR: json.dumps(report)})


def facts(attrs: Mapping[Any, Any]) -> dict[str, float]:
    """The control groups, the margin tables fitted and held, and IPF's cycles and largest gap.

    How far the fit got (Shlomo 2009, 3.2.2), which the generic measures do not say; read from the
    report the step left in the cube's attributes.
    """
    report = attrs.get(REPORT_ATTR)
    report = json.loads(report) if isinstance(report, str) else report
    if not isinstance(report, dict):
        raise InternalError("a cube lacks its stochastic perturbation report; this is a bug in cubeguard")
    return {f"perturbation_{k}": float(report[k]) for k in FACTS if k in report}


def prepare(step: StochasticPerturbationStep) -> CubeFunction:
    """Perturb a cube as the (resolved) step says."""
    seed, diagonal, band = step.seed, step.diagonal, step.band
    if not isinstance(diagonal, float) or not isinstance(band, int) or not isinstance(seed, int | None):
        raise InternalError("the stochastic perturbation's secrets are not resolved; this is a bug in cubeguard")
    spec = Perturbation(0 if step.perturb_zeros else 1, step.cap, diagonal, band)

    def perturbed(cube: xr.Dataset) -> xr.Dataset:
        return perturb_cube(cube, step, spec, seed)

    return perturbed


def bounds(step: StochasticPerturbationStep) -> BoundsFunction:
    """An inner count in the perturbed range comes from ``2 band`` either side of it, within the range (Shlomo 2009, 3.2.2).

    The invariant matrix ``R = P Q`` (Gouweleeuw et al. 1998, section 5) moves a value by up to
    ``band`` twice (``P`` then the backward ``Q``), so up to ``2 band`` (exactly 0 beyond:
    :func:`transition_counts` never moves a cell where ``R`` is 0); counts outside ``low .. cap``
    stay, so a published 0 is exact unless ``perturb_zeros``. Totals are sums of the interior, left
    to additivity (control totals are exact, but a bounds function cannot tell them from others).
    With ``fit`` or ``hold``, IPF scales every inner cell by ratios nothing bounds, so only
    ``published >= 1 => original >= 1`` is left (a zero stays zero through IPF and rounding).

    Raises:
        InternalError: ``band`` is still a reference (secrets are resolved before this is called).
    """
    if not isinstance(step.band, int):
        raise InternalError("the stochastic perturbation's band is not resolved; this is a bug in cubeguard")
    low, cap, reach = (0 if step.perturb_zeros else 1), step.cap, 2 * step.band
    values = np.arange(cap + 1, dtype=np.float64)
    lo_of = np.where(values >= low, np.maximum(values - reach, low), values)
    hi_of = np.where(values >= low, np.minimum(values + reach, cap), values)
    fitted = bool(step.fit or step.hold)

    def moved(published: IntArray, interior: BoolArray) -> Bounds:
        if fitted:
            positive = (np.asarray(published) >= 1) & (low == 1)
            return open_margins((positive.astype(np.float64), np.full(positive.shape, np.inf)), interior)
        return open_margins(by_value(published, lo_of, hi_of, (0, 0)), interior)

    return moved


def public(step: StochasticPerturbationStep) -> dict[str, object]:
    """The perturbed range, the controls and the restoration are public; the matrix's parameters and the seed are not."""
    return {
        "cap": step.cap,
        "perturb_zeros": step.perturb_zeros,
        "control": step.control,
        "control_depth": step.control_depth,
        "fit": step.fit,
        "hold": step.hold,
        "rounding": step.rounding,
    }


def check(step: StochasticPerturbationStep, ctx: CheckContext) -> list[Problem]:
    """The named breakdowns exist, every fitted table can be perturbed, ``hold`` can be kept, and no later step changes a cube this step perturbs."""
    named: list[tuple[KeyPath, str]] = [(("control", k), b) for k, b in enumerate(step.control)]
    named += [(("fit", k, j), b) for k, table in enumerate(step.fit) for j, b in enumerate(table)]
    named += [(("hold", k, j), b) for k, group in enumerate(step.hold) for j, b in enumerate(group)]
    found: list[Problem] = [
        (path, f"unknown breakdown {bid!r}; name a breakdown id of the release's variables")
        for path, bid in named
        if ctx.breakdowns and bid not in ctx.breakdowns
    ]
    return (
        found
        + _control_fit_problems(step, ctx)
        + _hold_problems(step)
        + last_step_problems(ctx, "keep the distribution of values and the controlled totals")
    )


def _control_fit_problems(step: StochasticPerturbationStep, ctx: CheckContext) -> list[Problem]:
    """A table of ``fit`` whose every cell is a control total cannot be perturbed: the controls are published exact."""
    found: list[Problem] = []
    for k, table in enumerate(step.fit):
        depth = ctx.depths.get(table[0]) if len(table) == 1 and table[0] in step.control else None
        if depth is not None and depth <= step.control_depth:
            found.append(
                (
                    ("fit", k),
                    f"fit table {table} is a control table: each of its cells is a control total (control_depth "
                    f"{step.control_depth}), which this method publishes at its original count, so it cannot be "
                    f"perturbed; drop the table (the control totals are kept already), or set 'control_depth' below "
                    f"{depth}",
                )
            )
    return found


def _hold_problems(step: StochasticPerturbationStep) -> list[Problem]:
    """Held cells stay exact only under controlled rounding."""
    if not step.hold or step.rounding == "controlled":
        return []
    return [
        (
            ("rounding",),
            f"rounding {step.rounding!r} does not keep the margin cells of 'hold' at the values other cubes "
            "publish; set 'rounding' to 'controlled', or drop 'hold'",
        )
    ]
