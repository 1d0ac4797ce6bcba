"""The cell key method for magnitudes (numeric variables), bit for bit as R cellKey 1.0.2.

Gießing (2016), "Computational issues in the design of transition probabilities and disclosure
risk estimation for additive noise", PSD 2016, LNCS 9867; Handbook on SDC v2, 5.4 and 5.7.

* :mod:`.params` - the frozen parameters (``ck_params_nums``, ``ck_flexparams``, ``ck_simpleparams``).
* :mod:`.ptable` - numeric p-tables (R ptable's CSV) and the separation point.
* :mod:`.ptable_create` - numeric p-tables from their parameters (R ptable's ``create_num_ptable``).
* :mod:`.lookup` - noise with interpolation between the table's points.
* :mod:`.keys` - the component keys (``.scramble_ckeys``, with R's number-to-text round trip).
* :mod:`.topk` - the largest contributions per cell, merged from children for margins.
* :mod:`.cells` - tabulation of a numeric variable into every cell.
* :mod:`.perturb` - the per-cell loop.

Deviations from cellKey 1.0.2 (both documented where they apply): the top-k bug Q1 is fixed by
default (``topk: cellkey_1_0_2`` reproduces it), and where cellKey stops on ``0/0`` (Q6, Q7) the
component is skipped instead; a cell with a non-zero sum whose cell key is exactly 0 keeps its
sum (cellKey publishes 0).
"""

from cubeguard.ckm.magnitude.cells import MagnitudeCells, tabulate_magnitudes
from cubeguard.ckm.magnitude.keys import scramble_key, scramble_keys
from cubeguard.ckm.magnitude.lookup import MODES
from cubeguard.ckm.magnitude.params import FlexParams, MagnitudeParams, SimpleParams
from cubeguard.ckm.magnitude.perturb import (
    BRANCHES,
    MagnitudeInputError,
    MagnitudeResult,
    mean_before_sum,
    perturb_magnitudes,
    perturbed_sums,
)
from cubeguard.ckm.magnitude.ptable import TYPES, NumPTable, NumPTableError, Separation, read_num_ptable, separation
from cubeguard.ckm.magnitude.ptable_create import (
    NumPTableInfeasibleError,
    NumPTableParams,
    create_num_ptable,
    num_ptable_params,
    write_num_ptable,
)
from cubeguard.ckm.magnitude.topk import TopContributions, merge_top, stored_counts, top_contributions

__all__ = [
    "BRANCHES",
    "MODES",
    "TYPES",
    "FlexParams",
    "MagnitudeCells",
    "MagnitudeInputError",
    "MagnitudeParams",
    "MagnitudeResult",
    "NumPTable",
    "NumPTableError",
    "NumPTableInfeasibleError",
    "NumPTableParams",
    "Separation",
    "SimpleParams",
    "TopContributions",
    "create_num_ptable",
    "mean_before_sum",
    "merge_top",
    "num_ptable_params",
    "perturb_magnitudes",
    "perturbed_sums",
    "read_num_ptable",
    "scramble_key",
    "scramble_keys",
    "separation",
    "stored_counts",
    "tabulate_magnitudes",
    "top_contributions",
    "write_num_ptable",
]
