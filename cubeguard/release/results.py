"""The frozen result of each release step: small, public (no secret in any), JSON round-trippable.

The step ledger stores a finished step's result as JSON (:meth:`StepResult.to_json`) and a resumed
run gets it back as the same object (:meth:`StepResult.from_json`), so a step's result has one type
whether it was computed now or in an earlier attempt.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from cubeguard.pipeline.protection import ProtectionSummary
from cubeguard.pipeline.tabulation import CubeSummary

R = TypeVar("R", bound="StepResult")


@dataclass(frozen=True)
class StepResult:
    """Base of the step results: plain fields, lists kept as tuples."""

    #: Fields holding tuples of these dataclasses (rebuilt from dicts when read back).
    nested: ClassVar[dict[str, type]] = {}

    def to_json(self) -> dict[str, Any]:
        """Plain data for the ledger and the flow's summary."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls: type[R], data: dict[str, Any]) -> R:
        """The result recorded as ``data`` by :meth:`to_json`."""
        fields = {}
        for name, value in data.items():
            kind = cls.nested.get(name)
            if kind is not None:
                value = tuple(kind(**item) for item in value)
            elif isinstance(value, list):
                value = tuple(value)
            fields[name] = value
        return cls(**fields)


@dataclass(frozen=True)
class Prepared(StepResult):
    """The run's input: where the microdata are, whether they were generated, how many records."""

    path: str
    generated: bool
    records: int | None
    synth: str | None = None


@dataclass(frozen=True)
class Validated(StepResult):
    """The microdata passed every validation rule."""

    records: int


@dataclass(frozen=True)
class PreTabulated(StepResult):
    """The pre-tabular steps that ran and what each swapped (counts only)."""

    steps: tuple[str, ...] = ()
    households_swapped: tuple[int, ...] = ()
    persons_swapped: tuple[int, ...] = ()


@dataclass(frozen=True)
class Tabulated(StepResult):
    """Every hypercube tabulated into the original (internal) store."""

    nested: ClassVar[dict[str, type]] = {"cubes": CubeSummary}
    cubes: tuple[CubeSummary, ...]


@dataclass(frozen=True)
class KeyStored(StepResult):
    """The key store flexible tables are served from (internal; None without ``tables``)."""

    path: str | None = None
    records: int = 0


@dataclass(frozen=True)
class Protected(StepResult):
    """Every cube protected into the protected store, in cube id order."""

    nested: ClassVar[dict[str, type]] = {"cubes": ProtectionSummary}
    cubes: tuple[ProtectionSummary, ...]


@dataclass(frozen=True)
class Measured(StepResult):
    """The internal table of information loss and disclosure risk measures."""

    measures: str


@dataclass(frozen=True)
class Attacked(StepResult):
    """The attacks on the published cubes (internal findings; None when no attack gate is set).

    Attributes:
        path: the internal findings file.
        recovered: small cells recovered with certainty, over every cube (most successful attack per cube).
        broken: attacks whose self-test on the unprotected counts missed a small cell.
    """

    path: str | None = None
    recovered: int = 0
    broken: tuple[str, ...] = ()


@dataclass(frozen=True)
class Gated(StepResult):
    """The gates' verdict: one row per cube and check, and the failures that block or warn."""

    passed: bool
    failures: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    docs: str | None = None


@dataclass(frozen=True)
class Reported(StepResult):
    """The internal HTML report."""

    path: str


@dataclass(frozen=True)
class Published(StepResult):
    """The published release: its id, folder and the checksum of every file in it."""

    release_id: str
    path: str
    checksums: dict[str, str]
    #: The committed audit record of the publication: its seq and hash (no secret).
    audit: dict[str, Any] = dataclasses.field(default_factory=dict)
