"""What every protection method provides, so that adding one is one package plus one registry line.

A method is a package under :mod:`cubeguard.methods` holding, together:

* its frozen config model (a :class:`CubeStep` or :class:`MicrodataStep` subclass): the only model
  of its parameters, used by the config loader, the JSON Schema, the sweep and the method itself;
* which parameters are secret (derived: every field that may be given by reference) and which are
  public (:attr:`CubeMethod.public`, an allow-list the manifest shows);
* ``check``: every check that needs no microdata, run when the config loads (files read, p-tables
  feasible, parameters in range including those given by reference, conflicts with other steps);
* ``prepare`` (post-tabular: a function from cube to protected cube) or ``columns`` and ``apply``
  (pre-tabular: the microdata columns it reads, and the method on a frame of them);
* for a post-tabular method that publishes each cell from its own count and cell key alone,
  ``cells``: the same protection on plain arrays, which the flexible-table service uses;
* ``section``, if the method has one: its section of the release report, described as a
  :class:`~cubeguard.methods.section.Section` (headings, paragraphs, tables, pictures) that the
  report layer renders.

:mod:`cubeguard.methods.registry` is the single place a method is listed. The bases of the config
models are in :mod:`cubeguard.methods.models`, what a config-time check knows in
:mod:`cubeguard.methods.context`, the shared field types of method configs in
:mod:`cubeguard.methods.fields`, secret resolution in
:mod:`cubeguard.methods.resolve`, and validation errors as located problems in
:mod:`cubeguard.methods.validation`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd
import xarray as xr

from cubeguard.ckm.keys import KeyScale
from cubeguard.ckm.magnitude import MagnitudeCells
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.models import CubeStep, MicrodataStep, method_name
from cubeguard.methods.section import Section

CubeFunction = Callable[[xr.Dataset], xr.Dataset]
#: Published counts from every cell's count and record-key sum (``cubeguard.ckm.keys``), for
#: methods whose value of a cell depends on nothing else: the arrays' shape is free.
CellFunction = Callable[[npt.NDArray[np.int64], npt.NDArray[np.uint64], KeyScale], npt.NDArray[np.int64]]
#: For a step whose secrets are resolved: what an intruder who knows its parameters learns of each
#: original count from the published one: ``(lo, hi)`` float64 arrays of the published array's shape,
#: ``lo <= original <= hi`` for every cell, ``hi`` may be ``inf``. ``interior`` marks the cells with
#: no total or subtotal code on any axis (margins summed from perturbed interiors are bounded only by
#: additivity, so such a method gives them ``(0, inf)``).
BoundsFunction = Callable[
    [npt.NDArray[np.int64], npt.NDArray[np.bool_]], tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]
]
#: Published sums of a numeric column from every cell's count, exact sum, record-key sum and the key
#: sum of its records with a non-zero value (any shape, the same for all).
SumFunction = Callable[
    [npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.uint64], npt.NDArray[np.uint64], KeyScale],
    npt.NDArray[np.float64],
]


@dataclass(frozen=True)
class Magnitude:
    """How a step publishes a numeric column's sums.

    Attributes:
        top_k: the largest contributions per cell the perturbation reads (0: none).
        perturb: published sums for cells given as :class:`cubeguard.ckm.magnitude.MagnitudeCells`.
        additive: the perturbation reads only counts, sums and key sums (no extremes, no top
            contributions), which a table can sum from a finer one.
        sums: for an additive one, the same published sums straight from those arrays (one
            compiled pass, the serving path); None: use ``perturb``.
    """

    top_k: int
    perturb: Callable[[MagnitudeCells], npt.NDArray[np.float64]]
    additive: bool = False
    sums: SumFunction | None = None


@dataclass(frozen=True)
class Swapped:
    """What a pre-tabular method returns: the changed frame and what its internal report says.

    Attributes:
        data: the changed frame (same rows and order).
        moved: the columns the method may have changed.
        households: households changed (``None`` when persons, not households, are the units).
        persons: persons (records) changed.
        report: per-level and per-area counts, cases left unchanged, method details (internal).
    """

    data: pd.DataFrame
    moved: list[str]
    households: int | None
    persons: int
    report: dict[str, Any]


C = TypeVar("C", bound=CubeStep)
M = TypeVar("M", bound=MicrodataStep)


def _no_magnitudes(step: Any) -> dict[str, Magnitude]:
    return {}


def _no_files(step: Any) -> list[Path]:
    return []


def _no_problems(step: Any, ctx: CheckContext) -> list[Problem]:
    return []


def _never(step: Any) -> bool:
    return False


def always(step: Any) -> bool:
    """For :attr:`CubeMethod.additive`: every step of the method publishes additive cubes."""
    return True


@dataclass(frozen=True)
class CubeMethod(Generic[C]):
    """A post-tabular method.

    Attributes:
        model: the config model (its ``method`` literal is the method's name).
        public: the parameters the manifest may show (an allow-list; never a secret).
        prepare: the cube function of a step whose secrets are resolved (built once per step).
        check: config-time checks beyond the model's own (see :class:`CheckContext`).
        files: the input files a step reads (e.g. a p-table): their content is part of the run key
            and the audit record.
        protects: whether a step of this method counts as protecting the cubes it applies to (the
            identity step does not).
        additive: whether a step publishes additive cubes (every total the sum of its children);
            the additivity gate then blocks on those cubes whatever ``gates.require_additivity`` says.
        rounds: whether a step publishes every count at or near a multiple of its public ``base``
            (Handbook on SDC v2, 5.5); its cubes then get the rounding measures.
        cellwise: whether a step publishes each cell from its own count and cell key alone, so a
            cell has one value in every table that holds it (what flexible tables need).
        cells: for a ``cellwise`` step whose secrets are resolved, the same protection as
            ``prepare`` on plain arrays (:data:`CellFunction`); the table service uses it.
        magnitudes: for a resolved step, the perturbation of each numeric column's sums it
            declares (:data:`Magnitude`, by column); the table service's means use it.
        bounds: for a resolved step, the interval of original counts each published count can
            come from (:data:`BoundsFunction`; the input of the step is the "original"), as an
            intruder who knows every parameter, the secret ones too, derives it from the method;
            ``None``: the method bounds nothing, every cell is ``[0, inf)``. Helpers in
            :mod:`cubeguard.methods.bounds`.
        section: the method's section of the release report, from the release's steps of it as
            ``(label, step)`` pairs in step order (the label as ``steps[2] on c1, c2``; each step's
            secrets resolved); ``None`` from it: no section. Methods that share one function share
            one section: it is called once, with the steps of all of them. ``None``: no section.
        facts: the method's public facts about a cube it protected last, read from the protected
            cube's attributes (what its ``prepare`` function recorded there), as measures of scope
            ``cube`` by name (the measures table's ``<name>@cube`` columns); ``None``: none.
    """

    model: type[C]
    public: Callable[[C], dict[str, object]]
    prepare: Callable[[C], CubeFunction]
    check: Callable[[C, CheckContext], list[Problem]] = _no_problems
    files: Callable[[C], list[Path]] = _no_files
    protects: bool = True
    additive: Callable[[C], bool] = _never
    rounds: bool = False
    cellwise: Callable[[C], bool] = _never
    cells: Callable[[C], CellFunction] | None = None
    magnitudes: Callable[[C], dict[str, Magnitude]] = _no_magnitudes
    bounds: Callable[[C], BoundsFunction] | None = None
    section: Callable[[Sequence[tuple[str, C]]], Section | None] | None = None
    facts: Callable[[Mapping[Any, Any]], dict[str, float]] | None = None
    kind: Literal["post_tabular"] = "post_tabular"

    @property
    def name(self) -> str:
        """The ``method:`` value that selects this method in a config."""
        return method_name(self.model)


@dataclass(frozen=True)
class MicrodataMethod(Generic[M]):
    """A pre-tabular method.

    Attributes:
        model: the config model (its ``method`` literal is the method's name).
        public: the parameters the manifest may show (an allow-list; never a secret).
        columns: the microdata columns a resolved step reads (ids filled in by ``with_ids``).
        apply: the method on a frame of those columns, with the step resolved and its seed.
        check: config-time checks beyond the model's own (see :class:`CheckContext`).
        files: the input files a step reads: their content is part of the run key and the audit.
        forbids: counts no table of the changed microdata can hold (SAFE: 1 and 2); the release's
            ``gates.forbidden_values`` must then include them, so the gate blocks on the promise.
        describe: renders the step's internal report as Markdown (written beside its JSON), if given.
        section: the method's section of the release report, from the internal reports of the
            release's steps of it (the dicts of ``internal/<step name>_report.json``: the step's
            ``name`` and ``method``, what ``apply`` reported in :attr:`Swapped.report`, the
            ``cube_effects``) in step order; ``None`` from it: no section. Methods that share one
            function share one section: it is called once, with the reports of all of them (the
            swapping methods share :func:`cubeguard.methods.swap_section.section`). ``None``: no section.
    """

    model: type[M]
    public: Callable[[M], dict[str, object]]
    columns: Callable[[M], list[str]]
    apply: Callable[[pd.DataFrame, M, int], Swapped]
    check: Callable[[M, CheckContext], list[Problem]] = _no_problems
    files: Callable[[M], list[Path]] = _no_files
    forbids: tuple[int, ...] = ()
    describe: Callable[[dict[str, Any]], str] | None = None
    section: Callable[[Sequence[Mapping[str, Any]]], Section | None] | None = None
    kind: Literal["pre_tabular"] = "pre_tabular"

    @property
    def name(self) -> str:
        """The ``method:`` value that selects this method in a config."""
        return method_name(self.model)


Method = CubeMethod[Any] | MicrodataMethod[Any]
