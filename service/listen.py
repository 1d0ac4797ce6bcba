"""Run the service's worker processes on one listening socket whose connections send at once.

uvicorn's ``--workers N`` binds the listening socket itself, with ``proto`` left at 0. An accepted
connection takes its listener's ``proto``, and asyncio turns Nagle's algorithm off
(``TCP_NODELAY``) only on a connection whose ``proto`` is ``IPPROTO_TCP``; so with two workers
every answer on a kept-alive connection after the first waited for the client's delayed ACK:
44 ms for ``GET /api/release`` against 1 ms with one worker (uvicorn issue #3149, open for
uvicorn 0.54). Here the socket uvicorn binds is labelled TCP before the workers get it, so
asyncio sets ``TCP_NODELAY`` on every connection, as it does for one worker.

On Linux each worker listens on a socket of its own instead (:class:`WorkerListener`, bound with
``SO_REUSEPORT`` when the worker starts), and the kernel spreads new connections over the workers
by their addresses. On one shared socket the worker that woke first accepted every connection
waiting: 20 clients connecting at once were split 20/0, 19/1 or 18/2 in 6 of 10 trials, so most
clients queued behind one worker while the other had little to do. With a socket per worker the
same trials gave 10/10, 10/10, 9/11, 15/5 and 12/8. Two servers of two workers side by side, new
4-way tables of the EU programme at 10M persons in alternating batches of 100 from 20 clients:
the batches' median latencies averaged 108.7 ms against 124.4 ms (lower in 5 of 7 batches after
one to warm up). A worker that stops closes its socket, so no connection is routed to a worker that
is gone; but a worker killed outright closes it only as its process finishes exiting, and the
connections the kernel routes to it until then are reset with those it held. A client may so be
dropped twice: in three runs 20 clients lost 21, 3 and 11 connections (7 of the 21 as resets, the
rest closed unanswered), all within 27 ms of the kill (``tests/integration/test_tables_soak.py``).
Linux can hand the queued ones to another worker (``net.ipv4.tcp_migrate_req=1``, a host setting,
off by default): three runs with it lost 19, 12 and 12, none reset, too few to say more.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

log = logging.getLogger(__name__)


def tcp_listener(config: uvicorn.Config) -> socket.socket:
    """``config``'s listening socket, bound as uvicorn binds it, with ``proto`` ``IPPROTO_TCP``."""
    bound = config.bind_socket()
    if bound.family not in (socket.AF_INET, socket.AF_INET6) or bound.proto == socket.IPPROTO_TCP:
        return bound
    listener = socket.socket(bound.family, bound.type, socket.IPPROTO_TCP, fileno=bound.detach())
    listener.set_inheritable(True)
    return listener


@dataclass(frozen=True)
class WorkerListener:
    """A listening socket that each worker binds for itself, on ``host:port`` with ``SO_REUSEPORT``.

    uvicorn hands its workers the parent's sockets by pickling them; this stands in for one, and
    unpickling it in a worker (:meth:`__reduce__`) binds the worker's own socket, labelled TCP.
    """

    host: str
    port: int
    backlog: int

    def __reduce__(self) -> tuple[Any, tuple[str, int, int]]:
        return (listen_in_worker, (self.host, self.port, self.backlog))


def listen_in_worker(host: str, port: int, backlog: int) -> socket.socket:
    """This process's listening socket on ``host:port``, shared with the other workers' by ``SO_REUSEPORT``.

    A worker that cannot bind it ends with uvicorn's startup-failure code, so the parent stops
    rather than starting it again and again.
    """
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind((host, port))
        listener.listen(backlog)
    except OSError as exc:
        listener.close()
        log.error("a worker cannot listen on %s:%s (%s)", host, port, exc.strerror)
        sys.exit(STARTUP_FAILURE)
    return listener


def listeners(config: uvicorn.Config) -> list[Any]:
    """What the workers listen on: a socket each on Linux (:class:`WorkerListener`), else one they share."""
    if sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT"):
        return [WorkerListener(config.host, config.port, config.backlog)]
    return [tcp_listener(config)]


def run_workers(app: str, host: str, port: int, workers: int) -> None:
    """Serve ``app`` (an import string) in ``workers`` processes on ``host:port`` until interrupted."""
    config = uvicorn.Config(app, host=host, port=port, workers=workers, log_level="warning", proxy_headers=False)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops the workers, as uvicorn.run does
        Multiprocess(config, sockets=listeners(config)).run()
