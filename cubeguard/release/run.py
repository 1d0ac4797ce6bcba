"""Walking the release table: prepare the run, run each step in order, summarise, audit.

:func:`walk` is the one place that orders a release. It asks a :class:`Runner` to run each step
(whole, or fanned out into items); :class:`PlainRunner` runs them in this process, and the Prefect
flow passes a runner whose primitives are tasks. Either way each result lands in ``results`` as soon
as its step finishes, so whoever records the attempt sees how far a failed run got.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from cubeguard.pipeline.inputs import ensure_microdata
from cubeguard.publish.stage import make_release_id
from cubeguard.release.audit import Results
from cubeguard.release.results import Gated, Prepared, StepResult
from cubeguard.release.spec import RunSpec, release_key
from cubeguard.release.steps import (
    STEPS,
    Earlier,
    FannedStep,
    Progress,
    Services,
    Started,
    Step,
    finish_step,
    run_item,
    run_step,
    start_step,
)
from cubeguard.release.timings import TIMINGS_FILE, StepClock


def prepare(spec: RunSpec, services: Services) -> tuple[RunSpec, Prepared]:
    """Generate the synthetic census if asked and absent; the run spec with its key and release id, and the input.

    The release id, unless the caller gave one, is ``<name>-<UTC time>`` of now: chosen before the
    steps run, so that the report shows the id the release is published under.
    """
    release = spec.release()
    source = ensure_microdata(release, progress=services.progress)
    rid = spec.release_id or make_release_id(release.config.name, datetime.now(UTC))  # named now: the report shows it
    return replace(spec, key=release_key(release, services.resolver), release_id=rid), Prepared(**source)


class Runner(Protocol):
    """How a caller runs the steps: in this process, or as tasks of an orchestrator."""

    def whole(self, step: Step, spec: RunSpec, earlier: Earlier) -> StepResult:
        """Run ``step`` as one unit."""
        ...

    def start(self, step: FannedStep, spec: RunSpec, earlier: Earlier) -> Started:
        """Begin a fanned-out step: its earlier result, or its items."""
        ...

    def map(self, step: FannedStep, spec: RunSpec, items: Sequence[Any]) -> Iterable[Any]:
        """Run every item (possibly at once, anywhere); the pieces in item order."""
        ...

    def finish(self, step: FannedStep, spec: RunSpec, pieces: list[Any], earlier: Earlier) -> StepResult:
        """Join the pieces into the step's result."""
        ...


@dataclass(frozen=True)
class PlainRunner:
    """Runs every step in this process, one item after another."""

    services: Services

    def whole(self, step: Step, spec: RunSpec, earlier: Earlier) -> StepResult:
        """Run ``step`` as one unit."""
        return run_step(spec, step.name, self.services, earlier)

    def start(self, step: FannedStep, spec: RunSpec, earlier: Earlier) -> Started:
        """Begin a fanned-out step."""
        return start_step(spec, step.name, self.services, earlier)

    def map(self, step: FannedStep, spec: RunSpec, items: Sequence[Any]) -> Iterable[Any]:
        """Run the items one after another."""
        return (run_item(spec, step.name, item, self.services) for item in items)

    def finish(self, step: FannedStep, spec: RunSpec, pieces: list[Any], earlier: Earlier) -> StepResult:
        """Join the pieces."""
        return finish_step(spec, step.name, pieces, self.services, earlier)


def walk(
    spec: RunSpec, runner: Runner, results: Results, progress: Progress | None = None, log: Log | None = None
) -> Results:
    """Run the release table in order into ``results``; a blocked gate raises at publish.

    Each step's wall and CPU time go to ``internal/timings.json`` as it ends; ``log`` gets a line
    as each step starts and ends (step names, seconds and the gates' verdict: nothing secret).

    Raises:
        ReleaseBlocked: a gate failed (after the report was written); nothing is published.
    """
    clock = StepClock(spec.release().config.output.internal / TIMINGS_FILE)
    say = log or _silent
    for step in STEPS:
        earlier = {name: results[name] for name in step.needs}
        say(f"{step.name}: started", {"step": step.name, "event": "started"})
        with clock.step(step.name):
            if isinstance(step, FannedStep) and step.fans_out(spec):
                results[step.name] = _fan_out(step, spec, runner, earlier, progress)
            else:
                results[step.name] = runner.whole(step, spec, earlier)
        seconds, (verdict, said) = clock.rows[-1]["seconds"], _verdict(step.name, results)
        fields = {"step": step.name, "event": "done", "seconds": seconds} | ({"verdict": verdict} if verdict else {})
        say(f"{step.name}: done in {seconds} s{said}", fields)
    return results


#: Where the walk says what it is doing, one line at a time, with the line's fields (step, event,
#: seconds, verdict) for structured logs (the flow's: Prefect's run log).
Log = Callable[[str, dict[str, Any]], None]


def _silent(_line: str, _fields: dict[str, Any]) -> None:
    return None


def _verdict(name: str, results: Results) -> tuple[str, str]:
    """After the gate step, its verdict (``passed`` or ``blocked``) and in words; else two empty strings.

    The gate step raises only at publish, when blocked.
    """
    gate = results[name] if name == "gate" else None
    if not isinstance(gate, Gated):
        return "", ""
    if gate.passed:
        return "passed", f"; gates passed ({len(gate.failures)} warning(s))"
    return "blocked", f"; gates block the release: {'; '.join(gate.failures) or 'see the report'}"


def _fan_out(
    step: FannedStep, spec: RunSpec, runner: Runner, earlier: Earlier, progress: Progress | None
) -> StepResult:
    started = runner.start(step, spec, earlier)
    if started.resumed is not None:
        return started.resumed
    pieces = []
    for piece in runner.map(step, spec, started.items):
        pieces.append(piece)
        if step.stage and progress:
            progress(step.stage, 1)
    return runner.finish(step, spec, pieces, earlier)


def summary(spec: RunSpec, results: Results) -> dict[str, Any]:
    """The run's public summary (for the CLI, the Prefect artifact and the flow's return value)."""
    data = {name: result.to_json() for name, result in results.items()}
    gate = data["gate"]
    out = spec.release().config.output
    return {
        "release_id": data["publish"]["release_id"],
        "published": data["publish"]["path"],
        "measures": data["measure"],
        "gates": {k: v for k, v in gate.items() if k != "rows"},
        "gate_rows": gate["rows"],
        "report": data["report"]["path"],
        "input": data["prepare"],
        "validation": data["validate"],
        "cubes": data["tabulate"]["cubes"],
        "pre_tabular": data["pre_tabular"],
        "protection": data["protect"]["cubes"],
        "audit": data["publish"]["audit"],
        "stores": {"original": str(out.original_store), "protected": str(out.protected_store)},
        "steps": _timings(out.internal / TIMINGS_FILE),
    }


def _timings(path: Path) -> list[dict[str, Any]]:
    """Each step's wall and CPU seconds of this run (``internal/timings.json``), for the run's artifact."""
    if not path.is_file():
        return []
    rows = json.loads(path.read_text())
    return [{"step": r["step"], "seconds": r["seconds"], "cpu_seconds": r["cpu_seconds"]} for r in rows]
