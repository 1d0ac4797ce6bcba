"""The release flow: the core's release table walked with Prefect tasks, every attempt audited.

The steps, their order and resuming live in the core (:mod:`cubeguard.release`); this flow supplies
a runner whose primitives are tasks, so per-cube and per-partition items fan out over threads or a
Dask cluster. Every attempt, published, blocked or failed, leaves one record in the internal audit
store. The output folder is locked for the whole run, so two releases started at once into the same
folder cannot interleave their writes: the second stops at once with a clear message.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from prefect import Flow, flow, get_run_logger, unmapped
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from cubeguard.audit.record import Outcome, utc_now
from cubeguard.errors import CubeguardError, ReleaseBlocked
from cubeguard.logs import json_requested, log_json
from cubeguard.publish.lock import release_lock
from cubeguard.release.audit import Results
from cubeguard.release.plan import plan_release
from cubeguard.release.results import StepResult
from cubeguard.release.run import summary, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Earlier, FannedStep, Started, Step
from tasks.artifact import summary_artifact
from tasks.audit import audit_run, reconcile_audit
from tasks.progress import report
from tasks.release import Sealed, finish_step, prepare_input, run_item, run_step, start_step
from tasks.secrets import read_prefect_secret

T = TypeVar("T")


class TaskRunner:
    """Runs the release table's steps as Prefect tasks named after the steps.

    The run spec goes to each task :class:`~tasks.release.Sealed`: it carries the release's plan
    (the config of every cube), which Prefect would otherwise walk field by field twice per task
    run, looking for futures it cannot hold.
    """

    def whole(self, step: Step, spec: RunSpec, earlier: Earlier) -> StepResult:
        """One task for the whole step."""
        return run_step.with_options(name=step.name)(Sealed(spec), step.name, earlier)

    def start(self, step: FannedStep, spec: RunSpec, earlier: Earlier) -> Started:
        """The step's start task."""
        return start_step.with_options(name=f"{step.name}-start")(Sealed(spec), step.name, earlier)

    def map(self, step: FannedStep, spec: RunSpec, items: Sequence[Any]) -> Iterable[Any]:
        """One task per item, submitted at once to the flow's task runner."""
        futures = run_item.with_options(name=f"{step.name}-item").map(
            unmapped(Sealed(spec)), unmapped(step.name), list(items)
        )
        return (future.result() for future in futures)

    def finish(self, step: FannedStep, spec: RunSpec, pieces: list[Any], earlier: Earlier) -> StepResult:
        """The step's finish task."""
        return finish_step.with_options(name=f"{step.name}-finish")(Sealed(spec), step.name, pieces, earlier)


@flow(name="cubeguard-release", log_prints=False, task_runner=ThreadPoolTaskRunner(max_workers=os.cpu_count() or 2))
def release_flow(
    config_path: str,
    overrides: dict[str, Any] | None = None,
    release_id: str | None = None,
    fresh: bool = False,
    tabulate_parts: int = 1,
) -> dict[str, Any]:
    """Run one release of the config at ``config_path``; returns a small summary.

    Args:
        config_path: The release config (YAML).
        overrides: Config keys to change for this run, e.g. ``{"steps[0].js": 3}`` (from the UI).
        release_id: The published folder name (default ``<name>-<UTC time>``).
        fresh: Recompute every step even if an earlier attempt finished it.
        tabulate_parts: Tabulate in this many row-group partitions at once (for Dask workers).
    """
    overrides = dict(overrides or {})
    # The command line's plan and checks, for a run started from the Prefect UI or a schedule too: an
    # inline secret in ``overrides`` stops the run before anything beyond its parameters is stored.
    plan = plan_release(
        config_path, overrides, release_id=release_id, resolver=read_prefect_secret, given_as="overrides"
    )
    release = plan.release
    spec = RunSpec(
        config_path,
        overrides,
        fresh=fresh,
        release_id=release_id,
        parts=tabulate_parts,
        run_id=str(flow_run.get_id() or "local"),
        attempt=int(flow_run.get_run_count() or 1),
        started_at=utc_now(),
        plan=plan,
    )
    results: Results = {}
    log = run_log()
    log.info(f"release {plan.release.config.name}: planned ({len(plan.cube_steps)} cubes)")
    with release_lock(release.config.output.folder):
        reconcile_audit(spec)
        try:
            spec, results["prepare"] = prepare_input(Sealed(spec))
            log.info(f"release id {spec.release_id}")
            walk(spec, TaskRunner(), results, progress=report, log=lambda line, fields: log.info(line, extra=fields))
        except ReleaseBlocked as exc:
            log.error(f"{exc}: {'; '.join(exc.failures)}")
            _record_failure(spec, results, "blocked", str(exc), exc)
            raise
        except CubeguardError as exc:  # one sentence saying what to change; never a secret
            log.error(f"the release stopped: {exc}")
            if "publish" not in results:
                _record_failure(spec, results, "failed", f"{type(exc).__name__}: {exc}", exc)
            raise
        except BaseException as exc:
            log.error(f"the release stopped: an internal error ({type(exc).__name__}); its traceback is in the run")
            if "publish" not in results:  # a published release has its record already
                _record_failure(spec, results, "failed", f"{type(exc).__name__}: {exc}", exc)
            raise
    result = summary(spec, results)
    log.info(f"published {result['published']} (audit record {result['audit'].get('seq')})")
    summary_artifact(result)
    return result


def run_log() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    """The flow run's logger, at INFO, writing to Prefect's API (the run's Logs tab) and not the terminal.

    The command line keeps Prefect's own logging quiet (``PREFECT_LOGGING_LEVEL=CRITICAL``) and prints
    its own lines and progress bars; the run's logger gets its own level and stops propagating to
    the console handler, so an operator in the UI sees each step, its seconds and the gates' verdict.
    """
    runs = logging.getLogger("prefect.flow_runs")
    runs.setLevel(logging.INFO)
    runs.propagate = False
    if json_requested():  # CUBEGUARD_LOG_FORMAT=json: the same lines, as JSON on stderr
        log_json(runs)
    return get_run_logger()


def _record_failure(spec: RunSpec, results: Results, outcome: Outcome, message: str, exc: BaseException) -> None:
    """Append the attempt's record; if that fails too (a full disk), the first failure is what to fix."""
    try:
        audit_run(spec, results, outcome, message)
    except CubeguardError as audit_exc:
        exc.add_note(f"the attempt could not be recorded either: {audit_exc}")


def with_dask(flow_fn: Flow[..., T], address: str | None, workers: int) -> Flow[..., T]:
    """``flow_fn`` with its tasks on the Dask scheduler at ``address``, or on a local cluster of ``workers``."""
    if not address and workers <= 0:
        return flow_fn
    from prefect_dask import DaskTaskRunner

    if address:
        return flow_fn.with_options(task_runner=DaskTaskRunner(address=address))
    # ":0": the dashboard on any free port (None still tries 8787), so two local clusters never collide.
    cluster = {"n_workers": workers, "threads_per_worker": 1, "processes": True, "dashboard_address": ":0"}
    return flow_fn.with_options(task_runner=DaskTaskRunner(cluster_kwargs=cluster))
