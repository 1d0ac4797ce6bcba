"""Benchmark: tabulation + cell key perturbation, against the references on the same tables.

    uv run --group bench python benchmarks/ckm.py [--persons 10000000]

1. seed 000 hypercube (1.5M persons, 245,700 interior cells): cubeguard vs the ONS
   ``cell-key-perturbation`` package (pip), in one run, same records and table. The ONS package
   tabulates interior cells only; cubeguard also builds every total and subtotal (2.47M cells).
2. R cellKey's benchmark table (../shared/golden/timings.md (b): 2M records, 5 variables,
   138,600 cells incl. margins, D=5 V=3 js=2): cubeguard on a table of the same structure vs the
   recorded R timing (8.30-9.33 s for setup + perturb + freqtab).
3. An 8-way EU stand-in hypercube and the whole EU programme (119 cubes) at ``--persons``.
Targets (issue 4, 2 cores): (1) < 2 s; (3) 8-way < 30 s, programme < 120 s; >= 50x each reference.
Results: benchmarks/results/ckm.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._measure import machine, write_results
from cubeguard.ckm.perturb import perturb_cube
from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
from cubeguard.config import load_release
from cubeguard.config.load import Release
from cubeguard.cubes.tabulate import Tabulator, plans_for
from cubeguard.pipeline.tabulation import key_scale
from cubeguard.synth import generate

ROOT = Path(__file__).resolve().parents[1]
R_CELLKEY_SECONDS = (8.30, 9.33)  # timings.md (b): setup + perturb + freqtab, two runs


def with_input(release: Release, parquet: Path, cube_ids: list[str] | None = None) -> Release:
    """The release reading ``parquet`` (and only the listed cubes)."""
    cfg = release.config
    update: dict[str, Any] = {"input": cfg.input.model_copy(update={"microdata": parquet})}
    if cube_ids is not None:
        update["hypercubes"] = [c for c in cfg.hypercubes if c.id in cube_ids]
    return dataclasses.replace(release, config=cfg.model_copy(update=update))


def cubeguard_protect(release: Release, ptable: Any) -> dict[str, float]:
    """Tabulate (one pass) and perturb every cube in memory; seconds per phase and cells."""
    from cubeguard.microdata.read import iter_batches

    cfg = release.config
    t0 = time.perf_counter()
    tab = Tabulator(
        plans_for(release), cfg.populations, key_scale(release), cfg.input.record_key.column, cfg.input.household_ref
    )
    for batch in iter_batches(cfg.input, tab.columns):
        tab.add_batch(batch)
    t1 = time.perf_counter()
    cells = 0
    for c, plan in enumerate(tab.plans):
        cube = perturb_cube(tab.cube(c, {"cube_id": plan.cube_id}), ptable)
        cells += int(cube["count"].size)
        assert not np.isin(cube["count"].values, (1, 2)).any()
    t2 = time.perf_counter()
    return {
        "tabulate_s": round(t1 - t0, 3),
        "margins_perturb_s": round(t2 - t1, 3),
        "total_s": round(t2 - t0, 3),
        "cells": cells,
    }


def cubeguard_interior(release: Release, ptable: Any) -> dict[str, float]:
    """Like-for-like with the ONS package: tabulate and perturb the interior (bottom) cells only."""
    from cubeguard.ckm.lookup import lookup_noise
    from cubeguard.microdata.read import iter_batches

    cfg = release.config
    t0 = time.perf_counter()
    scale = key_scale(release)
    tab = Tabulator(plans_for(release), cfg.populations, scale, cfg.input.record_key.column, cfg.input.household_ref)
    for batch in iter_batches(cfg.input, tab.columns):
        tab.add_batch(batch)
    cells = 0
    for c in range(len(tab.plans)):
        counts, key_sums = tab.bottom(c)
        published = counts + lookup_noise(counts, scale.cell_keys(key_sums), ptable)
        cells += int(published.size)
    return {"total_s": round(time.perf_counter() - t0, 3), "cells": cells}


def ons_protect(frame: pd.DataFrame, dims: list[str]) -> dict[str, float]:
    """The ONS package on the same records: groupby tabulation of interior cells, ptable lookup."""
    from cell_key_perturbation.create_perturbed_table import create_perturbed_table
    from cell_key_perturbation.utils.generate_test_ptable import generate_ptable_10_5_rule

    ptable = generate_ptable_10_5_rule()
    t0 = time.perf_counter()
    out = create_perturbed_table(
        data=frame, ptable=ptable, geog=[], tab_vars=dims, record_key="rkey_ons", use_existing_ons_id=False, threshold=0
    )
    return {"total_s": round(time.perf_counter() - t0, 3), "cells": len(out)}


def ons_frame(release: Release, parquet: Path) -> pd.DataFrame:
    """The records with each breakdown's bottom code (so ONS tabulates exactly the same cells)."""
    from cubeguard.cubes.encode import column_positions

    table = pq.read_table(parquet)
    cube = release.config.hypercubes[0]
    frame = pd.DataFrame(
        {
            b: column_positions(table.column(release.breakdowns[b].column), release.breakdowns[b])
            for b in cube.breakdowns
        }
    )
    frame["rkey_ons"] = np.floor(table.column("rkey").to_numpy() * 256).astype(np.int64)  # ONS keys are 0..255
    return frame


