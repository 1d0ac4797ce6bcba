"""Debian's Chromium driven by Playwright, offline, for the browser tests and benchmarks (never a downloaded browser)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"]  # fmt: skip


def chromium(resolver_rules: str = "MAP * ~NOTFOUND") -> Iterator[Browser]:
    """A launched Chromium where hosts resolve by ``resolver_rules`` (default: none at all), closed after."""
    from playwright.sync_api import sync_playwright  # a dev dependency: imported only when a browser is wanted

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=[*FLAGS, f"--host-resolver-rules={resolver_rules}"])
        yield launched
        launched.close()
