"""Invariant stochastic perturbation (Shlomo 2009, 3.2.2): PRAM on cell values, totals controlled, additivity restored."""

from cubeguard.methods.base import CubeMethod
from cubeguard.methods.stochastic_perturbation.kernel import Perturbation, perturb
from cubeguard.methods.stochastic_perturbation.matrix import base_matrix, invariant_matrix, transition_counts
from cubeguard.methods.stochastic_perturbation.method import (
    REPORT_ATTR,
    bounds,
    check,
    facts,
    perturb_cube,
    prepare,
    public,
)
from cubeguard.methods.stochastic_perturbation.model import StochasticPerturbationStep
from cubeguard.methods.stochastic_perturbation.restore import Table, controlled_integers, ipf, table_of, table_over


def _additive(step: StochasticPerturbationStep) -> bool:
    """Exactly additive unless the fitted table is rounded cell by cell."""
    return not (step.fit or step.hold) or step.rounding != "every_cell"


METHOD = CubeMethod(
    model=StochasticPerturbationStep,
    public=public,
    prepare=prepare,
    check=check,
    additive=_additive,
    bounds=bounds,
    facts=facts,
)

__all__ = [
    "METHOD",
    "REPORT_ATTR",
    "Perturbation",
    "StochasticPerturbationStep",
    "Table",
    "base_matrix",
    "controlled_integers",
    "invariant_matrix",
    "ipf",
    "perturb",
    "perturb_cube",
    "table_of",
    "table_over",
    "transition_counts",
]
