"""Run the service's worker processes on one listening socket whose connections send at once.

uvicorn's ``--workers N`` binds the listening socket itself, with ``proto`` left at 0. An accepted
connection takes its listener's ``proto``, and asyncio turns Nagle's algorithm off
(``TCP_NODELAY``) only on a connection whose ``proto`` is ``IPPROTO_TCP``; so with two workers
every answer on a kept-alive connection after the first waited for the client's delayed ACK:
44 ms for ``GET /api/release`` against 1 ms with one worker (uvicorn issue #3149, open for
uvicorn 0.54). Here the socket uvicorn binds is labelled TCP before the workers get it, so
asyncio sets ``TCP_NODELAY`` on every connection, as it does for one worker.
"""

from __future__ import annotations

import contextlib
import socket

import uvicorn
from uvicorn.supervisors import Multiprocess


def tcp_listener(config: uvicorn.Config) -> socket.socket:
    """``config``'s listening socket, bound as uvicorn binds it, with ``proto`` ``IPPROTO_TCP``."""
    bound = config.bind_socket()
    if bound.family not in (socket.AF_INET, socket.AF_INET6) or bound.proto == socket.IPPROTO_TCP:
        return bound
    listener = socket.socket(bound.family, bound.type, socket.IPPROTO_TCP, fileno=bound.detach())
    listener.set_inheritable(True)
    return listener


def run_workers(app: str, host: str, port: int, workers: int) -> None:
    """Serve ``app`` (an import string) in ``workers`` processes on ``host:port`` until interrupted."""
    config = uvicorn.Config(app, host=host, port=port, workers=workers, log_level="warning", proxy_headers=False)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops the workers, as uvicorn.run does
        Multiprocess(config, sockets=[tcp_listener(config)]).run()
