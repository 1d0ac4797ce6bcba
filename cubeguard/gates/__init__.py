"""Release gates as pure functions of a cube pair and its row of measures (numpy, no GX, no Prefect).

One module per rule, each computing the facts a gate looks at and the verdict on them:

* :mod:`~cubeguard.gates.additivity`: every total and subtotal equals the sum of its children along
  every dimension (Handbook on SDC v2 (Hundepool et al. 2024), 5.4);
* :mod:`~cubeguard.gates.forbidden`: no published cell takes a forbidden value (Handbook on SDC v2, 5.4:
  a p-table with ``js > 0`` never publishes ``1..js``);
* :mod:`~cubeguard.gates.small_cells`: few original small cells (1s and 2s) are published unchanged
  (Shlomo (2009), section 4.1);
* :mod:`~cubeguard.gates.distance`: the information loss of a cube stays within a bound (Shlomo (2009),
  section 4.2).

:func:`~cubeguard.gates.evaluate.evaluate_cube` applies a :class:`~cubeguard.config.models.GateSpec` to
one cube pair, reading a lazy cube slab by slab (:mod:`~cubeguard.gates.slabs`). The thresholds and the
verdicts live here only: the parameter sweep uses them directly, and the Great Expectations gate
(``expectations/``) is fed the facts as compact frames and judges them with these verdict functions.
"""

from cubeguard.gates.evaluate import CHECKS, CheckResult, CubeGateResult, evaluate_cube

__all__ = ["CHECKS", "CheckResult", "CubeGateResult", "evaluate_cube"]
