"""Who asks: the client address the rate limit and the query log key on.

By default the socket's peer, whatever headers say: ``X-Forwarded-For`` is written by the client
unless a proxy replaces it, so trusting it lets anyone pick a fresh address per query. Behind a
reverse proxy, ``tables.trusted_proxies`` names it (addresses or networks); then, and only for a
request whose peer is one of them, the client is the rightmost address of ``X-Forwarded-For`` that
is not a trusted proxy (each proxy appends the address it saw, so everything to the right of that
entry was written by a trusted proxy, and everything to its left may be forged).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_CLIENT = 64  # characters of a client as logged and limited


def networks(trusted: Iterable[str]) -> tuple[Network, ...]:
    """The trusted proxies as networks (a single address is a network of one)."""
    return tuple(ipaddress.ip_network(t, strict=False) for t in trusted)


def client_of(peer: str | None, forwarded: Sequence[str], trusted: Sequence[Network]) -> str:
    """The client of a request from ``peer`` with ``X-Forwarded-For`` header values ``forwarded``.

    >>> proxy = networks(["10.0.0.0/8"])
    >>> client_of("10.0.0.2", ["6.6.6.6, 203.0.113.7, 10.0.0.5"], proxy)
    '203.0.113.7'
    >>> client_of("203.0.113.9", ["1.2.3.4"], proxy)  # not from the proxy: the header is ignored
    '203.0.113.9'
    """
    if peer is None:
        return "unknown"
    if not trusted or not _is_trusted(peer, trusted):
        return peer[:MAX_CLIENT]
    hops = [hop.strip() for value in forwarded for hop in value.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _is_trusted(hop, trusted):
            return hop[:MAX_CLIENT]
    return (hops[0] if hops else peer)[:MAX_CLIENT]  # every hop a trusted proxy: the farthest one


def _is_trusted(address: str, trusted: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False  # not an address (a name, garbage): never a trusted proxy
    return any(ip in net for net in trusted)
