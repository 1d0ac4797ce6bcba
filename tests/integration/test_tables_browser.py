"""The flexible-table page (``service/page.html``) works in a real browser against a real (tiny) release.

Playwright drives Debian's Chromium (``apt-get install -y chromium``; Playwright never downloads a
browser here) against the service run by uvicorn on 127.0.0.1; every other host resolves to
nothing. Checked: the table (labels in rows and columns), chart and CSV download equal the API's
answer to the same query; a refused query shows the API's rule and message; full-page screenshots
show the bars' and the refusal's colours; and the page raises no script errors. The builder's
pivots, pages, areas, ready-made cubes, shared URLs, XLSX and accessibility are in
``test_tables_builder_browser.py``. Skipped, saying so, without Chromium.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.image import imread
from numpy.typing import NDArray
from playwright.sync_api import APIResponse, Browser, ConsoleMessage, Page

from service.app import create_app
from tests.browser import NEEDS_CHROMIUM, chromium, served
from tests.tables_release import TABLES, publish

pytestmark = NEEDS_CHROMIUM
# at most two variables, so the page can break a rule: three variables, or two and a restriction
RULES = TABLES.replace("max_dimensions: 3", "max_dimensions: 2")
BAR = (31, 119, 180)  # the first series' colour (#1f77b4)
REFUSAL_BG = (253, 236, 234)  # #fdecea


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service for a freshly published tiny release, on a free local port."""
    assert RULES != TABLES
    app = create_app(publish(tmp_path_factory.mktemp("tables"), tables=RULES))
    yield from served(app)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from chromium("MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")  # the service on 127.0.0.1 only


@pytest.fixture
def errors() -> list[str]:
    return []


@pytest.fixture
def page(browser: Browser, base: str, errors: list[str]) -> Iterator[Page]:
    """The page, loaded and ready; its script errors and console errors go to ``errors``."""
    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 900}, accept_downloads=True)
    tab = context.new_page()
    tab.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    tab.on("requestfailed", lambda req: errors.append(f"request failed: {req.url} {req.failure}"))
    tab.on("console", lambda msg: _console(msg, errors))
    tab.goto("/")
    tab.wait_for_function("document.body.dataset.ready === '1'", timeout=30_000)
    yield tab
    context.close()


def _console(msg: ConsoleMessage, errors: list[str]) -> None:
    """Record console errors, except Chromium's notes on the 422 of a refusal and on a missing favicon."""
    url = msg.location.get("url", "")
    expected = msg.text.startswith("Failed to load resource: the server responded with a status of ") and (
        ("/api/table?" in url and "status of 422 " in msg.text) or (url.endswith("/favicon.ico") and "404" in msg.text)
    )
    if msg.type == "error" and not expected:
        errors.append(f"console: {msg.text} ({url})")


def _show(page: Page, variables: dict[str, str], restrict: tuple[str, str] | None = None) -> str:
    """Choose ``variables`` (variable -> level, others none) and a restriction, press Show; the new state."""
    for var in ("GEO", "SEX", "AGE"):
        page.select_option(f"#var-{var}", variables.get(var, ""))
    page.select_option("#filter-level", restrict[0] if restrict else "")
    if restrict:
        page.select_option("#filter-code", restrict[1])
    page.click("#show")  # the state is "asking" until the answer is shown
    page.wait_for_function('["answered", "refused", "empty"].includes(document.body.dataset.state)', timeout=30_000)
    return str(page.evaluate("document.body.dataset.state"))


def _api(page: Page, **params: str) -> APIResponse:
    return page.request.get("/api/table", params={"population": "total", **params})


def _text(v: object) -> str:
    """A cell as the page writes it: "–" for none, thousands separated counts, means as they are."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else str(v)  # the shortest repr, as JavaScript's String()
    return f"{v:,}"


def _bottom(dim: dict[str, Any]) -> list[str]:
    """A JSON-stat dimension's codes without children."""
    return [c for c in dim["category"]["index"] if c not in dim["category"]["child"]]


def _rows(body: dict[str, Any]) -> list[list[str]]:
    """A JSON-stat answer as the page lays it out: the first dimension's labels in the rows, the
    second's (if any) in the columns, and per column the count (and the mean)."""
    first, *rest = body["id"]
    labels = {d: body["dimension"][d]["category"]["label"] for d in body["id"]}
    means = body["extension"].get("mean", {}).get("value")
    width = int(np.prod(body["size"][1:]))
    out = []
    for r, code in enumerate(body["dimension"][first]["category"]["index"]):
        line = [labels[first].get(code) or code]
        for k in range(r * width, (r + 1) * width):
            line += [_text(body["value"][k]), *([_text(means[k])] if means else [])]
        out.append(line)
    assert len(rest) <= 1
    return out


