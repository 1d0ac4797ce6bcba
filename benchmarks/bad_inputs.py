"""What cubeguard answers to each bad input and fault of ``cubeguard/testing/bad_inputs.py``: a Markdown table.

Run: ``uv run python benchmarks/bad_inputs.py`` (as root, for the two cases that mount a small
file system; elsewhere they are listed as not run). Writes ``benchmarks/results/bad_inputs.md``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cubeguard.testing.bad_inputs import CASES, run_case, within
from cubeguard.testing.tiny import TINY_CONFIG, tiny_microdata

OUT = Path(__file__).parent / "results" / "bad_inputs.md"


def main() -> int:
    rows, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        (base / "data").mkdir(parents=True)
        tiny_microdata().to_parquet(base / "data" / "persons.parquet", row_group_size=2000)
        (base / "tiny.yaml").write_text(TINY_CONFIG)
        for k, case in enumerate(CASES):
            if case.mounts and os.geteuid() != 0:
                rows.append(f"| {case.name} | not run (needs root to mount) | | | | |")
                continue
            t0 = time.perf_counter()
            got = run_case(case, base, Path(tmp) / f"case{k}")
            ok = got.exit == case.exit and case.message in got.said and "Traceback" not in got.stderr + got.stdout
            ok = ok and within(got.written, case.written)
            bad += not ok
            said = got.said.replace(f"{tmp}/case{k}/", "").replace(tmp, "").replace("|", "\\|")
            rows.append(
                f"| {case.name} | {got.exit} | {said} | {'yes' if 'Traceback' in got.stderr else 'no'} "
                f"| {got.written} | {time.perf_counter() - t0:.1f} s{'' if ok else ' **UNEXPECTED**'} |"
            )
            print(rows[-1], flush=True)
    head = [
        "# Bad inputs and faults: what `cubeguard` answers",
        "",
        f"{len(CASES)} cases from `cubeguard/testing/bad_inputs.py`, each on a fresh copy of the tests' tiny release, run as "
        "a user runs the command (`python -m cli.main ...` in a subprocess). *Written*: the most the output "
        "folder holds afterwards (`nothing`; `internal`: the attempt's audit record or validation report; "
        "`original`: the tabulated store; `protected`: the protected store; never `published`).",
        "",
        "| case | exit | what it says (stderr) | traceback | written | time |",
        "| --- | ---: | --- | --- | --- | ---: |",
    ]
    OUT.write_text("\n".join(head + rows) + "\n")
    print(f"{len(CASES) - bad} of {len(CASES)} as expected; wrote {OUT}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
