"""ONS swapping of communal-establishment residents, UK 2011 Census (Frend et al. 2011, section 3)."""

from cubeguard.methods import swap_section
from cubeguard.methods.base import MicrodataMethod
from cubeguard.methods.ons_communal_swap.kernel import CommunalSwapResult, ons_communal_swap
from cubeguard.methods.ons_communal_swap.method import apply, check, columns, public
from cubeguard.methods.ons_communal_swap.model import MATCHING_GROUPS, MatchingProfiles, OnsCommunalSwapStep

METHOD = MicrodataMethod(
    model=OnsCommunalSwapStep, public=public, columns=columns, apply=apply, check=check, section=swap_section.section
)

__all__ = [
    "MATCHING_GROUPS",
    "METHOD",
    "CommunalSwapResult",
    "MatchingProfiles",
    "OnsCommunalSwapStep",
    "ons_communal_swap",
]