def _pixels(shot: bytes) -> NDArray[np.int_]:
    """A PNG's RGB values, 0 to 255."""
    pixels: NDArray[np.int_] = np.rint(imread(io.BytesIO(shot), format="png")[..., :3] * 255).astype(np.int_)
    return pixels


def _has(pixels: NDArray[np.int_], rgb: tuple[int, int, int]) -> bool:
    return bool(np.any(np.all(np.abs(pixels - np.array(rgb)) <= 3, axis=-1)))


@pytest.mark.parametrize(
    ("variables", "mean", "kind"),
    [({"GEO": "GEO.2", "SEX": "SEX"}, "", "grouped-bar"), ({"SEX": "SEX"}, "age", "bar")],
)
def test_table_and_chart_match_the_api(page: Page, errors: list[str], variables: dict[str, str], mean: str, kind: str) -> None:  # fmt: skip
    page.select_option("#mean", mean)
    assert _show(page, variables) == "answered"
    body = _api(page, breakdowns=",".join(variables.values()), **({"mean": mean} if mean else {})).json()
    shown = page.eval_on_selector_all("#cells tbody tr", "trs => trs.map(tr => [...tr.cells].map(c => c.textContent))")
    assert len(shown) == body["size"][0] > 0
    assert shown == _rows(body)
    headers = page.eval_on_selector_all("#cells thead th", "ths => ths.map(th => th.textContent)")
    if len(body["id"]) == 2:  # labels of the second dimension over the columns
        assert headers == ["GEO", "Total", "Males", "Females"]
    else:
        assert headers == ["SEX", "Count", "Mean"]
    assert page.get_attribute("#chart-svg", "data-kind") == kind
    cells = int(np.prod([len(_bottom(body["dimension"][d])) for d in body["id"][:2]]))
    assert page.locator("#chart-svg rect").count() == cells
    assert page.is_hidden("#refusal")
    assert errors == []


@pytest.mark.parametrize(
    ("variables", "restrict"),
    [({"GEO": "GEO.2", "SEX": "SEX", "AGE": "AGE.M"}, None), ({"GEO": "GEO.1", "SEX": "SEX"}, ("AGE.L", "Y15-64"))],
)
def test_refusal_shows_the_rule_and_message(page: Page, errors: list[str], variables: dict[str, str], restrict: tuple[str, str] | None) -> None:  # fmt: skip
    assert _show(page, variables, restrict) == "refused"
    params = {"breakdowns": ",".join(variables.values())} | ({"filter": ":".join(restrict)} if restrict else {})
    answer = _api(page, **params)
    assert answer.status == 422
    refusal = answer.json()
    assert refusal["rule"] == "max_dimensions"
    assert page.is_visible("#refusal")
    assert page.text_content("#refusal-rule") == refusal["rule"]
    assert page.text_content("#refusal-message") == refusal["message"]
    assert page.is_hidden("#downloads") and page.locator("#chart-svg, #cells").count() == 0
    assert errors == []


def test_downloaded_csv_equals_the_api(page: Page, errors: list[str], tmp_path: Path) -> None:
    assert _show(page, {"GEO": "GEO.2", "AGE": "AGE.L"}, ("SEX", "2")) == "refused"  # three variables
    assert _show(page, {"GEO": "GEO.2", "AGE": "AGE.L"}) == "answered"
    with page.expect_download() as download:
        page.click("#download-csv")
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name == "GEO_2-AGE_L.csv"
    expected = _api(page, breakdowns="GEO.2,AGE.L", format="csv")
    assert expected.ok and expected.body().startswith(b'"GEO.2","GEO.2.label","AGE.L","AGE.L.label","count"')
    assert saved.read_bytes() == expected.body()
    assert errors == []


def test_screenshots_show_the_answer_and_the_refusal(page: Page, errors: list[str], tmp_path: Path) -> None:
    assert _show(page, {"GEO": "GEO.2", "SEX": "SEX"}) == "answered"
    answered = _pixels(page.screenshot(path=tmp_path / "answered.png", full_page=True))
    assert _show(page, {"GEO": "GEO.2", "SEX": "SEX", "AGE": "AGE.L"}) == "refused"
    refused = _pixels(page.screenshot(path=tmp_path / "refused.png", full_page=True))
    for shot in (answered, refused):
        assert shot.shape[1] == 1280 and shot.shape[0] >= 900
        assert len(np.unique(shot.reshape(-1, 3), axis=0)) > 20, "the screenshot is (nearly) blank"
    assert _has(answered, BAR) and not _has(answered, REFUSAL_BG)
    assert _has(refused, REFUSAL_BG) and not _has(refused, BAR)
    assert (tmp_path / "answered.png").stat().st_size > 0 and (tmp_path / "refused.png").stat().st_size > 0
    assert errors == []
