"""The release as an ordered table of steps, and the functions that run one step with resuming.

A release is :data:`STEPS`, in order: validate, pre-tabular, tabulate, protect, measure, attack, gate,
report, publish. Each :class:`Step` names its frozen result type, the earlier results it needs, the
paths it writes and how it computes; a :class:`FannedStep` also splits into items (one per cube, or
one per row-group partition) that may run at once on threads, processes or Dask workers, and a
``finish`` that joins them. Validation (Pandera) and gating (Great Expectations) come in as
:class:`Services`, so the core stays free of both.

:func:`run_step`, :func:`start_step`, :func:`run_item` and :func:`finish_step` are all a caller
(a Prefect task, a plain loop) needs; resuming is theirs alone, through the
:class:`~cubeguard.release.ledger.StepLedger`: a step that finished for the same run key, with its
outputs still there, returns its recorded result instead of running again.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from cubeguard.audit.record import sha256_file
from cubeguard.config.load import Release
from cubeguard.config.protection import require_protection
from cubeguard.errors import CubeguardError, InternalError, ReleaseBlocked
from cubeguard.pipeline.attack import attack_file, attack_step, read_attack
from cubeguard.pipeline.measure import measure_release, measures_file
from cubeguard.pipeline.pretabular import apply_pre_tabular
from cubeguard.pipeline.protection import ProtectionSummary, protect_cube, start_protected_store
from cubeguard.pipeline.tabulate_parts import parts_folder, plan_parts, sum_parts, tabulate_part
from cubeguard.pipeline.tabulation import CubeSummary, tabulate_release, write_tabulation
from cubeguard.publish.manifest import MANIFEST_NAME
from cubeguard.publish.stage import PublishResult, make_release_id, publish_release
from cubeguard.release.audit import audit_attempt
from cubeguard.release.ledger import StepLedger
from cubeguard.release.reporting import report_step
from cubeguard.release.results import (
    Attacked,
    Gated,
    KeyStored,
    Measured,
    PreTabulated,
    Protected,
    Published,
    Reported,
    StepResult,
    Tabulated,
    Validated,
)
from cubeguard.release.spec import RunSpec
from cubeguard.secrets import SecretResolver
from cubeguard.tables.keystore import KeyStore
from cubeguard.tables.write import serve_key_store, write_key_store

Progress = Callable[[str, int], None]
Earlier = Mapping[str, StepResult]


class Validator(Protocol):
    """Validates a release's microdata (raises on bad input, nothing written)."""

    def __call__(self, release: Release, progress: Progress | None = None) -> Validated:
        """Check every rule; raise (nothing written) if any fails."""
        ...


class Gatekeeper(Protocol):
    """Runs the release gates on the stores and the measures table."""

    def __call__(self, release: Release) -> Gated:
        """The gates' verdict on ``release``."""
        ...


@dataclass(frozen=True)
class Services:
    """What release steps take from outside the core: secrets, progress, validation and gates."""

    validate: Validator
    gate: Gatekeeper
    resolver: SecretResolver | None = None
    progress: Progress | None = None


@dataclass(frozen=True)
class Context:
    """What a step computes from: the run, its release, the services and the earlier results it needs."""

    spec: RunSpec
    release: Release
    services: Services
    earlier: Earlier = field(default_factory=dict)

    def result(self, step: str) -> Any:
        """The result of an earlier step this step declared in ``needs``."""
        try:
            return self.earlier[step]
        except KeyError:
            raise InternalError(f"a release step needs the result of {step!r} but was not given it") from None


@dataclass(frozen=True)
class Step:
    """One step of the release table."""

    name: str
    result: type[StepResult]
    compute: Callable[[Context], StepResult]
    outputs: Callable[[Release], list[Path]] = lambda release: []
    needs: tuple[str, ...] = ()
    resumable: bool = True

    def fans_out(self, spec: RunSpec) -> bool:
        """Whether this run splits the step into items (per cube or partition)."""
        return False


@dataclass(frozen=True, kw_only=True)
class FannedStep(Step):
    """A step that may split into independent items, run anywhere, then joined by ``finish``.

    ``compute`` (inherited) runs the step whole; ``when`` says whether a run splits it instead.
    """

    items: Callable[[Context], list[Any]]
    one: Callable[[Context, Any], Any]
    finish: Callable[[Context, list[Any]], StepResult]
    when: Callable[[RunSpec], bool] = lambda spec: True
    #: Progress stage advanced by one per finished item (None: the items report their own).
    stage: str | None = None

    def fans_out(self, spec: RunSpec) -> bool:
        """Whether this run splits the step into items."""
        return self.when(spec)


def _pre_tabular(ctx: Context) -> PreTabulated:
    summary = apply_pre_tabular(ctx.release, ctx.services.resolver, progress=ctx.services.progress)
    return PreTabulated.from_json(summary)


