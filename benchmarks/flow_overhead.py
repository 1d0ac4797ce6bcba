"""What Prefect costs: the release flow against the same task functions called without Prefect.

Run: ``uv run python benchmarks/flow_overhead.py [config]`` (default ``configs/demo.yaml``: 1.5M
synthetic persons, 7 cubes). Both runs recompute every step (``fresh``) into their own output
folder and publish; the plain run walks the same release table in this process
(:class:`cubeguard.release.run.PlainRunner`), so the difference is orchestration alone: task and flow runs, state and log calls
to the local SQLite server, the thread pool, the artifact. The first flow run in a process also
starts the ephemeral Prefect server; that start-up is reported on its own line.
Target (issue 5): the flow adds under 20 % to the plain run.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import RESULTS, machine, stage
from cli.runtime import prefect_env


def plain_release(
    config: str, overrides: dict[str, Any], release_id: str, steps: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The release table walked in this process (no Prefect task or flow run), with the flow's services.

    With ``steps``, each step is timed and its peak RSS sampled into ``steps[<step>]``.
    """
    from cubeguard.release.run import PlainRunner, prepare, summary, walk
    from cubeguard.release.spec import RunSpec
    from tasks.release import services

    class Timed(PlainRunner):
        def whole(self, step: Any, spec: Any, earlier: Any) -> Any:
            with stage(steps, step.name) if steps is not None else contextlib.nullcontext():
                return super().whole(step, spec, earlier)

        def map(self, step: Any, spec: Any, items: Any) -> Any:
            with stage(steps, step.name) if steps is not None else contextlib.nullcontext():
                return list(super().map(step, spec, items))

    spec = RunSpec(config, overrides, fresh=True, release_id=release_id)
    with stage(steps, "prepare_input") if steps is not None else contextlib.nullcontext():
        spec, prepared = prepare(spec, services())
    results: dict[str, Any] = {"prepare": prepared}
    walk(spec, Timed(services()), results)
    return summary(spec, results)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("config", nargs="?", default="configs/demo.yaml")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--persons", type=int, default=0, help="Override input.synthetic.persons.")
    parser.add_argument("--tag", default="", help="Suffix of the result files.")
    parser.add_argument("--skip-warm", action="store_true", help="Let the first flow run warm up (big configs).")
    parser.add_argument("--steps-only", action="store_true", help="One plain run, timed step by step; no flow.")
    args = parser.parse_args()
    config = str(Path(args.config).resolve())
    work = Path("benchmarks/work/flow_overhead").resolve()
    prefect_env(work / "prefect")
    os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
    from flows.release import release_flow

    record: dict[str, Any] = {"config": config, "machine": machine()}
    extra: dict[str, Any] = {}
    if args.persons:
        microdata = str(work / f"persons-{args.persons}.parquet")
        extra = {"input.synthetic.persons": args.persons, "input.microdata": microdata, "output.exports": ["parquet"]}

    def out(name: str) -> dict[str, Any]:
        return {"output.folder": str(work / name), **extra}

    stamp = time.strftime("%H%M%S")
    if args.steps_only:
        steps: dict[str, Any] = {}
        with stage(record, "plain"):
            plain_release(config, out("plain"), f"s-{stamp}", steps)
        record["steps"] = steps
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"flow_steps{args.tag}.json").write_text(json.dumps(record, indent=2))
        print(json.dumps(record, indent=2))
        return
    if not args.skip_warm:
        plain_release(config, out("warm"), f"warm-{stamp}")  # synth input, numba compile, imports
    with stage(record, "flow_first_run_incl_server_start"):
        release_flow(config, out("flow0"), f"f0-{stamp}", True)
    for k in range(args.repeat):
        with stage(record, f"plain_{k}"):
            plain_release(config, out("plain"), f"p{k}-{stamp}")
        with stage(record, f"flow_{k}"):
            release_flow(config, out("flow"), f"f{k}-{stamp}", True)
    plain = min(record[f"plain_{k}"]["seconds"] for k in range(args.repeat))
    flow = min(record[f"flow_{k}"]["seconds"] for k in range(args.repeat))
    record["overhead_share"] = round(flow / plain - 1, 4)
    RESULTS.mkdir(exist_ok=True)
    name = f"flow_overhead{args.tag}"
    (RESULTS / f"{name}.json").write_text(json.dumps(record, indent=2))
    (RESULTS / f"{name}.md").write_text(markdown(record, plain, flow))
    print(markdown(record, plain, flow))


def markdown(record: dict[str, Any], plain: float, flow: float) -> str:
    rows = "\n".join(
        f"| {name} | {v['seconds']:.2f} | {v['cpu_seconds']:.2f} | {v['peak_rss_mb']:.0f} | {v['load_avg_1min']} |"
        for name, v in record.items()
        if isinstance(v, dict) and "seconds" in v
    )
    m = record["machine"]
    return (
        "# Release flow overhead (`benchmarks/flow_overhead.py`)\n\n"
        f"Config `{Path(record['config']).name}`; {m['cpus']} cores, Python {m['python']}, commit {m['commit']}, "
        f"{m['date']}. Every run recomputes every step and publishes.\n\n"
        "| run | wall s | CPU s | peak RSS MB | load (1 min) |\n| --- | ---: | ---: | ---: | ---: |\n"
        f"{rows}\n\nBest plain run {plain:.2f} s, best flow run {flow:.2f} s: the flow adds "
        f"{record['overhead_share']:.1%} (target: under 20 %).\n"
    )


if __name__ == "__main__":
    main()
