"""A release run from the Prefect UI shows its steps and gate verdict in the run's Logs tab, and no secret.

A real Prefect server (with its UI) serves the tiny release through ``cubeguard deploy``; a run is
started as the UI's "Custom run" starts one (``run_deployment`` with a changed parameter). The
config takes the cell key D and V and the record-key seed by reference from environment variables
of the serving process, with fresh distinctive values, so the logs have something to leak.
Playwright drives Debian's Chromium, offline, over the UI's flow-run page: the Logs tab must show
each step's start and end, the gates' verdict and the published folder, and a full-page screenshot
of it must not be blank. Every log line of the run, read back through the API, and the page's text
must hold none of the secret values. One server start serves both tests (module scope).
Skipped, saying so, without Chromium.
"""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.image import imread
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser import NEEDS_CHROMIUM, chromium
from tests.conftest import CELL_KEY_STEP, TINY_CONFIG, tiny_microdata
from tests.prefect_server import serve_and_run, start_server, stop

pytestmark = [pytest.mark.prefect, pytest.mark.slow, NEEDS_CHROMIUM]

SHOTS = Path("/tmp/shots38")
_RNG = random.Random()  # fresh distinctive values each run, so no log line can match them by chance
SECRETS = {
    "CG_UI_D": "7",
    "CG_UI_V": f"3.{_RNG.randrange(100_000, 899_999)}",
    "CG_UI_KEY_SEED": str(_RNG.randrange(10**8, 10**9)),
}
#: The values searched for (as test_secrets does: D = 7 is a plain digit, found anywhere), V also as
#: Python prints the float it is read as.
NEEDLES = sorted({SECRETS["CG_UI_V"], repr(float(SECRETS["CG_UI_V"])), SECRETS["CG_UI_KEY_SEED"]})
PUBLISHED = "/published/ui-logs (audit record 1)"  # the run's last line of its own
STEP_LINES = (
    "tabulate: started",
    "protect: done in ",
    "gates passed",
    "published ",
    PUBLISHED,
)
VERDICT = "gate: done in "  # the gate step's end line, followed by "; gates passed (N warning(s))"
OFFLINE_BUT_LOOPBACK = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"  # only the local server; the UI calls no one else
#: How far the scrolling container around an element is scrolled (the page's own scroll if none).
SCROLL_TOP = """e => {
    while (e && !(e.scrollHeight > e.clientHeight && /auto|scroll/.test(getComputedStyle(e).overflowY))) e = e.parentElement;
    return e ? e.scrollTop : window.scrollY;
}"""
PARAMS = {"overrides": {"steps[0].mono": False}, "release_id": "ui-logs"}  # secrets only by reference

TRIGGER = """
import asyncio, json, sys, time
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
from prefect.client.schemas.sorting import LogSort
from prefect.deployments import run_deployment
run = run_deployment("cubeguard-release/tiny", parameters=json.loads(sys.argv[1]), timeout=900)

async def logs():
    found, page = [], 200
    async with get_client() as client:
        while True:  # every page: a run logged at DEBUG has more lines than one answer holds
            batch = await client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])),
                                           limit=page, offset=len(found), sort=LogSort.TIMESTAMP_ASC)
            found += [entry.message for entry in batch]
            if len(batch) < page:
                return found

time.sleep(3)  # the run's last log lines reach the API in the next batch
print(json.dumps({"id": str(run.id), "state": run.state.type.value, "logs": asyncio.run(logs())}))
"""


def secret_config() -> str:
    """TINY_CONFIG with D, V and the record-key seed given by reference to environment variables."""
    step = "  - {method: cell_key, D: {env: CG_UI_D}, V: {env: CG_UI_V}, js: 2}\n"
    household = "  household_columns: [region]\n"
    assert CELL_KEY_STEP in TINY_CONFIG and household in TINY_CONFIG
    seed = "  record_key: {generate_seed: {env: CG_UI_KEY_SEED}}\n"
    return TINY_CONFIG.replace(CELL_KEY_STEP, step).replace(household, household + seed)


def run_from_ui(folder: Path, env: dict[str, str]) -> dict[str, Any]:
    """Serve the secret-referencing tiny config and run it as the UI does; the run's id, state and log lines."""
    (folder / "data").mkdir()
    tiny_microdata().drop(columns="rkey").to_parquet(folder / "data" / "persons.parquet")  # keys from the seed
    (folder / "tiny.yaml").write_text(secret_config())
    # The serving process (and the runs it starts) holds the secrets; its Prefect loggers at DEBUG, so
    # the scan sees every line that could reach the API.
    return serve_and_run(folder, env, TRIGGER, PARAMS, serving={**SECRETS, "PREFECT_LOGGING_LEVEL": "DEBUG"})


