"""The client a query is counted and logged for: the peer, or what a trusted proxy forwarded."""

from __future__ import annotations

import pytest

from service.clients import MAX_CLIENT, client_of, networks

PROXY = networks(["10.0.0.0/8", "2001:db8::/32"])


@pytest.mark.parametrize(
    ("peer", "forwarded", "trusted", "client"),
    [
        ("127.0.0.1", ["6.6.6.6"], (), "127.0.0.1"),  # nothing trusted: uvicorn's loopback default is not ours
        ("203.0.113.9", ["6.6.6.6"], PROXY, "203.0.113.9"),  # a peer that is no proxy cannot forward
        ("10.0.0.2", ["6.6.6.6, 203.0.113.7"], PROXY, "203.0.113.7"),  # the left part is the client's own
        ("10.0.0.2", ["6.6.6.6", "203.0.113.7, 10.3.3.3"], PROXY, "203.0.113.7"),  # headers joined, proxies skipped
        ("2001:db8::1", ["2001:db8::2, 198.51.100.4"], PROXY, "198.51.100.4"),
        ("10.0.0.2", [], PROXY, "10.0.0.2"),  # a proxy's own request
        ("10.0.0.2", ["10.0.0.3, 10.0.0.4"], PROXY, "10.0.0.3"),  # only proxies: the farthest
        ("10.0.0.2", ["x" * 500], PROXY, "x" * MAX_CLIENT),  # garbage from a proxy: kept, cut
        (None, ["6.6.6.6"], PROXY, "unknown"),
    ],
)
def test_the_client_of_a_request(peer: str | None, forwarded: list[str], trusted: tuple, client: str) -> None:  # type: ignore[type-arg]
    assert client_of(peer, forwarded, trusted) == client
