"""ONS targeted household swapping of the UK 2011 Census (Frend et al. 2011, section 2)."""

from cubeguard.methods import swap_section
from cubeguard.methods.base import MicrodataMethod
from cubeguard.methods.ons_household_swap.kernel import OnsSwapResult, ons_household_swap
from cubeguard.methods.ons_household_swap.method import apply, check, columns, public
from cubeguard.methods.ons_household_swap.model import OnsHouseholdSwapStep

METHOD = MicrodataMethod(
    model=OnsHouseholdSwapStep, public=public, columns=columns, apply=apply, check=check, section=swap_section.section
)

__all__ = ["METHOD", "OnsHouseholdSwapStep", "OnsSwapResult", "ons_household_swap"]
