"""Attack gate: the intruder recovers at most so many small cells of a cube with certainty.

Read from the cube's row of the measures table, where the release's attack step puts what
:mod:`cubeguard.attack` found (:data:`RECOVERED_COLUMN`: small original cells recovered with
certainty by the most successful attack; :data:`MISSED_COLUMN`: small cells the attacks missed on
the unprotected counts, which they must all recover, else an attack is broken). Handbook on SDC v2,
5.2 (disclosure by differencing and linking) and 5.7.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

RECOVERED_COLUMN = "recovered_by_attack@cube"
MISSED_COLUMN = "attack_self_test_missed@cube"


@dataclass(frozen=True)
class AttackGateFacts:
    """One cube's attack findings against the bound.

    Attributes:
        recovered: small cells recovered with certainty (NaN: the cube has no row).
        missed: small cells the attacks missed on the unprotected counts (NaN: no row).
        bound: the most recovered cells allowed.
    """

    recovered: float
    missed: float
    bound: int

    @property
    def recovered_passed(self) -> bool:
        """At most ``bound`` small cells recovered with certainty (an unknown count fails)."""
        return not math.isnan(self.recovered) and self.recovered <= self.bound

    @property
    def self_test_passed(self) -> bool:
        """The attacks recovered every small cell of the unprotected counts (an unknown count fails)."""
        return not math.isnan(self.missed) and self.missed == 0

    @property
    def passed(self) -> bool:
        """Both verdicts."""
        return self.recovered_passed and self.self_test_passed


def check_attack(row: Mapping[str, float], bound: int) -> AttackGateFacts:
    """Read the attack columns of a cube's measures row.

    Examples:
        >>> check_attack({RECOVERED_COLUMN: 3.0, MISSED_COLUMN: 0.0}, 0).passed
        False
    """
    recovered, missed = row.get(RECOVERED_COLUMN, math.nan), row.get(MISSED_COLUMN, math.nan)
    return AttackGateFacts(float(recovered), float(missed), bound)
