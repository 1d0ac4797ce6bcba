"""The intruder: attacks on what a release publishes, as an intruder who knows the method would run them.

cubeguard measures risk with formulas (:mod:`cubeguard.measures`); this package attacks the output
instead (Hundepool et al. 2024, Handbook on SDC v2, 5.2 and 5.7; Shlomo 2009, section 5):

* :mod:`~cubeguard.attack.feasibility`: each cube's published bounds and additivity (tau-ARGUS's audit);
* :mod:`~cubeguard.attack.differencing`: the cubes of a population together, shared cells tied;
* :mod:`~cubeguard.attack.linking`: persons against households through household size;
* :mod:`~cubeguard.attack.averaging`: one cell's values over every cube that publishes it;
* :mod:`~cubeguard.attack.means`: published sums (means) beside counts, ``n`` within ``[m / hi, m / lo]``.

The interval machinery is :mod:`~cubeguard.attack.intervals` (bounds propagation) and
:mod:`~cubeguard.attack.lp` (linear programs, HiGHS); :mod:`~cubeguard.attack.score` counts what was
recovered; :func:`~cubeguard.attack.run.attack_release` runs them all and their self-test.
The attacks are pure functions of published cubes and bounds: reading stores and building the
methods' bounds is :mod:`cubeguard.pipeline.attack`'s.
"""

from cubeguard.attack.cells import CubeView, SumView
from cubeguard.attack.run import ATTACKS, AttackReport, attack_cube, attack_release
from cubeguard.attack.score import AttackFacts
from cubeguard.attack.system import Limits, Link

__all__ = [
    "ATTACKS",
    "AttackFacts",
    "AttackReport",
    "CubeView",
    "Limits",
    "Link",
    "SumView",
    "attack_cube",
    "attack_release",
]
