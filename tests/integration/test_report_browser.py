"""The report of a real (tiny) release renders in headless Chromium, offline, without script errors.

Needs Debian's ``chromium`` package (``apt-get install -y chromium``); the test is skipped, saying
so, only when no Chromium binary is on the PATH. Chromium runs with networking cut off (every host
resolves to nothing), so any resource the page tried to fetch would fail and be recorded in
``#js-errors``.
"""

from __future__ import annotations

import html.parser
import io
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

from cubeguard.config import load_release
from cubeguard.pipeline.protection import protect_release
from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
from cubeguard.report.build import build_report
from tests.conftest import TINY_CONFIG, tiny_microdata

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium binary on PATH; install Debian's: apt-get install -y chromium"
)
WIDTH, HEIGHT = 1280, 2000
TITLE = "Tiny release <protection> report"


def _release(folder: Path) -> Path:
    """Tabulate and protect TINY_CONFIG's cubes (cell key method) into ``folder / "out"``."""
    (folder / "data").mkdir(parents=True)
    tiny_microdata().to_parquet(folder / "data" / "persons.parquet")
    (folder / "tiny.yaml").write_text(TINY_CONFIG)
    release = load_release(folder / "tiny.yaml")
    out = release.config.output
    write_tabulation(release, tabulate_release(release), out.original_store)
    protect_release(release, out.original_store, out.protected_store)
    return out.folder


def _chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # offline: nothing may be fetched
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},{HEIGHT}",
        *args,
        page.as_uri(),
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    return run


class _Dom(html.parser.HTMLParser):
    """Image sources, the body's attributes, and the text of ``#js-errors`` and ``<h1>``."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.body: dict[str, str | None] = {}
        self.errors = ""
        self.h1 = ""
        self._in: str | None = None
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "img":
            self.images.append(a.get("src") or "")
        elif tag == "body":
            self.body = a
        if self._in:
            self._depth += 1
        elif a.get("id") == "js-errors":
            self._in, self._depth = "errors", 1
        elif tag == "h1":
            self._in, self._depth = "h1", 1

    def handle_endtag(self, tag: str) -> None:
        if self._in:
            self._depth -= 1
            if self._depth == 0:
                self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "errors":
            self.errors += data
        elif self._in == "h1":
            self.h1 += data


def _dom(page: Path, profile: Path) -> _Dom:
    parsed = _Dom()
    parsed.feed(_chromium(page, profile, "--dump-dom").stdout)
    return parsed


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = _release(tmp_path_factory.mktemp("release"))
    gates = [
        {"gate": "no published 1s and 2s", "passed": True, "value": 0},
        {"gate": "max Hellinger <= 0.001", "passed": False, "value": 0.004, "threshold": 0.001},
    ]
    sweep = pd.DataFrame(
        {"name": ["D=5 V=3", "D=8 V=3"], "risk": [0.12, 0.05], "utility": [0.03, 0.06], "passes": [True, False]}
    )
    return build_report(folder, gates=gates, title=TITLE, sweep=sweep)


def test_page_renders_offline_without_errors(report: Path, tmp_path: Path) -> None:
    dom = _dom(report, tmp_path / "profile")
    assert dom.h1 == TITLE  # escaped in the source, text again in the DOM
    assert dom.body.get("data-js") == "ran", "the page's script did not run"
    assert dom.errors == "", f"script or loading errors: {dom.errors}"
    # three cubes and the pooled programme, three plots each, the R-U map and the drill-down heat-map
    assert len(dom.images) == 3 * 4 + 2
    assert all(src.startswith("data:image/png;base64,") for src in dom.images)


def test_error_recorder_catches_errors(report: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.html"
    text = report.read_text(encoding="utf-8")
    planted = '<img src="data:image/png;base64,AAAA" alt="planted"><script>notDefinedAnywhere();</script></body>'
    broken.write_text(text.replace("</body>", planted), encoding="utf-8")
    dom = _dom(broken, tmp_path / "profile")
    assert "notDefinedAnywhere" in dom.errors and "failed to load <img> planted" in dom.errors


def test_screenshot_shows_the_page(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    _chromium(report, tmp_path / "profile", f"--screenshot={shot}")
    pixels = imread(io.BytesIO(shot.read_bytes()), format="png")[..., :3]
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    assert float(pixels.std()) > 0.05, "the screenshot is (nearly) blank"
    assert float(np.mean(pixels.mean(axis=2) < 0.9)) > 0.01  # some share of the page is not white
