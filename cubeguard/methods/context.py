"""What a method's config-time check may know about the release (no microdata is read), and its problems.

A check returns :data:`Problem` pairs (the key path inside the step and what to change); a
pre-tabular method that controls the release's tables (SAFE) is told them as a :class:`TableSet`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.cubes.spec import PopulationSpec
from cubeguard.methods.models import CubeStep, StepModel
from cubeguard.secrets import SecretInt, SecretNumber, SecretRef

KeyPath = tuple[str | int, ...]
#: One config problem: the key path inside the step and what to change (never a secret's value).
Problem = tuple[KeyPath, str]
#: A secret's value from its key inside the step (e.g. ``"D"``, ``"risk_thresholds[1]"``) and its
#: configured value; a reference that cannot be resolved yet comes back unchanged.
Numbers = Callable[[str, SecretNumber | SecretInt], float | SecretRef]


@dataclass(frozen=True)
class TableSet:
    """The release's tables, as a pre-tabular method that controls them (SAFE) is told them at run time.

    Attributes:
        breakdowns: every breakdown the config declares, by id.
        cubes: each hypercube's id and breakdown ids, in config order.
        population_of, populations, household_ref: who a cube counts, when not every person.
        household_columns: columns that hold one value per household (``input.household_columns``).
    """

    breakdowns: Mapping[str, Breakdown]
    cubes: tuple[tuple[str, tuple[str, ...]], ...]
    #: Per cube id, the population it counts when that is not every person record (households are
    #: counted through their reference person, ``household_ref``).
    population_of: Mapping[str, str] = field(default_factory=dict)
    populations: Mapping[str, PopulationSpec] = field(default_factory=dict)
    household_ref: str | None = None
    household_columns: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """The cubes only: the breakdowns' arrays would fill a screen."""
        return f"TableSet(cubes={self.cubes!r})"


@dataclass(frozen=True)
class CheckContext:
    """What a method's config-time check may know about the release; no microdata is read.

    Attributes:
        cube_ids: the release's hypercube ids.
        steps: every step of the same kind (pre- or post-tabular), in config order.
        index: this step's place in ``steps``.
        number: resolves secrets given by reference where it can (environment variables, and the
            orchestrator's secret blocks when a resolver is at hand).
        household_id: the input's household id column.
        person_id: the input's person id column.
        breakdowns: the release's breakdown ids (a cube's dimension names, e.g. ``GEO.2``).
        depths: each breakdown's deepest code's depth in its classification (0: the total), by id.
    """

    cube_ids: frozenset[str]
    steps: tuple[StepModel, ...]
    index: int
    number: Numbers
    household_id: str | None = None
    person_id: str | None = None
    breakdowns: frozenset[str] = frozenset()
    depths: Mapping[str, int] = field(default_factory=dict)

    def sharing(self, later: bool = False) -> list[tuple[int, CubeStep, list[str]]]:
        """The post-tabular steps before (or, with ``later``, after) this one that change counts of some of its cubes.

        Each comes with its place in ``steps`` and the ids of the cubes both protect, sorted; a step
        without ``cubes`` protects every cube of the release.
        """
        mine = self._cubes(self.steps[self.index])
        others = range(self.index + 1, len(self.steps)) if later else range(self.index)
        found = []
        for k in others:
            other = self.steps[k]
            both = sorted(mine & self._cubes(other))
            if isinstance(other, CubeStep) and other.changes_counts and both:
                found.append((k, other, both))
        return found

    def _cubes(self, step: StepModel) -> frozenset[str]:
        cubes = step.cubes if isinstance(step, CubeStep) else None
        return self.cube_ids if cubes is None else frozenset(cubes)