def seed000(work: Path, ptable: Any) -> dict[str, Any]:
    """Part 1: the seed 000 cube, cubeguard vs ONS."""
    generate(1_500_000, 2021, work / "s000", geography="two_regions")
    parquet = work / "s000" / "persons.parquet"
    release = with_input(load_release(ROOT / "configs" / "demo.yaml"), parquet, ["seed000"])
    ours = cubeguard_protect(release, ptable)
    interior = cubeguard_interior(release, ptable)
    frame = ons_frame(release, parquet)
    ons = ons_protect(frame, [b for b in frame.columns if b != "rkey_ons"])
    assert ons["cells"] == 245_700, ons
    return {
        "cubeguard": ours,
        "cubeguard_interior": interior,
        "ons": ons,
        "speedup_vs_ons": round(ons["total_s"] / interior["total_s"], 1),
    }


R_TABLE = """\
schema_version: 1
name: r-cellkey-benchmark
input: {{microdata: {micro}, person_id: pid, household_id: null, household_ref: null}}
variables:
  GEO:
    column: geo
    codes: {geo}
    breakdowns: {{geo: {{}}}}
  SEX: {{column: sex, codes: [{{code: T}}, {{code: "1", parent: T}}, {{code: "2", parent: T}}], breakdowns: {{sex: {{}}}}}}
  AGE: {{column: age, codes: {age}, breakdowns: {{age: {{}}}}}}
  ACT: {{column: act, codes: {act}, breakdowns: {{act: {{}}}}}}
  OCC: {{column: occ, codes: {occ}, breakdowns: {{occ: {{}}}}}}
hypercubes: [{{id: r, breakdowns: [geo, sex, age, act, occ]}}]
output: {{folder: {out}}}
"""


def r_cellkey_table(work: Path, ptable: Any) -> dict[str, Any]:
    """Part 2: a table of the structure timings.md (b) describes, vs the recorded R timing."""
    rng = np.random.default_rng(1)
    n = 2_000_000

    def flat(prefix: str, k: int) -> list[dict[str, str]]:
        return [{"code": "T"}] + [{"code": f"{prefix}{i:02d}", "parent": "T"} for i in range(1, k + 1)]

    geo = [{"code": "T"}] + [
        c
        for r in range(1, 5)
        for c in [{"code": f"G{r:02d}", "parent": "T"}]
        + [{"code": f"G{r:02d}{d:02d}", "parent": f"G{r:02d}"} for d in range(1, 6)]
    ]
    weights = {"age": [6] * 16 + [5, 4, 3, 2, 1], "act": [5, 1, 3, 2, 1], "occ": [*range(1, 13), 3]}
    prefixes = {"age": "A", "act": "C", "occ": "O"}
    data = {
        "pid": np.arange(n),
        "geo": [f"G{r:02d}{d:02d}" for r, d in zip(rng.integers(1, 5, n), rng.integers(1, 6, n), strict=True)],
        "sex": rng.choice(["1", "2"], n),
        "rkey": rng.random(n),
    }
    for v, w in weights.items():
        p = np.array(w, float) / sum(w)
        data[v] = np.char.add(prefixes[v], np.char.zfill((rng.choice(len(w), n, p=p) + 1).astype(str), 2))
    pd.DataFrame(data).astype(
        {"geo": "category", "sex": "category", "age": "category", "act": "category", "occ": "category"}
    ).to_parquet(work / "r.parquet")
    text = R_TABLE.format(
        micro=work / "r.parquet", geo=geo, age=flat("A", 21), act=flat("C", 5), occ=flat("O", 13), out=work / "r-out"
    )
    (work / "r.yaml").write_text(text)
    ours = cubeguard_protect(load_release(work / "r.yaml"), ptable)
    return {
        "cubeguard": ours,
        "r_cellkey_s": R_CELLKEY_SECONDS,
        "speedup_vs_r": round(min(R_CELLKEY_SECONDS) / ours["total_s"], 1),
    }