def _tabulate(ctx: Context) -> Tabulated:
    tab = tabulate_release(ctx.release, progress=ctx.services.progress, resolver=ctx.services.resolver)
    store = ctx.release.config.output.original_store
    return _populated(ctx, write_tabulation(ctx.release, tab, store, progress=ctx.services.progress))


def _populated(ctx: Context, cubes: list[CubeSummary]) -> Tabulated:
    """The tabulation, unless a cube's population has no records (its cube would be all zeros)."""
    empty = [c for c in cubes if c.total == 0]
    if empty:
        cube = ctx.release.cube(empty[0].cube_id)
        raise CubeguardError(
            f"population '{cube.population}' of cube '{cube.id}' has no records in the microdata; "
            f"check populations.{cube.population} (its unit and where) or the input"
        )
    return Tabulated(tuple(cubes))


def _tabulate_items(ctx: Context) -> list[Any]:
    return list(enumerate(plan_parts(ctx.release, ctx.spec.parts)))


def _tabulate_one(ctx: Context, item: tuple[int, tuple[list[int], int]]) -> str:
    k, part = item
    return tabulate_part(ctx.release, k, part, ctx.services.resolver)


def _tabulate_finish(ctx: Context, files: list[str]) -> Tabulated:
    store = ctx.release.config.output.original_store
    cubes = write_tabulation(ctx.release, sum_parts(ctx.release, files), store, progress=ctx.services.progress)
    shutil.rmtree(parts_folder(ctx.release), ignore_errors=True)
    return _populated(ctx, cubes)


def _key_store(ctx: Context) -> KeyStored:
    folder = write_key_store(ctx.release, ctx.services.resolver, ctx.services.progress)
    return KeyStored() if folder is None else KeyStored(str(folder), KeyStore.open(folder).records)


def _protect_items(ctx: Context) -> list[Any]:
    out = ctx.release.config.output
    return list(start_protected_store(out.original_store, out.protected_store))


def _protect_one(ctx: Context, cube_id: str) -> ProtectionSummary:
    out = ctx.release.config.output
    resolver, plan = ctx.services.resolver, ctx.spec.release_plan()
    return protect_cube(
        ctx.release,
        cube_id,
        out.original_store,
        out.protected_store,
        resolver,
        lambda k: plan.step_function(k, resolver),
    )


def _protect_finish(ctx: Context, summaries: list[ProtectionSummary]) -> Protected:
    return Protected(tuple(sorted(summaries, key=lambda s: s.cube_id)))


def _publish(ctx: Context) -> Published:
    """Publish only what passed every gate, its audit record committed before it becomes visible.

    A blocked release raises here and writes nothing.
    """
    gated: Gated = ctx.result("gate")
    if not gated.passed:
        statuses = [row.get("status") for row in gated.rows]
        blocking = sum(s in ("fail", "error") for s in statuses)
        raise ReleaseBlocked(list(gated.failures), blocking=blocking, warnings=statuses.count("warn"))
    release = ctx.release
    require_protection(release)
    rid = ctx.spec.release_id or make_release_id(release.config.name, datetime.now(UTC))
    out = release.config.output
    committed: list[Published] = []

    def commit(staged: PublishResult, staging: Path) -> None:
        checksums = {**staged.checksums, MANIFEST_NAME: sha256_file(staging / MANIFEST_NAME)}
        published = Published(release_id=rid, path=str(staged.path), checksums=checksums)
        stored = audit_attempt(ctx.spec, {"gate": gated, "publish": published}, outcome="published", error=None,
                               resolver=ctx.services.resolver)  # fmt: skip
        committed.append(replace(published, audit={"seq": stored.seq, "hash": stored.hash}))

    publish_release(release, rid, out.protected_store, out.exports, progress=ctx.services.progress, commit=commit)
    serve_key_store(release, rid)
    _archive_report(ctx, rid)
    return committed[0]


def _archive_report(ctx: Context, release_id: str) -> None:
    """Keep this release's report as ``report/<release-id>.html`` (``report.html`` is the latest run's)."""
    reported = ctx.earlier.get("report")
    if isinstance(reported, Reported) and Path(reported.path).is_file():
        page = Path(reported.path)
        shutil.copy2(page, page.with_name(f"{release_id}.html"))


def _attack(ctx: Context) -> Attacked:
    """Attack the protected cubes as an intruder would, when the release sets an attack gate."""
    if ctx.release.config.gates.max_recovered_by_attack is None:
        return Attacked()
    path = attack_step(ctx.release, ctx.services.resolver, ctx.services.progress, current=ctx.spec.release_id)
    report = read_attack(ctx.release)
    if report is None:
        raise InternalError("the attack step wrote no findings; this is a bug in cubeguard")
    total = sum(report.recovered(c) for c in {f.cube for f in report.published})
    return Attacked(str(path), total, tuple(report.broken))


