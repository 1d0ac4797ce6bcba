"""The cell key method for frequency counts (Handbook on SDC v2, 5.4; seed 001).

* :mod:`~cubeguard.ckm.ptable` - p-tables: ptable's maximum-entropy construction, the modified
  (shuffled) p-table, readers for ptable's CSV and the tau-ARGUS export.
* :mod:`~cubeguard.ckm.lookup` - noise for (count, cell key) pairs, as the R package cellKey.
* :mod:`~cubeguard.ckm.risk` - posterior probabilities of small original counts.

Pure numpy/scipy/numba: no I/O besides the p-table readers, no global random state.
"""

from cubeguard.ckm.lookup import LookupInputError, lookup_noise, lookup_rows, perturb_counts
from cubeguard.ckm.ptable import (
    PTable,
    PTableFormatError,
    PTableInfeasibleError,
    PTableParams,
    adjacent_equal_noise,
    create_cnt_ptable,
    identity_ptable,
    modify_cnt_ptable,
    read_ptable,
)
from cubeguard.ckm.risk import (
    PriorError,
    RiskTable,
    max_disclosure_probability,
    posterior_probabilities,
    transition_matrix,
    uniform_prior,
)

__all__ = [
    "LookupInputError",
    "PTable",
    "PTableFormatError",
    "PTableInfeasibleError",
    "PTableParams",
    "PriorError",
    "RiskTable",
    "adjacent_equal_noise",
    "create_cnt_ptable",
    "identity_ptable",
    "lookup_noise",
    "lookup_rows",
    "max_disclosure_probability",
    "modify_cnt_ptable",
    "perturb_counts",
    "posterior_probabilities",
    "read_ptable",
    "transition_matrix",
    "uniform_prior",
]
