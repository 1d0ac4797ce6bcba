"""The table builder (``service/page.html``, issue 39) in a real browser against a real (tiny) release.

Playwright drives Debian's Chromium against the service on 127.0.0.1, as in
``test_tables_browser.py``. Checked, each against the API's JSON answer to the same query: a table
built by choosing variables and pivoted (rows, columns, a page), with labels, totals marked and
means beside counts; its chart and legend; a withheld area with its rule in words; a ready-made
cube opened from the list; a shared URL reproducing the table, and costing one round trip (its
table: the release, variables and cubes come inside the page); the CSV and XLSX downloads; keyboard
use; and an axe-core scan with no serious or critical violation. Screenshots go to
``/tmp/shots39/``; the time to the first table is printed, not asserted: on the shared 2-core
machine it depends on the load (``benchmarks/page_first_table.py`` measures it on the demo release).
"""

from __future__ import annotations

import csv
import io
import itertools
import os
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, ConsoleMessage, Page

from service.app import create_app
from tests.browser import NEEDS_CHROMIUM, chromium, served
from tests.tables_release import TABLES, publish

pytestmark = NEEDS_CHROMIUM
# three variables (a heat map), and areas of fewer than 2000 persons withheld when judged on their own
RULES = TABLES + "  min_population: 2000\n"
SHOTS = Path(os.environ.get("CUBEGUARD_SHOTS", "/tmp/shots39"))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service for a freshly published tiny release, on a free local port."""
    app = create_app(publish(tmp_path_factory.mktemp("builder"), tables=RULES))
    yield from served(app)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from chromium("MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")


@pytest.fixture
def errors() -> list[str]:
    return []


def _open(browser: Browser, base: str, errors: list[str], path: str = "/") -> Page:
    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 900}, accept_downloads=True)
    tab = context.new_page()
    tab.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    tab.on("requestfailed", lambda req: errors.append(f"request failed: {req.url} {req.failure}"))
    tab.on("console", lambda msg: _console(msg, errors))
    tab.goto(path)
    tab.wait_for_function("document.body.dataset.ready === '1'", timeout=30_000)
    return tab


@pytest.fixture
def page(browser: Browser, base: str, errors: list[str]) -> Iterator[Page]:
    tab = _open(browser, base, errors)
    yield tab
    tab.context.close()


def _console(msg: ConsoleMessage, errors: list[str]) -> None:
    url = msg.location.get("url", "")
    expected = msg.text.startswith("Failed to load resource: the server responded with a status of 422 ")
    if msg.type == "error" and not (expected and "/api/table?" in url):
        errors.append(f"console: {msg.text} ({url})")


def _wait(page: Page) -> str:
    page.wait_for_function('["answered", "refused", "empty"].includes(document.body.dataset.state)', timeout=30_000)
    return str(page.evaluate("document.body.dataset.state"))


def _show(page: Page, variables: dict[str, str], mean: str = "", per_area: bool = False) -> str:
    for var in ("GEO", "SEX", "AGE"):
        page.select_option(f"#var-{var}", variables.get(var, ""))
    page.select_option("#mean", mean)
    page.set_checked("#per-area", per_area)
    page.click("#show")
    return _wait(page)


def _api(page: Page, **params: str) -> dict[str, Any]:
    answer = page.request.get("/api/table", params={"population": "total", **params})
    assert answer.ok, answer.text()
    body: dict[str, Any] = answer.json()
    return body


def _label(body: dict[str, Any], dim: str, code: str) -> str:
    return str(body["dimension"][dim]["category"]["label"].get(code) or code)


def _mean(v: float | None) -> str:
    if v is None:
        return "–"
    return str(int(v)) if v.is_integer() else str(Decimal(v).quantize(Decimal("0.1"), ROUND_HALF_UP))


def _pivot(body: dict[str, Any], rows: list[str], cols: list[str], pages: dict[str, str]) -> list[list[str]]:
    """The table the page should draw: row labels, then per column tuple its count (and mean)."""
    dims, size = body["id"], body["size"]
    codes = {d: body["dimension"][d]["category"]["index"] for d in dims}
    means = body["extension"].get("mean", {}).get("value")
    col_t = list(itertools.product(*(range(size[dims.index(d)]) for d in cols)))
    out = []
    for rt in itertools.product(*(range(size[dims.index(d)]) for d in rows)):
        line = [_label(body, d, codes[d][i]) for d, i in zip(rows, rt, strict=True)]
        for ct in col_t:
            pos = dict(zip(rows, rt, strict=True)) | dict(zip(cols, ct, strict=True))
            pos |= {d: codes[d].index(c) for d, c in pages.items()}
            flat = int(np.ravel_multi_index([pos[d] for d in dims], size))
            v = body["value"][flat]
            line.append("–" if v is None else f"{v:,}")
            if means is not None:
                line.append("–" if v is None else _mean(means[flat]))
        out.append(line)
    return out


def _drawn(page: Page) -> list[list[str]]:
    return list(
        page.eval_on_selector_all("#cells tbody tr", "trs => trs.map(tr => [...tr.cells].map(c => c.textContent))")
    )


def test_a_table_built_pivoted_and_charted_matches_the_api(page: Page, errors: list[str]) -> None:
    assert _show(page, {"GEO": "GEO.2", "SEX": "SEX", "AGE": "AGE.L"}) == "answered"
    body = _api(page, breakdowns="GEO.2,SEX,AGE.L")
    # the default layout: rows, columns, then a page of the third variable
    assert _drawn(page) == _pivot(body, ["GEO.2"], ["SEX"], {"AGE.L": "T"})
    # pivot: age in the columns, sex on the page, its second category
    page.select_option("#role-SEX", "pages")
    page.select_option("#role-AGE", "cols")
    page.select_option("#page-SEX", "2")
    assert _drawn(page) == _pivot(body, ["GEO.2"], ["AGE.L"], {"SEX": "2"})
    heads = page.eval_on_selector_all("#cells thead th", "ths => ths.map(th => th.textContent)")
    ages = [_label(body, "AGE.L", c) for c in body["dimension"]["AGE.L"]["category"]["index"]]
    assert heads == ["GEO", *ages] and "Females" in page.text_content("#cells caption")
    assert page.get_attribute("#cells tbody tr:first-child", "class") == "total"  # the country total
    assert page.eval_on_selector("#cells tbody tr:first-child th", "th => getComputedStyle(th).fontWeight") == "700"
    # a heat map with labels and a colour legend for three variables
    assert page.get_attribute("#chart-svg", "data-kind") == "heatmap"
    assert page.locator("#chart-svg rect").count() == 3 * 3  # bottom areas by bottom age groups
    labels = page.eval_on_selector_all("#chart-svg text", "ts => ts.map(t => t.textContent)")
    assert {"Y_LT15", "Y15-64", "A1", "B1"} <= set(labels)
    assert page.is_visible("#chart-legend .ramp") and "Count of persons" in page.text_content("#chart-legend")
    assert page.text_content("#chart-svg title")
    note = page.text_content("#note")
    assert "Differences between tables" in note and "never exact" in note and "sum of its parts" in note
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / "builder-pivot-heatmap.png", full_page=True)
    assert errors == []


def test_two_variables_are_grouped_bars_with_a_legend_and_means_beside_counts(page: Page, errors: list[str]) -> None:
    assert _show(page, {"GEO": "GEO.2", "SEX": "SEX"}, mean="age") == "answered"
    body = _api(page, breakdowns="GEO.2,SEX", mean="age")
    assert _drawn(page) == _pivot(body, ["GEO.2"], ["SEX"], {})
    last = page.eval_on_selector_all("#cells thead tr:last-child th", "ths => ths.map(th => th.textContent)")
    assert last == ["GEO", "Count", "Mean", "Count", "Mean", "Count", "Mean"]
    assert page.get_attribute("#chart-svg", "data-kind") == "grouped-bar"
    assert page.locator("#chart-svg rect").count() == 3 * 2
    assert page.eval_on_selector_all("#chart-legend .item", "xs => xs.map(x => x.textContent)") == ["Males", "Females"]
    page.screenshot(path=SHOTS / "builder-grouped-bars-means.png", full_page=True)
    assert errors == []


def test_a_withheld_area_is_greyed_with_its_rule_in_words(page: Page, errors: list[str]) -> None:
    assert _show(page, {"GEO": "GEO.2", "SEX": "SEX"}, per_area=True) == "answered"
    body = _api(page, breakdowns="GEO.2,SEX", per_area="true")
    withheld = {w["code"]: w["rule"] for w in body["extension"]["withheld"]}
    assert withheld == {"B": "min_population", "B1": "min_population"}
    items = page.eval_on_selector_all("#withheld-list li", "lis => lis.map(li => [li.dataset.code, li.textContent])")
    assert [code for code, _ in items] == list(withheld)
    assert all("its total is below 2000 persons" in text for _, text in items)
    assert _drawn(page) == _pivot(body, ["GEO.2"], ["SEX"], {})
    grey = page.eval_on_selector_all("#cells tbody th.withheld", "ths => ths.map(th => th.dataset.code)")
    assert grey == ["B", "B1"]
    assert "its total is below 2000" in str(page.get_attribute("#cells td.withheld >> nth=0", "title"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / "withheld-area.png", full_page=True)
    assert errors == []


def test_a_refusal_shows_the_servers_message(page: Page, errors: list[str]) -> None:
    page.select_option("#filter-level", "GEO.2")
    page.select_option("#filter-code", "B1")
    assert _show(page, {"SEX": "SEX"}) == "refused"
    refusal = page.request.get("/api/table", params={"breakdowns": "SEX", "filter": "GEO.2:B1"})
    assert refusal.status == 422
    assert page.text_content("#refusal-rule") == refusal.json()["rule"] == "min_population"
    assert page.text_content("#refusal-message") == refusal.json()["message"]
    assert page.locator("#cells, #chart-svg").count() == 0 and page.is_hidden("#downloads")
    assert errors == []


def test_a_ready_made_cube_opens_in_the_builder(page: Page, errors: list[str]) -> None:
    listed = page.request.get("/api/cubes").json()
    assert [c["id"] for c in listed] == ["c1", "c2", "hh"]
    assert page.eval_on_selector_all("#cube-list button", "bs => bs.map(b => b.dataset.cube)") == ["c1", "c2", "hh"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / "ready-made-list.png", full_page=True)
    page.click("#cube-list button[data-cube=hh]")
    assert _wait(page) == "answered"
    body = _api(page, breakdowns="GEO.2", population="households")
    assert page.input_value("#population") == "households" and page.input_value("#var-GEO") == "GEO.2"
    assert _drawn(page) == _pivot(body, ["GEO.2"], [], {})
    assert page.get_attribute("#chart-svg", "data-kind") == "bar"
    page.click("#cube-list button[data-cube=c1]")
    assert _wait(page) == "answered"
    body = _api(page, breakdowns="GEO.2,SEX,AGE.M")
    assert _drawn(page) == _pivot(body, ["GEO.2"], ["SEX"], {"AGE.M": "T"})
    page.screenshot(path=SHOTS / "ready-made-opened.png", full_page=True)
    assert errors == []


def test_a_shared_url_reproduces_the_table(page: Page, browser: Browser, base: str, errors: list[str]) -> None:
    assert _show(page, {"GEO": "GEO.1", "SEX": "SEX", "AGE": "AGE.L"}, mean="") == "answered"
    page.select_option("#role-GEO", "pages")
    page.select_option("#role-AGE", "rows")
    page.select_option("#page-GEO", "A")
    url = page.evaluate("location.href")
    assert page.get_attribute("#share", "href") == url
    drawn = _drawn(page)
    shared = _open(browser, base, errors, url.removeprefix(base))
    try:
        assert _wait(shared) == "answered"
        assert (
            _drawn(shared)
            == drawn
            == _pivot(_api(page, breakdowns="GEO.1,SEX,AGE.L"), ["AGE.L"], ["SEX"], {"GEO.1": "A"})
        )
        assert shared.input_value("#role-GEO") == "pages" and shared.input_value("#page-GEO") == "A"
        first = shared.evaluate("Number(document.body.dataset.firstTable)")
        print(f"\ntime to first table (navigation start to the drawn table, shared URL): {first} ms")
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / "time-to-first-table.txt").write_text(f"{first} ms from navigation start, shared URL, tiny release\n")
    finally:
        shared.context.close()
    cold = _open(
        browser, base, errors, "/#breakdowns=AGE.M&population=total&filter=SEX%3A2"
    )  # a table not asked before
    try:
        assert _wait(cold) == "answered" and cold.input_value("#filter-code") == "2"
        first = cold.evaluate("Number(document.body.dataset.firstTable)")
        print(f"time to first table (a shared URL of a table not asked before): {first} ms")
        with (SHOTS / "time-to-first-table.txt").open("a") as notes:
            notes.write(f"{first} ms from navigation start, shared URL of a table not asked before\n")
    finally:
        cold.context.close()
    assert errors == []


def test_a_shared_url_asks_only_its_table(browser: Browser, base: str, errors: list[str]) -> None:
    """The release, variables and cubes come inside the page: a shared URL costs one round trip, its table.

    The URL lists its breakdowns in another order than the form's (sex before the geography), so
    the table asked first, as the page starts, is the one drawn (not asked again in the form's order).
    """
    asked: list[str] = []
    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.on("request", lambda req: asked.append(req.url.removeprefix(base)))
    tab.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    try:
        tab.goto("/#breakdowns=SEX%2CGEO.2&population=total&mean=age")
        assert _wait(tab) == "answered"
        assert [url for url in asked if url.startswith("/api/")] == [
            "/api/table?breakdowns=SEX%2CGEO.2&population=total&mean=age"
        ]
        body = _api(tab, breakdowns="SEX,GEO.2", mean="age")
        assert body["id"] == ["SEX", "GEO.2"] and _drawn(tab) == _pivot(body, ["GEO.2"], ["SEX"], {})
        assert tab.evaluate("performance.getEntriesByName('first-table').length") == 1
        assert tab.locator("#cube-list button").count() == 3 and tab.locator("#population option").count() == 2
    finally:
        context.close()
    assert errors == []


def test_csv_and_xlsx_downloads_hold_the_apis_cells(page: Page, errors: list[str], tmp_path: Path) -> None:
    assert _show(page, {"GEO": "GEO.2", "SEX": "SEX"}, mean="age", per_area=True) == "answered"
    body = _api(page, breakdowns="GEO.2,SEX", mean="age", per_area="true")
    assert body["extension"]["withheld"]
    dims = body["id"]
    cells = itertools.product(*(body["dimension"][d]["category"]["index"] for d in dims))
    expected = [
        [x for d, c in zip(dims, codes, strict=True) for x in (c, _label(body, d, c))] + [v, m]
        for codes, v, m in zip(cells, body["value"], body["extension"]["mean"]["value"], strict=True)
    ]
    header = ["GEO.2", "GEO.2.label", "SEX", "SEX.label", "count", "mean"]
    saved = {}
    for fmt in ("csv", "xlsx"):
        with page.expect_download() as download:
            page.click(f"#download-{fmt}")
        saved[fmt] = tmp_path / download.value.suggested_filename
        download.value.save_as(saved[fmt])
    assert saved["csv"].name == "GEO_2-SEX.csv" and saved["xlsx"].name == "GEO_2-SEX.xlsx"
    plain = list(csv.reader(io.StringIO(saved["csv"].read_text())))
    assert plain[0] == header
    read = [[*row[:4], int(row[4]) if row[4] else None, float(row[5]) if row[5] else None] for row in plain[1:]]
    assert read == expected
    sheet = openpyxl.load_workbook(saved["xlsx"], read_only=True).worksheets
    assert len(sheet) == 1
    width = len(header)  # the reader leaves out a row's trailing empty cells
    cells_read = [[*r, *[None] * (width - len(r))] for r in sheet[0].iter_rows(values_only=True)]
    assert cells_read == [header, *expected]
    assert errors == []


def test_keyboard_alone_builds_a_table(page: Page, errors: list[str]) -> None:
    page.focus("#var-GEO")
    page.keyboard.press("ArrowDown")  # GEO.1
    page.focus("#show")
    page.keyboard.press("Enter")
    assert _wait(page) == "answered"
    assert page.input_value("#var-GEO") == "GEO.1" and page.locator("#cells tbody tr").count() == 3
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.id || document.activeElement.tagName")
    assert focused  # focus moves on to the next control
    assert errors == []


def test_axe_finds_no_serious_or_critical_violation(page: Page, errors: list[str]) -> None:
    axe = Axe()
    found: dict[str, list[str]] = {}
    for state in ("ready", "heatmap", "withheld", "refused"):
        if state == "heatmap":
            assert _show(page, {"GEO": "GEO.2", "SEX": "SEX", "AGE": "AGE.L"}, mean="") == "answered"
        elif state == "withheld":
            assert _show(page, {"GEO": "GEO.2", "SEX": "SEX"}, mean="age", per_area=True) == "answered"
        elif state == "refused":
            assert _show(page, {"GEO": "GEO.2", "SEX": "SEX", "AGE": "AGE.M"}, mean="age") == "refused"
        results = axe.run(page)
        bad = [v for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
        found[state] = [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}" for v in bad]
    assert found == {"ready": [], "heatmap": [], "withheld": [], "refused": []}
    assert errors == []
