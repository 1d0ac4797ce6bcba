"""What an attack found, per cube: small original cells attacked, recovered, guessed.

A *target* is a cell whose original count is small (1 or 2: Shlomo 2009, section 4.1; Handbook on
SDC v2, 5.8). The intruder has recovered a target *with certainty* when its interval is the one
value it holds; the interval *discloses* it when it lies within the small values (the intruder
knows the cell holds one or two units, without knowing which). The *best guess* is the value of
the interval nearest the published count (or the attack's own estimate); it is compared with the
*base rate*, the hits of an intruder who guesses the most common small value for every target
without reading anything. Originals are used only to score; a report shows counts of cells and the
codes of the worst, never an original value.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import numpy.typing as npt

from cubeguard.attack.cells import CubeView
from cubeguard.attack.intervals import UNBOUNDED, IntArray

SMALL = (1, 2)
MAX_NAMED = 10


@dataclass(frozen=True)
class AttackFacts:
    """One attack on one cube.

    Attributes:
        attack: the attack's name.
        cube: the cube id.
        targets: small original cells the attack was scored on.
        certain: targets whose interval is their one original value.
        disclosed: targets whose interval lies within the small values (certain ones included).
        widest_disclosed: the widest interval among the disclosed targets (hi - lo; -1 if none).
        guessed: targets the best guess got right.
        base_rate: targets a guess of the most common small value gets right.
        unprotected: True for the self-test on the unprotected counts.
        named: codes of up to :data:`MAX_NAMED` targets recovered with certainty (internal report only).
    """

    attack: str
    cube: str
    targets: int
    certain: int
    disclosed: int
    widest_disclosed: int
    guessed: int
    base_rate: int
    unprotected: bool = False
    named: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """Plain-dict form (JSON)."""
        return asdict(self)


def score(attack: str, view: CubeView, lo: IntArray, hi: IntArray, guess: npt.NDArray[np.int64] | None = None,
          targets: npt.NDArray[np.bool_] | None = None, unprotected: bool = False) -> AttackFacts:  # fmt: skip
    """Score intervals ``[lo, hi]`` (and a best guess; default the interval's point nearest the published count)."""
    if view.original is None:
        raise ValueError(f"cube {view.cube}: an attack is scored against the original counts, which were not given")
    original = view.original
    small = np.isin(original, SMALL) if targets is None else targets & np.isin(original, SMALL)
    best = np.clip(view.published, lo, np.minimum(hi, UNBOUNDED)) if guess is None else guess
    certain = small & (lo == hi) & (lo == original)
    disclosed = small & (lo >= SMALL[0]) & (hi <= SMALL[-1])
    widths = (hi - lo)[disclosed]
    values, counts = np.unique(original[small], return_counts=True)
    mode = values[np.argmax(counts)] if values.size else 1
    return AttackFacts(
        attack=attack,
        cube=view.cube,
        targets=int(small.sum()),
        certain=int(certain.sum()),
        disclosed=int(disclosed.sum()),
        widest_disclosed=int(widths.max()) if widths.size else -1,
        guessed=int((small & (best == original)).sum()),
        base_rate=int((small & (original == mode)).sum()),
        unprotected=unprotected,
        named=tuple(view.cell_name(int(c)) for c in np.flatnonzero(certain)[:MAX_NAMED]),
    )