def eu_programme(work: Path, persons: int, ptable: Any) -> dict[str, Any]:
    """Part 3: one 8-way stand-in and the whole programme at ``persons``."""
    t0 = time.perf_counter()
    generate(persons, 2021, work / "eu", geography="national")
    synth_s = round(time.perf_counter() - t0, 1)
    release = load_release(ROOT / "configs" / "eu2021.yaml")
    eight = next(c.id for c in release.config.hypercubes if len(c.breakdowns) == 8)
    parquet = work / "eu" / "persons.parquet"
    one = cubeguard_protect(with_input(release, parquet, [eight]), ptable)
    whole = cubeguard_protect(with_input(release, parquet), ptable)
    return {"persons": persons, "synth_s": synth_s, "eight_way_cube": eight, "eight_way": one, "programme": whole}


def markdown(p: dict[str, Any]) -> str:
    """Results as a Markdown report."""
    m, s, r, e = p["machine"], p["seed000"], p["r_table"], p["eu"]
    return "\n".join(
        [
            "# Cell key method benchmark",
            "",
            f"{m['date']}, {m['cpus']} cores, Python {m['python']}, commit {m['commit']}.",
            "",
            "| table | records | cubeguard s (tabulate + margins + perturb) | reference s | speed-up |",
            "| --- | ---: | ---: | ---: | ---: |",
            f"| seed 000 cube, 245,700 interior cells | 1,500,000 | {s['cubeguard_interior']['total_s']} | "
            f"ONS cell-key-perturbation 3.1.0: {s['ons']['total_s']} | {s['speedup_vs_ons']}x |",
            f"| seed 000 cube with every margin ({s['cubeguard']['cells']:,} cells) | 1,500,000 | "
            f"{s['cubeguard']['total_s']} | - (the ONS package builds no margins) | - |",
            f"| R cellKey benchmark structure, 138,600 cells | 2,000,000 | {r['cubeguard']['total_s']} | "
            f"R cellKey 1.0.2 (timings.md): {r['r_cellkey_s'][0]}-{r['r_cellkey_s'][1]} | {r['speedup_vs_r']}x |",
            f"| EU 8-way stand-in {e['eight_way_cube']} ({e['eight_way']['cells']:,} cells) | {e['persons']:,} | "
            f"{e['eight_way']['total_s']} | - | - |",
            f"| whole EU programme, 119 cubes ({e['programme']['cells']:,} cells) | {e['persons']:,} | "
            f"{e['programme']['total_s']} (tabulate {e['programme']['tabulate_s']}) | - | - |",
            "",
            "Targets (2 cores): seed 000 cube < 2 s; 8-way EU cube at 10M < 30 s; whole programme at 10M < 120 s;",
            "at least 50x faster than each reference on the same table. The R timing was taken on this machine type",
            "(../shared/golden/timings.md); R's table has the same structure but other random records.",
        ]
    )


def main() -> None:
    """Run all parts and write the results."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--persons", type=int, default=10_000_000)
    args = ap.parse_args()
    ptable = create_cnt_ptable(PTableParams(D=5, V=3, js=2))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        payload = {
            "machine": machine(),
            "seed000": seed000(work, ptable),
            "r_table": r_cellkey_table(work, ptable),
            "eu": eu_programme(work, args.persons, ptable),
        }
    md = write_results("ckm", payload, markdown)
    print(md.read_text())


if __name__ == "__main__":
    main()
