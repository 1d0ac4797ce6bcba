"""Secrets of a step: which fields may hold one, and the step with them resolved to values."""

from __future__ import annotations

from typing import TypeVar

from cubeguard.methods.context import Numbers
from cubeguard.methods.models import StepModel, secret_fields

T = TypeVar("T", bound=StepModel)


def resolve(step: T, number: Numbers) -> T:
    """``step`` with each secret replaced by ``number``'s value, validated again as its model.

    Raises:
        pydantic.ValidationError: a resolved value breaks the model's rules (see :func:`problems`);
            the model never echoes an input, so the error holds no secret.
    """
    data = step.model_dump(exclude_unset=False)
    for name in secret_fields(type(step)):
        value = getattr(step, name)
        if isinstance(value, list | tuple):
            data[name] = [number(f"{name}[{i}]", v) for i, v in enumerate(value)]
        elif value is not None:
            data[name] = number(name, value)
    return type(step).model_validate(data)
