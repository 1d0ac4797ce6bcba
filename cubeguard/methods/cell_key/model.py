"""The config model of the cell key method."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from cubeguard.ckm.magnitude import MagnitudeParams
from cubeguard.ckm.ptable import PTableParams
from cubeguard.methods.models import CubeStep
from cubeguard.secrets import EnvSecret, PrefectSecret

_PT = PTableParams.model_fields

MaxNoise = Annotated[int, Field(ge=0)] | EnvSecret | PrefectSecret
Variance = Annotated[float, Field(gt=0.0, allow_inf_nan=False)] | EnvSecret | PrefectSecret
Stay = Annotated[float, Field(gt=0.0, lt=1.0)] | EnvSecret | PrefectSecret


class MagnitudeSpec(MagnitudeParams):
    """The cell key method for a numeric column's sums (R cellKey's ``ck_params_nums``; Gießing 2016).

    Its numeric p-table (R ptable's ``create_num_ptable`` CSV) is secret like the counts' p-table.
    Published sums are rounded to multiples of ``unit``: an exact perturbed sum of whole numbers
    can be divided by the few multipliers the p-table allows, which gives a lone contributor's
    value back; rounded, several values fit. ``mu_c`` must stay 0: no cell of a release is marked
    sensitive, so it would change nothing.
    """

    ptable_file: Path = Field(description="The numeric p-table (R ptable's CSV: i, j, p, v, p_int_lb, p_int_ub, type).")
    unit: float = Field(default=1.0, gt=0.0, allow_inf_nan=False, description="Published sums are multiples of this.")


class CellKeyStep(CubeStep):
    """Cell key method (Thompson, Broadfoot and Elazar 2013; Handbook on SDC v2, 5.4) with a maximum-entropy p-table.

    The p-table comes from its parameters (D, V, js, pstay, optim, mono as R ptable's
    ``create_cnt_ptable``), which may be secret references, or from a p-table file (ptable CSV or
    tau-ARGUS ``i;j;p;v;p_int_ub``). A cube is perturbed by one cell key step unless a later step
    opts in with ``allow_stacking``.
    """

    method: Literal["cell_key"]
    name: str = "cell_key"
    D: MaxNoise | None = Field(default=None, description="Maximum absolute noise (secret).")
    V: Variance | None = Field(default=None, description="Noise variance (secret).")
    js: int = Field(default=_PT["js"].default, ge=0, description="Counts 1..js are never published.")
    pstay: Stay | None = Field(default=None, description="Lower bound of P(count unchanged) (secret).")
    optim: Literal[1, 4] = _PT["optim"].default
    mono: bool = _PT["mono"].default
    ptable_file: Path | None = Field(default=None, description="A p-table file instead of D and V.")
    magnitudes: dict[str, MagnitudeSpec] = Field(
        default_factory=dict,
        description="Numeric columns whose sums are perturbed with the cell key method for magnitudes, so "
        "flexible tables publish their means as perturbed sum / perturbed count (Handbook on SDC v2, 5.7).",
    )
    allow_stacking: bool = Field(
        default=False,
        description="Perturb cubes that an earlier cell key step already perturbed (the noise adds up and "
        "the p-table's guarantees no longer hold); without it, stacking is a config error.",
    )

    @model_validator(mode="after")
    def _params_or_file(self) -> CellKeyStep:
        if self.ptable_file is None and (self.D is None or self.V is None):
            raise ValueError("give the p-table parameters D and V, or a ptable_file")
        if self.ptable_file is not None and (self.D is not None or self.V is not None):
            raise ValueError("give either D and V or a ptable_file, not both")
        return self

    def ptable_params(self) -> PTableParams | None:
        """The p-table parameters once every secret is a number; None with a file or an open reference."""
        d, v, pstay = self.D, self.V, self.pstay
        if self.ptable_file is not None or not isinstance(d, int) or not isinstance(v, int | float):
            return None
        if isinstance(pstay, EnvSecret | PrefectSecret):
            return None
        return PTableParams(D=d, V=float(v), js=self.js, pstay=pstay, optim=self.optim, mono=self.mono)
