"""The same published value for a shared cell in every cube: held margin tables perturbed on their own, then fitted to.

A cube perturbed on its own publishes its totals as sums of its own perturbed interior, and the
moves are fixed per value and control group of each cube, so two cubes sharing a cell (e.g. GEO x
SEX x AGE with every other variable at its total) publish it differently. Under ``hold``, every
cube that has some of a group's breakdowns first perturbs each margin table over them (the other
variables at their totals) as a table of its own, smallest first, each fitted (IPF) to its own
held margins and the control totals and rounded under control so they stay exact; the cube is
then fitted to all of them and rounded the same way. A margin table's result depends only on its
own counts, cell keys (or seed and shape) and codes, and is computed in the breakdowns' sorted
order, so every cube publishes it alike without knowing of the others: cubes stay independent.
This is the design of the controlled rounding's ``hold`` (issue 13, item 5), for this method.

The tables of ``fit`` go through the same machinery (:func:`margin_sets`): each is perturbed on its
own before the cube is fitted to it, so none is published at its original counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from cubeguard.cubes.tree import hierarchies
from cubeguard.methods.cells import IntArray, held_sets
from cubeguard.methods.stochastic_perturbation.restore import Table, labels_over


@dataclass(frozen=True)
class Held:
    """A held margin table as published: its breakdowns (sorted) and its interior, axes in that order."""

    dims: tuple[str, ...]
    values: IntArray

    def table(self, dims: Sequence[str], shape: Sequence[int]) -> Table:
        """This table as a margin table of a cube's interior (``dims``, ``shape``), its target the published cells."""
        axes = sorted(list(dims).index(d) for d in self.dims)
        order = [self.dims.index(dims[a]) for a in axes]  # this table's axes in the cube's order
        target = np.transpose(self.values, order).ravel().astype(np.float64)
        return Table(labels_over(shape, axes), target)


#: Publishes a margin cube's interior given the held tables of its own margins.
Interior = Callable[[xr.Dataset, list[Held]], IntArray]


def held_tables(
    cube: xr.Dataset, hold: Sequence[Sequence[str]], publish: Interior, fit: Sequence[Sequence[str]] = ()
) -> list[Held]:
    """The largest perturbed margin tables of ``cube`` (those no other one contains), each published by ``publish``.

    Each margin table of :func:`margin_sets` is published once, smallest first, given the largest
    of the tables already published inside it (every smaller one is their sum), so the same table
    comes out in every cube.
    """
    dims = [str(d) for d in cube["count"].dims]
    found = hierarchies(cube)
    done: list[Held] = []
    for margin in margin_sets(hold, fit, dims):
        dropped = {d: found[d].root for d in dims if d not in margin}
        sub = cube.isel(dropped).transpose(*margin)
        done.append(Held(margin, publish(sub, largest(done, set(margin)))))
    return largest(done, set(dims))


def margin_sets(
    hold: Sequence[Sequence[str]], fit: Sequence[Sequence[str]], dims: Sequence[str]
) -> list[tuple[str, ...]]:
    """The margin tables a cube with ``dims`` perturbs on their own before itself, smallest first.

    Under ``hold``, every non-empty subset of each group's breakdowns it has (:func:`held_sets`).
    Under ``fit``, each table it has every breakdown of and each non-empty intersection of such
    tables, so two fitted tables that share a margin are fitted to one perturbed copy of it; the
    other subsets of a fitted table are not perturbed on their own (three-way tables fitted to all
    their perturbed two-way margins often admit no controlled rounding), they are its sums.

    >>> margin_sets([], [["GEO", "SEX"], ["GEO", "AGE"], ["EDU"]], ["GEO", "SEX", "AGE"])
    [('GEO',), ('AGE', 'GEO'), ('GEO', 'SEX')]
    """
    tables = {tuple(sorted(t)) for t in fit if t and set(t) <= set(dims)}  # an empty table is the grand total
    while more := {tuple(sorted(set(a) & set(b))) for a in tables for b in tables} - tables - {()}:
        tables |= more
    return sorted(set(held_sets(hold, dims)) | tables, key=lambda s: (len(s), s))


def largest(tables: Sequence[Held], within: set[str]) -> list[Held]:
    """The tables over subsets of ``within`` that no other such table contains."""
    inside = [t for t in tables if set(t.dims) <= within]
    return [t for t in inside if not any(set(t.dims) < set(o.dims) for o in inside)]
