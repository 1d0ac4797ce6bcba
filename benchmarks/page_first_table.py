"""The table builder page's time to first table on the demo release, in a real browser (issue 39).

Run: ``.venv/bin/python benchmarks/page_first_table.py [--config configs/demo.yaml] [-n 5] [--rounds R]
[--before OLD_PAGE.html]`` (the demo release must exist: ``./dev demo``). ``--before`` measures an
earlier ``service/page.html`` too (e.g. ``git show f0e1295:service/page.html > /tmp/before.html``),
alternating with this one round by round, so both meet the same load on a shared machine.

The service runs as ``cubeguard tables CONFIG`` runs it (``create_app`` under uvicorn, one worker)
in a process of its own on 127.0.0.1 (``page_first_table.py serve``), started afresh for each
version and round, and the clock starts once every planned crossing is tabulated (the served
release's steady state). Debian's Chromium, driven by Playwright, opens shared URLs
(``/#breakdowns=...``: the table, its layout and page) in four cases:

- ``cold browser, new table``: a freshly launched browser per URL, a table the service was never asked;
- ``cold browser, asked before``: a fresh browser per URL, the same tables again (the service's caches hold them);
- ``warm browser, new table``: one browser that has already drawn a table, each URL in a new tab;
- ``warm browser, asked before``: that browser again, the same tables again.

*Time to first table* runs from navigation start (``performance.timeOrigin``) to the table's cells
being in the DOM: a ``MutationObserver`` installed before the page's own script (Playwright's
``add_init_script``) notes ``performance.now()`` when ``#cells tbody td`` first exists. Observer
callbacks run at the end of the script task that made the change, so this is never earlier than
the cells' arrival and at most that task's remaining work later. Beside it, per URL: when the
HTML's response ended, ``DOMContentLoaded``, each ``/api/`` request's start and end (Resource
Timing), and the page's own ``data-first-table``. Writes ``results/<name>.{json,md}``
(``page_first_table`` by default) with p50 and max per case; target: under 300 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from playwright.sync_api import Browser, BrowserContext

from benchmarks._measure import machine, write_results
from cubeguard.testing.browser import chromium

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 300.0
STALLED_SECONDS = 60  # no crossing tabulated for this long: the service's crossings thread has stopped
ATTEMPTS = 3  # services started before giving up on stalled crossings
#: Notes when the table's first data cell is in the DOM (runs before any script of the page).
OBSERVER = """
new MutationObserver((_, obs) => {
  if (document.querySelector("#cells tbody td")) { window.__cellsAt = performance.now(); obs.disconnect(); }
}).observe(document, {childList: true, subtree: true});
"""
#: What a sample reads once the table is drawn: the observer's time, navigation and request timings.
TIMINGS = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const api = performance.getEntriesByType("resource").filter((r) => r.name.includes("/api/"))
    .map((r) => ({path: new URL(r.name).pathname, start: r.startTime, end: r.responseEnd}));
  return {cells: window.__cellsAt, page_mark: Number(document.body.dataset.firstTable),
          html_end: nav.responseEnd, dom_content_loaded: nav.domContentLoadedEventEnd, api};
}"""
#: Shared URLs' states: (breakdowns, extra parameters, roles, pages); enough distinct tables for
#: two cases of new tables at the largest ``-n`` (the demo's geography by one to three variables).
TABLES: list[tuple[str, dict[str, str], list[str], list[str]]] = [
    ("GEO.L,SEX,AGE.M", {}, ["GEO.L:rows", "SEX:cols", "AGE.M:pages"], ["AGE.M:Y15-29"]),
    ("GEO.M,SEX", {"mean": "age"}, [], []),
    ("GEO.M,AGE.L,LMS.L", {}, ["GEO.M:rows", "AGE.L:cols", "LMS.L:pages"], []),
    ("GEO.L,EDU", {}, ["GEO.L:cols", "EDU:rows"], []),
    ("GEO.N,OCC,SEX", {"mean": "age"}, [], []),
    ("GEO.M,CAS.H", {}, [], []),
    ("GEO.L,COC.M,SEX", {}, [], []),
    ("GEO.M,FST.H", {}, [], []),
    ("GEO.L,AGE.H", {}, [], []),
    ("GEO.M,SEX,LMS.H", {}, [], []),
    ("GEO.L,CAS.L,SEX", {"mean": "age"}, [], []),
    ("GEO.N,AGE.M,EDU", {}, [], []),
    ("GEO.M,COC.L", {}, [], []),
    ("GEO.L,LMS.H,AGE.L", {}, [], []),
    ("GEO.H,SEX", {}, [], []),
    ("GEO.M,OCC", {"mean": "age"}, [], []),
    ("GEO.L,FST.H,SEX", {}, [], []),
    ("GEO.N,CAS.H,AGE.L", {}, [], []),
    ("GEO.M,EDU,SEX", {}, [], []),
    ("GEO.L,SEX", {}, [], []),
]
WARM_UP = "/#" + urlencode({"breakdowns": "GEO.N,SEX", "population": "total"})


