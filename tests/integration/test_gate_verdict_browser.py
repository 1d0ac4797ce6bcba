"""The terminal, the report and the Data Docs give one gate verdict, read in a real browser.

Two tiny releases run with ``cubeguard release`` as a user runs it: one passes its gates with
warnings (the cell key method's report-only additivity check fails), one is blocked (a Hellinger
bound of 0). Playwright drives Debian's Chromium over the written pages, offline: the report's
verdict line and every cube's Data Docs status must say what the terminal said, and full-page
screenshots of both pages must not be blank. Skipped, saying so, without Chromium.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from playwright.sync_api import Browser, Page

from tests.browser import NEEDS_CHROMIUM, chromium
from tests.conftest import TINY_CONFIG, tiny_microdata

pytestmark = [pytest.mark.prefect, pytest.mark.slow, NEEDS_CHROMIUM]
PASSING = "gates: {forbidden_values: [1, 2]}"
BLOCKING = "gates: {forbidden_values: [1, 2], max_hellinger: 0.0}"


def release(folder: Path, gates: str) -> subprocess.CompletedProcess[str]:
    """``cubeguard release`` of TINY_CONFIG with ``gates`` in ``folder``."""
    (folder / "data").mkdir(parents=True)
    tiny_microdata().to_parquet(folder / "data" / "persons.parquet")
    assert PASSING in TINY_CONFIG
    (folder / "tiny.yaml").write_text(TINY_CONFIG.replace(PASSING, gates))
    env = {**os.environ, "PREFECT_HOME": str(folder / ".prefect"), "COLUMNS": "200"}
    env.pop("PREFECT_API_URL", None)
    return subprocess.run([sys.executable, "-m", "cli.main", "release", "tiny.yaml", "--release-id", "r1"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from chromium()  # offline: every host resolves to nothing


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


def statuses(page: Page, gates: Path) -> dict[str, str]:
    """Each Data Docs validation's status ("Succeeded" or "Failed"), read from its rendered page.

    Keys: the cube ids (the cube suite) and ``_measures`` (the measures table, where the distance
    bounds are checked for every cube at once).
    """
    found = {}
    for path in sorted((gates / "validations").rglob("release-*.html")):
        page.goto(path.as_uri())
        status = page.locator("span.h6", has_text="Status:").locator("xpath=..").inner_text()
        found[path.stem.removeprefix("release-")] = "Failed" if "Failed" in status else "Succeeded"
    return found


def not_blank(png: bytes) -> bool:
    pixels = (imread(io.BytesIO(png))[..., :3] * 255).astype(np.uint8)
    return len(np.unique(pixels.reshape(-1, 3), axis=0)) > 20


def test_a_release_that_passes_with_warnings_says_passed_everywhere(tmp_path: Path, page: Page) -> None:
    run = release(tmp_path, PASSING)
    assert run.returncode == 0, run.stderr
    assert "Gates passed (" in run.stdout and "warning(s)" in run.stdout  # the additivity warnings
    page.goto((tmp_path / "out" / "report" / "report.html").as_uri())
    verdict = page.locator("#gates-section ~ p").first
    assert verdict.get_attribute("class") == "status-pass", verdict.inner_text()
    assert "blocking gate(s) passed" in verdict.inner_text() and "reported only" in verdict.inner_text()
    assert not_blank(page.screenshot(path=tmp_path / "report.png", full_page=True))
    docs = statuses(page, tmp_path / "out" / "internal" / "gates")
    assert docs == {"c1": "Succeeded", "c2": "Succeeded", "hh": "Succeeded"}  # no measures gate is set
    assert not_blank(page.screenshot(path=tmp_path / "data-docs.png", full_page=True))


def test_a_blocked_release_says_blocked_everywhere(tmp_path: Path, page: Page) -> None:
    run = release(tmp_path, BLOCKING)
    assert run.returncode == 1, run.stderr
    said = " ".join(run.stderr.split())
    assert "Release blocked by its gates" in said and "blocking gate check(s) failed" in said
    page.goto((tmp_path / "out" / "report" / "report.html").as_uri())
    verdict = page.locator("#gates-section ~ p").first
    assert verdict.get_attribute("class") == "status-fail", verdict.inner_text()
    assert not_blank(page.screenshot(path=tmp_path / "report.png", full_page=True))
    docs = statuses(page, tmp_path / "out" / "internal" / "gates")
    assert docs["_measures"] == "Failed"  # the Hellinger bound of 0, checked on the measures table
    assert {docs[c] for c in ("c1", "c2", "hh")} == {"Succeeded"}  # their own checks pass
    page.goto(next((tmp_path / "out" / "internal" / "gates" / "validations").rglob("release-_measures.html")).as_uri())
    assert not_blank(page.screenshot(path=tmp_path / "data-docs.png", full_page=True))
    assert not (tmp_path / "out" / "published" / "r1").exists()
