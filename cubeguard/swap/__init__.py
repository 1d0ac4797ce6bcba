"""Record swapping: pre-tabular protection of census tables by exchanging household geography.

* :func:`targeted_swap` - targeted record swapping (Handbook on SDC v2, 5.6.1; sdcMicro recordSwap).
* :func:`random_swap` - random record swapping within strata (Shlomo 2009, section 3.1).
* :func:`household_risk_table` - k-anonymity risk per household and level, must-swap levels.
* :func:`ons_household_swap` - the ONS 2011 household variant (Frend et al. 2011, section 2).
* :func:`ons_communal_swap` - the ONS 2011 communal-establishment variant (Frend et al. 2011, section 3).

Everything here is pure numpy/pandas/numba: no I/O, no global random state.
"""

from cubeguard.swap.ons_communal import CommunalSwapResult, ons_communal_swap
from cubeguard.swap.ons_household import OnsSwapResult, ons_household_swap
from cubeguard.swap.params import (
    OnsHouseholdSwapParams,
    RandomSwapParams,
    SwapDataError,
    SwapSeedError,
    TargetedSwapParams,
)
from cubeguard.swap.params_communal import OnsCommunalSwapParams
from cubeguard.swap.random_swap import RandomSwapResult, random_swap
from cubeguard.swap.risk import household_risk_table
from cubeguard.swap.targeted import SwapResult, targeted_swap

__all__ = [
    "CommunalSwapResult",
    "OnsCommunalSwapParams",
    "OnsHouseholdSwapParams",
    "OnsSwapResult",
    "RandomSwapParams",
    "RandomSwapResult",
    "SwapDataError",
    "SwapResult",
    "SwapSeedError",
    "TargetedSwapParams",
    "household_risk_table",
    "ons_communal_swap",
    "ons_household_swap",
    "random_swap",
    "targeted_swap",
]
