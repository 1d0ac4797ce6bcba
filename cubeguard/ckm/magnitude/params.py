"""Parameters of the cell key method for magnitudes, as R cellKey 1.0.2's ``ck_params_nums``.

Gießing (2016), "Computational issues in the design of transition probabilities and disclosure
risk estimation for additive noise", PSD 2016, LNCS 9867; Handbook on SDC v2, 5.4 and 5.7. The
noise of a cell is the sum of ``top_k`` components, each scaled by a magnitude ``x_j`` (the j-th
largest contribution, the cell mean, sum or range) times a percentage: the flex function of
:class:`FlexParams` or the fixed one of :class:`SimpleParams`.

The values are checked as cellKey's ``ck_flexparams``, ``ck_simpleparams`` and ``ck_params_nums``
check them; every check names the argument and what to change.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cubeguard.ckm.magnitude._rnum import r_sum

MagnitudeType = Literal["top_contr", "mean", "sum", "range"]
TopK = Literal["correct", "cellkey_1_0_2"]


def _checked_epsilon(epsilon: tuple[float, ...]) -> tuple[float, ...]:
    if not epsilon:
        raise ValueError("epsilon needs at least one value; its first value must be 1")
    if any(e < 0.0 or e > 1.0 for e in epsilon):
        raise ValueError("epsilon values must lie in [0, 1]")
    if epsilon[0] != 1.0:
        raise ValueError("the first value of epsilon must equal 1")
    if any(b > a for a, b in pairwise(epsilon)):
        raise ValueError("epsilon must be in descending order")
    return epsilon


class FlexParams(BaseModel):
    """The flex function of cellKey's ``ck_flexparams`` (Handbook on SDC v2, 5.4).

    Magnitudes ``x >= fp`` get the percentage ``m(x) = p_large * (1 + f1 * f2)`` with
    ``f1 = (p_small * x - p_large * fp) / (p_large * fp)`` and ``f2 = (2 fp / (fp + x))^q``, which
    falls from ``p_small`` at ``fp`` towards ``p_large``; smaller magnitudes get ``p_small``.

    Attributes:
        fp: the flex point, > 0.
        p_small: percentage for small magnitudes (cellKey's ``p[1]``), in [0, 1].
        p_large: percentage for large magnitudes (``p[2]``), in [0, p_small].
        epsilon: damping of the components j = 1..top_k, descending, first 1.
        q: exponent of the flex function, >= 1.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mult: Literal["flex"] = "flex"
    fp: Annotated[float, Field(gt=0.0, allow_inf_nan=False)]
    p_small: Annotated[float, Field(ge=0.0, le=1.0)]
    p_large: Annotated[float, Field(ge=0.0, le=1.0)]
    epsilon: tuple[float, ...] = (1.0,)
    q: Annotated[float, Field(ge=1.0, allow_inf_nan=False)] = 3.0

    _epsilon = field_validator("epsilon")(_checked_epsilon)

    @model_validator(mode="after")
    def _descending(self) -> FlexParams:
        if self.p_large > self.p_small:
            raise ValueError("p_small must be >= p_large (cellKey: p in descending order)")
        return self

    @property
    def scale(self) -> float:
        """The percentage that scales the separation point and rescaling (``p_small``)."""
        return self.p_small


class SimpleParams(BaseModel):
    """A fixed percentage, cellKey's ``ck_simpleparams``.

    Attributes:
        p: percentage of every magnitude, in (0, 1].
        epsilon: damping of the components j = 1..top_k, descending, first 1.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mult: Literal["simple"] = "simple"
    p: Annotated[float, Field(gt=0.0, le=1.0)]
    epsilon: tuple[float, ...] = (1.0,)

    _epsilon = field_validator("epsilon")(_checked_epsilon)

    @property
    def scale(self) -> float:
        """The percentage that scales the separation point and rescaling (``p``)."""
        return self.p


class MagnitudeParams(BaseModel):
    """Parameters of one magnitude perturbation, mirroring cellKey's ``ck_params_nums``.

    The p-tables are kept apart (:class:`~cubeguard.ckm.magnitude.ptable.NumPTables`); the
    separation point is derived from both (:func:`~cubeguard.ckm.magnitude.ptable.separation`).

    Attributes:
        type: the magnitude per component: ``top_contr`` (the top_k largest contributions by
            absolute value), ``mean``, ``sum`` or ``range`` (max - min) of the cell.
        top_k: number of components; must be 1 unless ``type`` is ``top_contr`` (1..6).
        mult: the percentage function, :class:`FlexParams` or :class:`SimpleParams`.
        mu_c: extra protection added to ``|v|`` of sensitive cells (>= 0). As cellKey 1.0.2, it
            is added to every component, not only the first (golden README, Q4).
        same_key: use the cell key itself for the first component (else a scrambled one).
        use_zero_rkeys: cell keys from all records; False (the default): only from the records
            with a non-zero value.
        topk: ``correct`` (the default) stores ``min(6, records)`` contributions per cell;
            ``cellkey_1_0_2`` reproduces cellKey's running-minimum bug (Q1) and needs the cells in
            cellKey's order.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: MagnitudeType = "top_contr"
    top_k: Annotated[int, Field(ge=1, le=6, strict=True)] = 1
    mult: Annotated[FlexParams | SimpleParams, Field(discriminator="mult")]
    mu_c: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] = 0.0
    same_key: bool = False
    use_zero_rkeys: bool = False
    topk: TopK = "correct"

    @model_validator(mode="after")
    def _consistent(self) -> MagnitudeParams:
        if self.type != "top_contr" and self.top_k != 1:
            raise ValueError(f"top_k must be 1 for type {self.type!r}; only 'top_contr' uses several components")
        if len(self.mult.epsilon) != self.top_k:
            raise ValueError(
                f"epsilon has {len(self.mult.epsilon)} values but top_k is {self.top_k}; give one per component"
            )
        return self

    @property
    def epsilon_sq_sum(self) -> float:
        """``E``: the sum of the squared epsilons (R ``sum``, accumulated in long double)."""
        return r_sum([e * e for e in self.mult.epsilon])
