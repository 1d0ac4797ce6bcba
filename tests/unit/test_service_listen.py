"""The workers' listening socket: its connections are TCP with Nagle's algorithm off (service.listen)."""

from __future__ import annotations

import asyncio
import socket

import pytest
import uvicorn

from service.listen import tcp_listener


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