def shared_url(breakdowns: str, extra: dict[str, str], roles: list[str], pages: list[str]) -> str:
    """The page's URL for a table as the page shares it (query, then layout, in the hash)."""
    state = [("breakdowns", breakdowns), ("population", "total"), *extra.items()]
    state += [("role", r) for r in roles] + [("page", p) for p in pages]
    return "/#" + urlencode(state)


def serve(config: Path, log: Path, page: Path | None = None) -> Iterator[str]:
    """The service of ``config`` on a free port, once its crossings are tabulated; yields its base URL.

    It runs in a process of its own, as deployed (``cubeguard tables``: :func:`service.app.create_app`
    under uvicorn); in this process it would share the interpreter lock with Playwright's client.
    ``page`` replaces ``service/page.html`` (an earlier version, for a comparison on the same load).
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, __file__, "serve", "--config", str(config), "--port", str(port)]
    command += ["--page", str(page)] if page is not None else []
    for attempt in range(1, ATTEMPTS + 1):
        with log.open("w" if attempt == 1 else "a") as out:
            proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=out)
            try:
                if _ready(base, proc, log):
                    yield base
                    return
            finally:
                proc.terminate()
                proc.wait(timeout=20)
        print(f"the service's crossings stalled (attempt {attempt} of {ATTEMPTS}); see {log}", file=sys.stderr)
    raise SystemExit(f"the service's crossings stalled {ATTEMPTS} times; see {log}")


def _serve(config: Path, port: int, page: Path | None) -> None:
    """Run the service of ``config`` on 127.0.0.1:``port`` as ``cubeguard tables`` does (one worker)."""
    import uvicorn

    import service.app

    if page is not None:
        service.app.PAGE = page.resolve()  # what the page route reads
    uvicorn.run(
        service.app.create_app(config.resolve()), host="127.0.0.1", port=port, log_level="warning", proxy_headers=False
    )


def _ready(base: str, proc: subprocess.Popen[bytes], log: Path) -> bool:
    """Wait until ``/api/release`` says every planned crossing is tabulated; False once they stall.

    Stalled: no crossing added for :data:`STALLED_SECONDS` (the crossings' thread stopped; its error
    is in ``log``).
    """
    ready, progress = -1, time.perf_counter()
    while time.perf_counter() - progress < STALLED_SECONDS:
        if proc.poll() is not None:
            raise SystemExit(f"the table service stopped (exit {proc.returncode}); see {log}")
        with contextlib.suppress(httpx.HTTPError):
            done = httpx.get(f"{base}/api/release", timeout=5).json()["precomputed"]
            if done["ready"] >= done["planned"]:
                return True
            if done["ready"] > ready:
                ready, progress = done["ready"], time.perf_counter()
        time.sleep(0.25)
    return False


def sample(context: BrowserContext, path: str) -> dict[str, Any]:
    """Open ``path`` in a new tab of ``context``; the timings of its first table (ms from navigation start)."""
    tab = context.new_page()
    try:
        tab.goto(path)
        tab.wait_for_function("document.body.dataset.state === 'answered'", timeout=30_000)
        found: dict[str, Any] = tab.evaluate(TIMINGS)
    finally:
        tab.close()
    found["url"] = path
    return found


@contextmanager
def browser_context(base: str) -> Iterator[tuple[Browser, BrowserContext]]:
    """A freshly launched Chromium and a context on ``base`` with the observer installed."""
    browser = next(gen := chromium("MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))
    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 900})
    context.add_init_script(OBSERVER)
    try:
        yield browser, context
    finally:
        context.close()
        next(gen, None)  # closes the browser and Playwright


def cold(base: str, urls: list[str]) -> list[dict[str, Any]]:
    """Each URL in a browser launched for it alone."""
    out = []
    for path in urls:
        with browser_context(base) as (_, context):
            out.append(sample(context, path))
    return out


def warm(base: str, urls: list[str], repeat: bool) -> dict[str, list[dict[str, Any]]]:
    """One browser: a table drawn first (not counted), then each URL in a new tab (and again if ``repeat``)."""
    with browser_context(base) as (_, context):
        sample(context, WARM_UP)
        new = [sample(context, path) for path in urls]
        again = [sample(context, path) for path in urls] if repeat else []
    return {"new": new, "again": again}


def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """p50 and max of the time to first table, and medians of where it went (ms)."""
    cells = [s["cells"] for s in samples]
    last_api = [max((r["end"] for r in s["api"]), default=0.0) for s in samples]
    return {
        "n": len(samples),
        "p50_ms": round(statistics.median(cells), 1),
        "p90_ms": round(statistics.quantiles(cells, n=10, method="inclusive")[-1], 1),
        "max_ms": round(max(cells), 1),
        "all_ms": [round(c, 1) for c in cells],
        "median_html_end_ms": round(statistics.median(s["html_end"] for s in samples), 1),
        "median_dom_content_loaded_ms": round(statistics.median(s["dom_content_loaded"] for s in samples), 1),
        "median_last_api_end_ms": round(statistics.median(last_api), 1),
        "median_requests": statistics.median(len(s["api"]) for s in samples),
    }


def cases(config: Path, n: int, page: Path | None) -> dict[str, list[dict[str, Any]]]:
    """Each case's samples, from a service started for them (its caches empty: new tables are new)."""
    urls = [shared_url(*t) for t in TABLES]
    cold_urls, warm_urls = urls[:n], urls[n : 2 * n]
    gen = serve(config, Path(tempfile.gettempdir()) / "page_first_table_service.log", page)
    base = next(gen)
    try:
        samples = {"cold browser, new table": cold(base, cold_urls)}
        samples["cold browser, asked before"] = cold(base, cold_urls)
        found = warm(base, warm_urls, repeat=True)
        samples["warm browser, new table"] = found["new"]
        samples["warm browser, asked before"] = found["again"]
    finally:
        next(gen, None)
    return samples


