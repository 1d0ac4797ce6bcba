"""Small p-tables worked out by hand, shared by the cell key unit tests."""

from __future__ import annotations

from cubeguard.ckm.ptable import PTable

# Handbook on SDC v2, Table 5.16: i = 1 -> 0 or 2 (1/2 each), i = 2 -> 2 (0.8) or 3 (0.2),
# i >= 3 -> i-1, i, i+1 with 0.3, 0.4, 0.3.
HANDBOOK_TABLE = PTable(
    i=[0, 1, 1, 2, 2, 3, 3, 3],
    j=[0, 0, 2, 2, 3, 2, 3, 4],
    p=[1, 0.5, 0.5, 0.8, 0.2, 0.3, 0.4, 0.3],
    v=[0, -1, 1, 0, 1, -1, 0, 1],
    p_int_lb=[0, 0, 0.5, 0, 0.8, 0, 0.3, 0.7],
    p_int_ub=[1, 0.5, 1, 0.8, 1, 0.3, 0.7, 1],
    type=["all"] * 8,
)
