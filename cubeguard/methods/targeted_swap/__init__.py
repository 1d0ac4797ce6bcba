"""Targeted record swapping (Handbook on SDC v2, 5.6.1; sdcMicro recordSwap, reproduced exactly)."""

from cubeguard.methods import swap_section
from cubeguard.methods.base import MicrodataMethod
from cubeguard.methods.targeted_swap.kernel import SwapResult, targeted_swap
from cubeguard.methods.targeted_swap.method import apply, check, columns, public
from cubeguard.methods.targeted_swap.model import TargetedSwapStep

METHOD = MicrodataMethod(
    model=TargetedSwapStep, public=public, columns=columns, apply=apply, check=check, section=swap_section.section
)

__all__ = ["METHOD", "SwapResult", "TargetedSwapStep", "targeted_swap"]
