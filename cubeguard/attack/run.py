"""Every attack on a release's published cubes, and the same attacks on its unprotected counts.

The self-test (issue 35, 3.): each attack also runs on the original counts published as they are,
with the bounds of an unprotected table (each count exact, each published sum exact). There it must
recover every small cell (the interval attacks with certainty, averaging by its guess); an attack
that does not is broken, and :attr:`AttackReport.broken` names it, so a release cannot pass its gate
on an attack that cannot find anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from cubeguard.attack import averaging, differencing, feasibility, linking, means
from cubeguard.attack.cells import CellIndex, CubeView
from cubeguard.attack.score import AttackFacts
from cubeguard.attack.system import Bounder, Limits, Link

ATTACKS = (feasibility.NAME, differencing.NAME, linking.NAME, averaging.NAME, means.NAME)
Progress = Callable[[str, int], None]


@dataclass(frozen=True)
class AttackReport:
    """What every attack found, per cube, on the published cubes and on the unprotected counts."""

    facts: tuple[AttackFacts, ...]

    @property
    def published(self) -> list[AttackFacts]:
        """The attacks on what the release publishes."""
        return [f for f in self.facts if not f.unprotected]

    @property
    def broken(self) -> list[str]:
        """Attacks whose self-test missed a small cell of the unprotected counts (they cannot be trusted)."""
        return sorted({f.attack for f in self.facts if f.unprotected and _hits(f) < f.targets})

    def recovered(self, cube: str) -> int:
        """Small cells of ``cube`` recovered with certainty by the most successful attack."""
        return max((f.certain for f in self.published if f.cube == cube), default=0)

    def missed(self, cube: str) -> int:
        """Small cells of ``cube`` the attacks missed on the unprotected counts (0 unless an attack is broken)."""
        out = 0
        for f in self.facts:
            if f.unprotected and f.cube == cube:
                out += f.targets - _hits(f)
        return out

    def as_dict(self) -> dict[str, object]:
        """Plain-dict form (the internal ``attack.json``)."""
        return {"attacks": list(ATTACKS), "broken": self.broken, "facts": [f.as_dict() for f in self.facts]}

    @classmethod
    def from_dict(cls, found: Mapping[str, object]) -> AttackReport:
        """Back from :meth:`as_dict`."""
        rows = found.get("facts", [])
        assert isinstance(rows, list)
        return cls(tuple(AttackFacts(**{**r, "named": tuple(r.get("named", ()))}) for r in rows))


def _hits(f: AttackFacts) -> int:
    """What an attack counts as recovered: averaging by its guess, the interval attacks with certainty."""
    return f.guessed if f.attack == averaging.NAME else f.certain


def attack_release(views: Sequence[CubeView], bounds: Mapping[str, Bounder | None], limits: Limits = Limits(),
                   link: Link | None = None, progress: Progress | None = None) -> AttackReport:  # fmt: skip
    """Run :data:`ATTACKS` on the published cubes, then on the unprotected counts (the self-test)."""
    index = CellIndex.of(views)  # the cells' identities do not depend on their values: once for both runs
    facts = _all(views, bounds, limits, link, index, progress, unprotected=False)
    plain = [v.unprotected() for v in views if v.original is not None]  # counts and sums exact
    exact = dict.fromkeys((v.cube for v in plain), _exact)
    facts += [replace(f, unprotected=True) for f in _all(plain, exact, limits, link, index, progress, True)]
    return AttackReport(tuple(facts))


def attack_cube(view: CubeView, bounds: Bounder | None, limits: Limits = Limits()) -> AttackReport:
    """Feasibility intervals on one cube and their self-test (a parameter sweep's attack, cube by cube)."""
    found = feasibility.attack([view], {view.cube: bounds}, limits)
    if view.original is not None:
        plain = replace(view, published=view.original)
        found += [replace(f, unprotected=True) for f in feasibility.attack([plain], {view.cube: _exact}, limits)]
    return AttackReport(tuple(found))


def _all(views: Sequence[CubeView], bounds: Mapping[str, Bounder | None], limits: Limits, link: Link | None,
         index: CellIndex, progress: Progress | None, unprotected: bool) -> list[AttackFacts]:  # fmt: skip
    stage = "attack (unprotected)" if unprotected else "attack"
    runs: tuple[Callable[[], list[AttackFacts]], ...] = (
        lambda: feasibility.attack(views, bounds, limits),
        lambda: differencing.attack(views, bounds, limits, index),
        lambda: linking.attack(views, bounds, limits, link, index),
        lambda: averaging.attack(views, index),
        lambda: means.attack(views, bounds, limits),  # only cubes that publish sums
    )
    out: list[AttackFacts] = []
    for run in runs:
        out.extend(run())
        if progress is not None:
            progress(stage, 1)
    return out


def _exact(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of an unprotected table: every count is its original."""
    value = published.astype(np.float64)
    return value, value.copy()
