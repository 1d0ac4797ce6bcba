"""Random record swapping within strata (Shlomo 2009, section 3.1)."""

from cubeguard.methods import swap_section
from cubeguard.methods.base import MicrodataMethod
from cubeguard.methods.random_swap.kernel import RandomSwapResult, random_swap
from cubeguard.methods.random_swap.method import apply, check, columns, public
from cubeguard.methods.random_swap.model import RandomSwapStep

METHOD = MicrodataMethod(
    model=RandomSwapStep, public=public, columns=columns, apply=apply, check=check, section=swap_section.section
)

__all__ = ["METHOD", "RandomSwapResult", "RandomSwapStep", "random_swap"]
