"""The cell key method for frequency counts (Handbook on SDC v2, 5.4; Wilak et al. 2024).

* :mod:`~cubeguard.ckm.ptable` - p-tables and ptable's maximum-entropy construction (solved in
  :mod:`~cubeguard.ckm.ptable_solver`); :mod:`~cubeguard.ckm.ptable_modify` - the modified
  (shuffled) p-table; :mod:`~cubeguard.ckm.ptable_io` - ptable's CSV and the tau-ARGUS format;
  :mod:`~cubeguard.ckm.ptable_plot` - one bar chart per original count.
* :mod:`~cubeguard.ckm.lookup` - noise for (count, cell key) pairs, as the R package cellKey.
* :mod:`~cubeguard.ckm.risk` - posterior probabilities of small original counts.

numpy, scipy, numba and NLopt (p-table construction); no I/O besides reading and writing
p-tables and the p-table plot (matplotlib, imported when called); no global random state.
"""

from cubeguard.ckm.lookup import LookupInputError, lookup_noise, lookup_rows, perturb_counts
from cubeguard.ckm.ptable import (
    PTable,
    PTableFormatError,
    PTableInfeasibleError,
    PTableParams,
    create_cnt_ptable,
    identity_ptable,
)
from cubeguard.ckm.ptable_io import read_ptable, write_ptable
from cubeguard.ckm.ptable_modify import adjacent_equal_noise, modify_cnt_ptable
from cubeguard.ckm.ptable_plot import plot_ptable
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
    "plot_ptable",
    "posterior_probabilities",
    "read_ptable",
    "transition_matrix",
    "uniform_prior",
    "write_ptable",
]