@pytest.fixture(scope="module")
def ui_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One run from the UI on a live server: its id, state, log lines and the UI's base URL."""
    folder = tmp_path_factory.mktemp("ui-logs")
    proc, env = start_server(folder, ui=True)
    try:
        yield {**run_from_ui(folder, env), "ui": env["PREFECT_API_URL"].removesuffix("/api")}
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def logs_page(ui_run: dict[str, Any]) -> Iterator[Page]:
    """The run's page in the Prefect UI with its Logs tab open, shown down to the published line."""
    for browser in chromium(OFFLINE_BUT_LOOPBACK):
        # The log list renders only the rows in view (a virtual scroller): a view this tall holds
        # all of this run's rows (about 80, 4,700 px), so none is missed while the page still renders.
        context = browser.new_context(viewport={"width": 1440, "height": 6000})
        page = context.new_page()
        page.goto(f"{ui_run['ui']}/runs/flow-run/{ui_run['id']}")
        # The default tab in Prefect 3.8, clicked in case another opens first (an <li>, not role=tab).
        page.get_by_text("Logs", exact=True).first.click()
        try:
            page.get_by_text(PUBLISHED).wait_for(timeout=90_000)
        except PlaywrightTimeout:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=SHOTS / "prefect-logs-failed.png", full_page=True)
            said = f"run {ui_run['state']}, {len(ui_run['logs'])} lines by the API"
            pytest.fail(f"the Logs tab shows no {PUBLISHED!r} in 90 s ({said}); it shows: {page.inner_text('body')}")
        yield page
        context.close()


def scrolled_text(page: Page) -> str:
    """The page's text at every scroll position from the top of the log list to its end.

    A longer log than the view holds is rendered a part at a time as it scrolls into view: the
    mouse wheel scrolls the list's container until it moves no further, and the text is read at
    each position once it has stopped changing (the rows in view rendered).
    """
    page.get_by_text(PUBLISHED).hover()
    tab = page.get_by_text("Logs", exact=True).first  # in the scrolled container, so its offset tells
    page.mouse.wheel(0, -100_000)
    texts, top = [settled_text(page)], None
    while top != (top := tab.evaluate(SCROLL_TOP)):
        page.mouse.wheel(0, 600)
        texts.append(settled_text(page))
    return "\n".join(texts)


def settled_text(page: Page, seconds: float = 10) -> str:
    """The page's text once two reads 0.5 s apart agree (or after ``seconds``)."""
    text = page.inner_text("body")
    for _ in range(int(seconds * 2)):
        page.wait_for_timeout(500)
        text, before = page.inner_text("body"), text
        if text == before:
            break
    return text


def colours(png: bytes) -> int:
    """How many colours ``png`` has: test_gate_verdict_browser's blank check, fast on a 1440 x 6000 page."""
    rgb = (imread(io.BytesIO(png))[..., :3] * 255).astype(np.uint32)
    return len(np.unique(rgb[..., 0] << 16 | rgb[..., 1] << 8 | rgb[..., 2]))


@pytest.fixture(scope="module")
def tab_text(logs_page: Page) -> str:
    """Everything the Logs tab shows, scrolled through once."""
    return scrolled_text(logs_page)


def test_the_logs_tab_shows_each_step_and_the_gate_verdict(
    ui_run: dict[str, Any], logs_page: Page, tab_text: str
) -> None:
    assert ui_run["state"] == "COMPLETED", ui_run
    missing = [line for line in STEP_LINES if line not in tab_text]
    assert not missing, f"not on the Logs tab: {missing}; it shows: {tab_text[-3000:]}"
    verdict = next((line for line in tab_text.splitlines() if VERDICT in line), "")
    assert "; gates passed (" in verdict and "warning(s))" in verdict, tab_text
    assert logs_page.get_by_text(verdict, exact=True).first.is_visible()  # on the screenshot too
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert colours(logs_page.screenshot(path=SHOTS / "prefect-logs.png", full_page=True)) > 20  # not blank


def test_no_secret_in_the_run_logs_or_the_logs_tab(ui_run: dict[str, Any], tab_text: str) -> None:
    logs = ui_run["logs"]
    assert any(VERDICT in line for line in logs) and len(logs) > 10, logs  # the scan has the run's lines
    assert [line for line in logs if line not in tab_text] == [], "the tab shows fewer lines than the API"
    # The values, and how the config refers to them (the variables' names, a reference's dict).
    needles = [*NEEDLES, *SECRETS, "{'env'"]
    leaks = [f"{needle!r} in the run's log line {line!r}" for needle in needles for line in logs if needle in line]
    leaks += [f"{needle!r} on the Logs tab" for needle in needles if needle in tab_text]
    assert not leaks, leaks