def run(config: Path, n: int, rounds: int, before: Path | None) -> dict[str, Any]:
    """Every version's cases and summaries; with ``before``, the versions alternate round by round."""
    if 2 * n > len(TABLES):
        raise SystemExit(f"-n {n}: at most {len(TABLES) // 2} (two cases of new tables from {len(TABLES)} tables)")
    pages: dict[str, Path | None] = {"this page": None}
    if before is not None:
        pages = {f"before ({before.name})": before, **pages}
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {label: {} for label in pages}
    load = [os.getloadavg()[0]]
    for _ in range(rounds):
        for label, page in pages.items():
            for case, found in cases(config, n, page).items():
                samples[label].setdefault(case, []).extend(found)
            load.append(os.getloadavg()[0])
    return {
        "config": str(config),
        "target_ms": TARGET_MS,
        "rounds": rounds,
        "load_avg_1min": [round(x, 2) for x in load],
        "page_changed_since_commit": _changed("service/page.html", "service/app.py"),
        "versions": {label: _summaries(got) for label, got in samples.items()},
        "samples": samples,
        "machine": machine(),
    }


def _summaries(samples: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each case's summary, and every case's samples pooled."""
    pooled = [s for found in samples.values() for s in found]
    return {case: summary(found) for case, found in samples.items()} | {"all cases": summary(pooled)}


def _changed(*paths: str) -> bool:
    """Whether ``paths`` differ from the commit checked out (the figures are then of the working tree)."""
    return subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *paths], cwd=ROOT).returncode != 0


def _markdown(payload: dict[str, Any]) -> str:
    m = payload["machine"]
    lines = [
        "# Table builder page: time to first table (demo release)",
        "",
        f"Config `{payload['config']}`; commit {m['commit']}"
        f"{' (page.html or app.py changed since: the working tree measured)' if payload['page_changed_since_commit'] else ''}, "
        f"{m['cpus']} CPUs shared with other workers (1-minute "
        f"load average {min(payload['load_avg_1min'])}-{max(payload['load_avg_1min'])} during the run), Python "
        f"{m['python']}, {m['date']}. Debian's Chromium (headless) via Playwright; the service in its own process as "
        "`cubeguard tables` runs it, its crossings tabulated; "
        f"{payload['rounds']} round(s), versions alternating. Time to first table: navigation start to the table's "
        "cells in the DOM (a MutationObserver installed before the page's script). See the module docstring.",
        "",
        "| version | case | n | p50 ms | p90 ms | max ms | all ms | HTML end | DOMContentLoaded | last /api/ end "
        "| /api/ requests |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for version, got in payload["versions"].items():
        for case, s in got.items():
            lines.append(
                f"| {version} | {case} | {s['n']} | {s['p50_ms']} | {s['p90_ms']} | {s['max_ms']} | "
                f"{', '.join(map(str, s['all_ms'])) if case != 'all cases' else ''} | "
                f"{s['median_html_end_ms']} | {s['median_dom_content_loaded_ms']} | {s['median_last_api_end_ms']} | "
                f"{s['median_requests']} |"
            )
    lines += ["", "HTML end, DOMContentLoaded and last /api/ end: medians, ms from navigation start."]
    for version, got in payload["versions"].items():
        pooled = got["all cases"]
        verdict = "met" if pooled["max_ms"] < payload["target_ms"] else "not met"
        p50 = max(s["p50_ms"] for s in got.values())
        lines.append(
            f"- {version}: every sample under {payload['target_ms']:.0f} ms: {verdict} (p50 {pooled['p50_ms']}, "
            f"p90 {pooled['p90_ms']}, worst {pooled['max_ms']} ms of {pooled['n']}; largest p50 of a case {p50} ms)."
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", choices=["run", "serve"], default="run", help="serve: the service alone")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "demo.yaml")
    parser.add_argument("-n", type=int, default=5, help="shared URLs per case")
    parser.add_argument("--port", type=int, default=8000, help="serve: the port")
    parser.add_argument("--page", type=Path, help="serve: this file instead of service/page.html")
    parser.add_argument("--before", type=Path, help="an earlier page.html to measure too, alternating")
    parser.add_argument("--rounds", type=int, default=1, help="services started per version")
    parser.add_argument("--name", default="page_first_table", help="results file stem in benchmarks/results/")
    args = parser.parse_args()
    if args.what == "serve":
        _serve(args.config, args.port, args.page)
    else:
        print(write_results(args.name, run(args.config, args.n, args.rounds, args.before), _markdown).read_text())


if __name__ == "__main__":
    main()
