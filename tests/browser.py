"""Debian's Chromium driven by Playwright, offline, for the browser tests (never a downloaded browser)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium binary on PATH; install Debian's: apt-get install -y chromium"
)
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"]  # fmt: skip


def chromium(resolver_rules: str = "MAP * ~NOTFOUND") -> Iterator[Browser]:
    """A launched Chromium where hosts resolve by ``resolver_rules`` (default: none at all), closed after."""
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=[*FLAGS, f"--host-resolver-rules={resolver_rules}"])
        yield launched
        launched.close()
