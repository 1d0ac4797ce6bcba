"""The workers' listening sockets: TCP with Nagle's algorithm off, one per worker on Linux (service.listen)."""

from __future__ import annotations

import asyncio
import pickle
import socket

import pytest
import uvicorn
from uvicorn.config import STARTUP_FAILURE

from service.listen import WorkerListener, listen_in_worker, tcp_listener


def _nodelay_of_accepted(listener: socket.socket) -> int:
    """TCP_NODELAY of a connection an asyncio server on ``listener`` accepts (as a uvicorn worker does)."""
    seen: list[int] = []

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def accept_one() -> None:
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(200):
            if seen:
                break
            await asyncio.sleep(0.01)
        writer.close()
        server.close()
        await server.wait_closed()

    asyncio.run(accept_one())
    assert seen, "no connection was accepted"
    return seen[0]


@pytest.fixture
def config() -> uvicorn.Config:
    return uvicorn.Config("service.main:app", host="127.0.0.1", port=0, workers=2)


def test_accepted_connections_have_tcp_nodelay(config: uvicorn.Config) -> None:
    listener = tcp_listener(config)
    assert listener.proto == socket.IPPROTO_TCP
    assert listener.get_inheritable()  # the workers inherit it
    assert _nodelay_of_accepted(listener) != 0


def test_uvicorns_own_socket_is_what_the_fix_is_for(config: uvicorn.Config) -> None:
    """uvicorn 0.54's bound socket leaves Nagle on (issue #3149): the check above can fail.

    When uvicorn labels its socket TCP itself this test fails, and service.listen can go.
    """
    assert _nodelay_of_accepted(config.bind_socket()) == 0


@pytest.mark.skipif(not hasattr(socket, "SO_REUSEPORT"), reason="SO_REUSEPORT is Linux's and BSD's")
def test_a_worker_listener_is_bound_where_it_is_unpickled() -> None:
    # uvicorn pickles the sockets it hands its workers: the stand-in binds a socket of the worker's own
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stand_in = WorkerListener("127.0.0.1", port, 64)
    with pickle.loads(pickle.dumps(stand_in)) as first:
        with pickle.loads(pickle.dumps(stand_in)) as second:
            for listener in (first, second):  # both on the port at once
                assert listener.getsockname() == ("127.0.0.1", port)
                assert listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
                assert listener.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
                assert listener.proto == socket.IPPROTO_TCP
        assert _nodelay_of_accepted(first) != 0  # the second closed: its connections come to the first


def test_a_worker_that_cannot_listen_ends_with_uvicorns_startup_failure() -> None:
    with socket.socket() as taken:  # bound without SO_REUSEPORT: nobody else may listen there
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(SystemExit) as ended:
            listen_in_worker("127.0.0.1", taken.getsockname()[1], 64)
    assert ended.value.code == STARTUP_FAILURE  # uvicorn's parent stops instead of restarting it
