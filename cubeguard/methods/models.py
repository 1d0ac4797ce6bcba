"""The bases of every method's config model: immutable, unknown keys refused, secrets never shown.

A method's model subclasses :class:`CubeStep` (post-tabular) or :class:`MicrodataStep`
(pre-tabular); a parameter that may be given by reference (``{env: ...}`` or a Prefect secret
block) is secret, and :func:`secret_fields` finds it from the annotation alone.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from cubeguard.methods.fields import ReportCubes, Seed
from cubeguard.secrets import EnvSecret, PrefectSecret

if TYPE_CHECKING:
    from cubeguard.methods.context import TableSet


def _is_secret(annotation: Any) -> bool:
    if annotation in (EnvSecret, PrefectSecret):
        return True
    return any(_is_secret(a) for a in typing.get_args(annotation))


def secret_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``model`` that hold secrets: every field that may be given by reference."""
    return tuple(name for name, info in model.model_fields.items() if _is_secret(info.annotation))


class StepModel(BaseModel):
    """Base of every method's config model: immutable, unknown keys rejected, inputs never echoed."""

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    method: str
    name: str

    def __repr_args__(self) -> Any:
        """The fields ``repr`` and ``str`` show: every field but the secrets."""
        hidden = set(secret_fields(type(self)))
        return [(k, v) for k, v in super().__repr_args__() if k not in hidden]


class CubeStep(StepModel):
    """A post-tabular step: it protects cubes (all, or the ones listed in ``cubes``)."""

    cubes: list[str] | None = None
    #: whether the step may change a count (the identity step does not, so it undoes nothing before it)
    changes_counts: ClassVar[bool] = True


class MicrodataStep(StepModel):
    """A pre-tabular step: it changes the microdata once; every cube is tabulated from the result."""

    report_cubes: ReportCubes
    seed: Seed

    def with_ids(self, household_id: str | None, person_id: str | None) -> MicrodataStep:
        """This step with id columns it leaves unset taken from the release's input."""
        return self

    def with_tables(self, tables: TableSet) -> MicrodataStep:
        """This step told the release's tables (a method that controls them keeps them; others ignore them)."""
        return self


def method_name(model: type[StepModel]) -> str:
    """The literal of a config model's ``method`` field."""
    return str(typing.get_args(model.model_fields["method"].annotation)[0])
