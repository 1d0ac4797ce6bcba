"""The browser tests' Chromium (:mod:`cubeguard.testing.browser`), skipped without one, and a served app."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cubeguard.testing.browser import CHROMIUM, chromium

__all__ = ["CHROMIUM", "NEEDS_CHROMIUM", "chromium", "served"]

NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium binary on PATH; install Debian's: apt-get install -y chromium"
)


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
