"""The swap methods' parameter objects, built from the ``pre_tabular`` steps of a release config.

One function serves both times a step is checked: when the config is loaded (secret references
replaced by :func:`placeholders`, so every check that needs no data runs before any data is read)
and when the step runs (secrets resolved). Errors of the parameter models are reported at the
step's key path; no value is echoed, so a secret never reaches a message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from cubeguard.config.models import (
    InputSpec,
    OnsCommunalSwapStep,
    OnsHouseholdSwapStep,
    RandomSwapStep,
    TargetedSwapStep,
)
from cubeguard.config.secrets import SecretInt, SecretNumber
from cubeguard.errors import CubeguardError
from cubeguard.swap.params import OnsHouseholdSwapParams, RandomSwapParams, TargetedSwapParams
from cubeguard.swap.params_communal import MatchingProfiles, OnsCommunalSwapParams

SwapStep = TargetedSwapStep | RandomSwapStep | OnsHouseholdSwapStep | OnsCommunalSwapStep
SwapParams = TargetedSwapParams | RandomSwapParams | OnsHouseholdSwapParams | OnsCommunalSwapParams
#: A secret's number from its key in the step (e.g. ``"swap_rate"``) and its configured value.
Numbers = Callable[[str, SecretNumber | SecretInt], float]

#: Parameter names that differ from the step's key naming the same thing.
_STEP_KEY = {"unit_id": "household_id"}


def cap_column(column: str) -> str:
    """Name of the capped copy of a similarity column of targeted swapping (``caps``)."""
    return f"{column}__cap"


def swap_params(step: SwapStep, inp: InputSpec, number: Numbers) -> SwapParams:
    """The parameter object of ``step``'s method; ``number`` gives the value of each secret.

    Raises:
        pydantic.ValidationError: a parameter breaks the method's rules (see :func:`problems`).
        CubeguardError: the step needs a household id and neither it nor ``input`` names one.
    """
    if isinstance(step, TargetedSwapStep):
        similar = tuple(tuple(cap_column(c) if c in step.caps else c for c in p) for p in step.similar)
        return TargetedSwapParams(
            household_id=household_id(step, inp),
            hierarchy=tuple(step.hierarchy),
            similar=similar,
            risk_variables=tuple(step.risk_variables),
            carry_along=tuple(step.carry_along),
            swap_rate=number("swap_rate", step.swap_rate),
            k_anonymity=number("k_anonymity", step.k_anonymity),  # type: ignore[arg-type]  # pydantic checks it is whole
        )
    if isinstance(step, RandomSwapStep):
        return RandomSwapParams(
            swap_columns=tuple(step.swap_columns),
            strata=tuple(step.strata),
            unit_id=household_id(step, inp) if step.unit == "households" else None,
            carry_along=tuple(step.carry_along),
            swap_rate=number("swap_rate", step.swap_rate),
        )
    if isinstance(step, OnsHouseholdSwapStep):
        return OnsHouseholdSwapParams(
            household_id=household_id(step, inp),
            hierarchy=tuple(step.hierarchy),
            household_size=step.household_size,
            matching=tuple(tuple(p) for p in step.matching),
            risk_variables=tuple(step.risk_variables),
            risk_thresholds=tuple(number(f"risk_thresholds[{i}]", t) for i, t in enumerate(step.risk_thresholds)),
            carry_along=tuple(step.carry_along),
            swap_rate=number("swap_rate", step.swap_rate),
            high_risk_weight=step.high_risk_weight,
            max_area_share=step.max_area_share,
            delivery_group=step.delivery_group,
            imputed=step.imputed,
        )
    return _communal(step, inp, number)


def _communal(step: OnsCommunalSwapStep, inp: InputSpec, number: Numbers) -> OnsCommunalSwapParams:
    m = step.matching
    fields: dict[str, Any] = step.model_dump(
        exclude={"method", "name", "seed", "report_cubes", "matching", "person_id", "establishment_id"}
    )
    fields.update({k: number(k, getattr(step, k)) for k in ("rate_a", "rate_b", "rate_c", "family_rate")})
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    return OnsCommunalSwapParams(
        **fields,
        person_id=step.person_id or inp.person_id,
        establishment_id=household_id(step, inp),
        matching=MatchingProfiles(
            client_adult=tuple(tuple(p) for p in m.client_adult),
            client_child=tuple(tuple(p) for p in m.client_child),
            staff=tuple(tuple(p) for p in m.staff),
        ),
    )


def household_id(step: SwapStep, inp: InputSpec) -> str:
    """The step's household (establishment) id column, or the input's."""
    own = step.establishment_id if isinstance(step, OnsCommunalSwapStep) else step.household_id
    hid = own or inp.household_id
    if hid is None:
        key = "establishment_id" if isinstance(step, OnsCommunalSwapStep) else "household_id"
        raise CubeguardError(f"this swap needs a household id; set input.household_id or the step's {key}")
    return hid


def placeholders(step: SwapStep) -> Numbers:
    """Inline secrets as written; references replaced by values that pass every check.

    Referenced communal rates keep the order ``rate_a <= rate_b <= rate_c`` with the inline ones.
    """

    def number(key: str, value: SecretNumber | SecretInt) -> float:
        if isinstance(value, int | float):
            return value
        if isinstance(step, OnsCommunalSwapStep) and key == "rate_b":
            return step.rate_a if isinstance(step.rate_a, int | float) else 0.0
        return 1.0 if key == "rate_c" else 0.0

    return number


def problems(step: SwapStep, err: ValidationError) -> list[tuple[tuple[str | int, ...], str]]:
    """Each error of a parameter model as (key path inside the step, message), values left out."""
    out = []
    for e in err.errors():
        loc = tuple(e["loc"])
        if loc:
            head = _STEP_KEY.get(str(loc[0]), str(loc[0]))
            loc = (head, *loc[1:]) if head in type(step).model_fields else ()
        out.append((loc, str(e["msg"]).removeprefix("Value error, ")))
    return out
