"""Debian's Chromium driven by Playwright, offline, for the browser tests (never a downloaded browser)."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

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


def served(app: Any) -> Iterator[str]:
    """Serve an ASGI ``app`` with uvicorn on a free loopback port in a thread; yield its base URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws="none"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started or not thread.is_alive():
            break
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()