def _outputs(*paths: Callable[[Release], Path]) -> Callable[[Release], list[Path]]:
    return lambda release: [p(release) for p in paths]


#: The release, in order. The ledger resumes the resumable steps; report and publish always run.
STEPS: tuple[Step, ...] = (
    Step("validate", Validated, lambda ctx: ctx.services.validate(ctx.release, ctx.services.progress)),
    Step(
        "pre_tabular",
        PreTabulated,
        _pre_tabular,
        outputs=lambda r: [r.config.output.swapped_microdata] if r.config.pre_tabular else [],
    ),
    FannedStep(
        "tabulate",
        Tabulated,
        _tabulate,
        outputs=_outputs(lambda r: r.config.output.original_store),
        items=_tabulate_items,
        one=_tabulate_one,
        finish=_tabulate_finish,
        when=lambda spec: spec.parts > 1,
    ),
    Step(
        "key_store",
        KeyStored,
        _key_store,
        outputs=lambda r: [r.config.output.key_store] if r.config.tables is not None else [],
    ),
    FannedStep(
        "protect",
        Protected,
        lambda ctx: _protect_finish(ctx, [_protect_one(ctx, c) for c in _protect_items(ctx)]),
        outputs=_outputs(lambda r: r.config.output.protected_store),
        items=_protect_items,
        one=_protect_one,
        finish=_protect_finish,
        stage="protect",
    ),
    Step("measure", Measured, lambda ctx: Measured(str(measure_release(ctx.release))), outputs=_outputs(measures_file)),
    Step(
        "attack",
        Attacked,
        _attack,
        outputs=lambda r: [attack_file(r)] if r.config.gates.max_recovered_by_attack is not None else [],
    ),
    Step(
        "gate",
        Gated,
        lambda ctx: ctx.services.gate(ctx.release),
        outputs=_outputs(lambda r: r.config.output.internal / "gates.json"),
    ),
    Step("report", Reported, report_step, needs=("gate",), resumable=False),
    Step("publish", Published, _publish, needs=("gate", "report"), resumable=False),
)
BY_NAME: dict[str, Step] = {s.name: s for s in STEPS}


def step_named(name: str) -> Step:
    """The step of the table called ``name``."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise InternalError(f"no release step named {name!r}; this is a bug in cubeguard") from None


def ledger_of(release: Release) -> StepLedger:
    """The finished-step records of the release's output folder."""
    order = tuple(s.name for s in STEPS if s.resumable)
    return StepLedger(release.config.output.internal / "steps", order)


def _context(spec: RunSpec, services: Services, earlier: Earlier | None = None) -> Context:
    return Context(spec, spec.release(), services, earlier or {})


def _resumed(step: Step, ctx: Context) -> StepResult | None:
    if not step.resumable:
        return None
    done = ledger_of(ctx.release).resume(step.name, ctx.spec.key, ctx.spec.fresh)
    return None if done is None else step.result.from_json(done)


def _record(step: Step, ctx: Context, result: StepResult) -> StepResult:
    if step.resumable:
        ledger_of(ctx.release).record(step.name, ctx.spec.key, result.to_json(), step.outputs(ctx.release))
    return result


def run_step(spec: RunSpec, name: str, services: Services, earlier: Earlier | None = None) -> StepResult:
    """Run step ``name`` whole, or return its result from an earlier attempt of this run."""
    step, ctx = step_named(name), _context(spec, services, earlier)
    done = _resumed(step, ctx)
    return done if done is not None else _record(step, ctx, step.compute(ctx))


@dataclass(frozen=True)
class Started:
    """A fanned-out step's start: its result from an earlier attempt, or the items to run."""

    resumed: StepResult | None = None
    items: tuple[Any, ...] = ()


def start_step(spec: RunSpec, name: str, services: Services, earlier: Earlier | None = None) -> Started:
    """Begin fanned-out step ``name``: its recorded result if it finished before, else its items."""
    step, ctx = _fanned(name), _context(spec, services, earlier)
    done = _resumed(step, ctx)
    return Started(resumed=done) if done is not None else Started(items=tuple(step.items(ctx)))


def run_item(spec: RunSpec, name: str, item: Any, services: Services) -> Any:
    """One item of fanned-out step ``name`` (the same wherever it runs)."""
    return _fanned(name).one(_context(spec, services), item)


def finish_step(
    spec: RunSpec, name: str, pieces: Sequence[Any], services: Services, earlier: Earlier | None = None
) -> StepResult:
    """Join the items of fanned-out step ``name`` into its result and record that it finished."""
    step, ctx = _fanned(name), _context(spec, services, earlier)
    return _record(step, ctx, step.finish(ctx, list(pieces)))


def _fanned(name: str) -> FannedStep:
    step = step_named(name)
    if not isinstance(step, FannedStep):
        raise InternalError(f"release step {name!r} does not fan out; this is a bug in cubeguard")
    return step
