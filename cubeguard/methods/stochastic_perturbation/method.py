"""Invariant stochastic perturbation as a release step: the cube function, public parameters, config checks."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from cubeguard.errors import CubeguardError, InternalError
from cubeguard.measures.select import hierarchies
from cubeguard.methods.base import CheckContext, CubeFunction, KeyPath, Problem
from cubeguard.methods.cells import (
    FloatArray,
    IntArray,
    control_groups,
    interior,
    last_step_problems,
    leaf_index,
    publish,
    summed,
    summed_real,
    uniforms,
)
from cubeguard.methods.stochastic_perturbation.kernel import Perturbation, perturb
from cubeguard.methods.stochastic_perturbation.model import StochasticPerturbationStep
from cubeguard.methods.stochastic_perturbation.restore import Fit, Table, controlled_integers, ipf, table_of, table_over

#: How long HiGHS may look for the controlled rounding of one cube's fitted interior.
CONTROLLED_LIMIT_S = 600.0

#: The cube attribute holding the step's report (JSON): public facts, no counts and no parameter.
REPORT_ATTR = "stochastic_perturbation"


def perturb_cube(
    cube: xr.Dataset, step: StochasticPerturbationStep, spec: Perturbation, seed: int | None
) -> xr.Dataset:
    """The cube with its interior perturbed by ``spec``, fitted and made integral as ``step`` says (see its model)."""
    counts = np.asarray(cube["count"].values, dtype=np.int64)
    found = hierarchies(cube)
    index = leaf_index(cube, found)
    group, totals = control_groups(cube, step.control, step.control_depth, index, found)
    inner = interior(counts, index)
    u = uniforms(cube, seed)
    moved = perturb(inner.ravel(), interior(u, index).ravel(), group.ravel(), u.ravel()[totals], spec)
    moved = moved.reshape(inner.shape)
    report: dict[str, object] = {"groups": int(group.max(initial=0)) + 1, "fitted_tables": 0}
    tables = _tables(cube, inner, step.fit)
    if not tables:
        return _reported(publish(cube, summed(cube, moved, found)), report)
    tables.append(table_of(group.ravel(), inner.ravel().astype(np.float64)))  # the controls stay exact
    fit = ipf(moved.ravel().astype(np.float64), tables, step.tolerance, step.cycles)
    report |= _fit_report(fit, len(tables) - 1, step.rounding)
    fitted = fit.fitted.reshape(inner.shape)
    if step.rounding == "every_cell":
        full = np.rint(summed_real(cube, fitted, found)).astype(np.int64)
    else:
        full = summed(cube, _integers(fit.fitted, tables, step, cube).reshape(inner.shape), found)
    return _reported(publish(cube, full), report)


def _integers(fitted: FloatArray, tables: list[Table], step: StochasticPerturbationStep, cube: xr.Dataset) -> IntArray:
    """The fitted interior (flat) as integers: rounded under control to the fitted tables, or to nearest."""
    if step.rounding == "interior":
        return np.rint(fitted).astype(np.int64)
    out = controlled_integers(fitted, tables, CONTROLLED_LIMIT_S)
    if out is None:
        raise CubeguardError(
            f"cube {cube.attrs.get('cube_id', '?')!r}: HiGHS found no rounding of the fitted cells that keeps every "
            f"cell of the {len(tables) - 1} margin tables of 'fit' of step {step.name!r} and the control totals "
            f"exact (none exists, or none within {CONTROLLED_LIMIT_S:g} s); fit fewer tables, or set 'rounding' to "
            "'interior'"
        )
    return out


def _tables(cube: xr.Dataset, inner: IntArray, fit: list[list[str]]) -> list[Table]:
    """The margin tables of ``fit`` the cube has (all their breakdowns), at their original counts."""
    dims = [str(d) for d in cube["count"].dims]
    original = inner.astype(np.float64)
    return [
        table_over(original, sorted(dims.index(b) for b in table)) for table in fit if all(b in dims for b in table)
    ]


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


def prepare(step: StochasticPerturbationStep) -> CubeFunction:
    """Perturb a cube as the (resolved) step says."""
    seed, diagonal, band = step.seed, step.diagonal, step.band
    if not isinstance(diagonal, float) or not isinstance(band, int) or not isinstance(seed, int | None):
        raise InternalError("the stochastic perturbation's secrets are not resolved; this is a bug in cubeguard")
    spec = Perturbation(0 if step.perturb_zeros else 1, step.cap, diagonal, band)

    def perturbed(cube: xr.Dataset) -> xr.Dataset:
        return perturb_cube(cube, step, spec, seed)

    return perturbed


def public(step: StochasticPerturbationStep) -> dict[str, object]:
    """The perturbed range, the controls and the restoration are public; the matrix's parameters and the seed are not."""
    return {
        "cap": step.cap,
        "perturb_zeros": step.perturb_zeros,
        "control": step.control,
        "control_depth": step.control_depth,
        "fit": step.fit,
        "rounding": step.rounding,
    }


def check(step: StochasticPerturbationStep, ctx: CheckContext) -> list[Problem]:
    """The control and fitted breakdowns exist, and no later step changes a cube this step perturbs."""
    named: list[tuple[KeyPath, str]] = [(("control", k), b) for k, b in enumerate(step.control)]
    named += [(("fit", k, j), b) for k, table in enumerate(step.fit) for j, b in enumerate(table)]
    found: list[Problem] = [
        (path, f"unknown breakdown {bid!r}; name a breakdown id of the release's variables")
        for path, bid in named
        if ctx.breakdowns and bid not in ctx.breakdowns
    ]
    return found + last_step_problems(ctx, "keep the distribution of values and the controlled totals")
