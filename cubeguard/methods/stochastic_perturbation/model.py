"""The config model of invariant stochastic perturbation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from cubeguard.methods.fields import CellSeed, Control, ControlDepth
from cubeguard.methods.models import CubeStep
from cubeguard.secrets import EnvSecret, PrefectSecret

Diagonal = Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)] | EnvSecret | PrefectSecret
Band = Annotated[int, Field(ge=1, le=100)] | EnvSecret | PrefectSecret


class StochasticPerturbationStep(CubeStep):
    """Invariant stochastic perturbation (Shlomo 2009, 3.2.2; Shlomo and Young 2008), as the Eurostat task force ran it.

    The interior cells whose counts lie in the perturbed range (1 to ``cap``, or 0 to ``cap`` with
    ``perturb_zeros``) move among the values of that range by a PRAM-like transition matrix made
    invariant for each control group's own distribution of values (Gouweleeuw et al. 1998): from a
    base matrix that keeps a value with probability ``diagonal`` and otherwise moves it to a value
    at most ``band`` away; the invariant matrix is that matrix followed by its backward matrix, so
    a cell moves by up to ``2 band``. The number of cells moved from each value to each other is fixed to its
    expectation (drawn without replacement), so each group keeps its distribution of values and its
    total exactly. Cells above ``cap`` are not changed. The draws come from the cell keys unless a
    ``seed`` is given. The interior may then be fitted by IPF to the margin tables of ``fit`` and
    to the control totals, then made integral. Each table of ``fit`` is perturbed first as a table
    of its own, by the machinery of ``hold`` (its cells moved by the matrix of its own control
    groups, then fitted to the tables perturbed before it that it contains, and rounded under
    control): a table two tables of ``fit`` share is perturbed once before both, and a table inside
    a group of ``hold`` is that group's held table; so no table of ``fit`` is published at its
    original counts, and a small cell of one stays with the probability with which an interior cell
    stays. ``controlled`` rounds each fitted interior cell down or up so that every cell of the
    perturbed fitted tables and every control total keeps its value (controlled rounding to base 1
    with those tables as constraints, HiGHS) and sums every other total from it; ``interior``
    rounds the fitted interior to the nearest integer and sums every total (exactly additive, but
    the fitted margins and the controls drift by the rounding); ``every_cell`` rounds every cell
    of the fitted table on its own ("close" additivity). Without ``fit``, every total is the sum of
    the perturbed interior. With ``hold``, the margin tables over each group's breakdowns are
    perturbed first, each as a table of its own, and the cube is fitted to their published values
    (:mod:`~cubeguard.methods.stochastic_perturbation.hold`).

    What it does not promise: the control totals (the codes at ``control_depth`` of the first
    breakdown of ``control`` a cube has) are published at their original counts, so a control
    depth whose totals can be small (below NUTS 2) publishes them; a table of ``fit`` whose every
    cell is a control total is refused, as it cannot be perturbed. Cells above ``cap`` are
    published as they are, and the invariant matrix leaves part of the small cells alone (about
    half at diagonal 0.5; more in a group with few of them), so the small-cells gate stays the
    check. A table of ``fit`` is not published alike in every cube (one cube may fit it to a
    shared table another lacks): ``hold`` promises that.
    """

    method: Literal["stochastic_perturbation"]
    name: str = "stochastic_perturbation"
    cap: int = Field(
        default=10,
        ge=1,
        le=100,
        strict=True,
        description="Largest perturbed count (public, at most 100); larger cells are kept.",
    )
    perturb_zeros: bool = Field(default=False, description="Perturb cells of count 0 too (public).")
    diagonal: Diagonal = Field(
        description="Probability that the base transition matrix keeps a value, in (0, 1) (secret)."
    )
    band: Band = Field(
        description="How far the base transition matrix moves a value at most, from 1 (secret); the invariant "
        "matrix applies it forward and back, so a published cell is up to 2 x band from its original."
    )
    control: Control
    control_depth: ControlDepth
    fit: list[list[str]] = Field(
        default_factory=list,
        description="Margin tables (each a list of breakdown ids) the perturbed interior is fitted to by IPF, each "
        "perturbed first as a table of its own as 'hold' does (never at its original counts), a table two of them "
        "share perturbed once; a cube lacking one of a table's breakdowns skips that table. A table whose every cell "
        "is a control total is refused.",
    )
    hold: list[list[str]] = Field(
        default_factory=list,
        description="Groups of breakdown ids (e.g. [[GEO.2, SEX, AGE.1]]) whose margin tables every cube perturbs "
        "first, each on its own and the same way in every cube, and then fits to and holds (rounding 'controlled'): "
        "a cell shared by several cubes through those breakdowns (the other variables at their totals) is published "
        "with the same value in all of them. A table of 'fit' inside a group is held instead; one sharing some of a "
        "group's breakdowns is fitted to the held tables it contains.",
    )
    rounding: Literal["controlled", "interior", "every_cell"] = Field(
        default="controlled",
        description="After IPF: 'controlled' rounds each interior cell down or up so every fitted margin cell is "
        "at its (perturbed) target and sums the totals (additive); 'interior' rounds the interior to nearest and sums the totals "
        "(additive, fitted margins and controls approximate); 'every_cell' rounds every cell on its own (close to additive).",
    )
    tolerance: float = Field(
        default=1e-6, gt=0.0, allow_inf_nan=False, description="IPF stops when every fitted margin cell is this close."
    )
    cycles: int = Field(default=100, ge=1, le=100_000, strict=True, description="IPF stops after this many cycles.")
    seed: CellSeed

    @model_validator(mode="after")
    def _two_values(self) -> StochasticPerturbationStep:
        if self.cap < 2 and not self.perturb_zeros:
            raise ValueError("cap 1 leaves one value to perturb (1 to 1); raise cap, or set perturb_zeros")
        return self
