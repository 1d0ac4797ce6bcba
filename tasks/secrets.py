"""Resolve Prefect Secret blocks for the core (which never imports Prefect itself)."""

from __future__ import annotations

from prefect.blocks.system import Secret

from cubeguard.errors import CubeguardError


def read_prefect_secret(block: str) -> str:
    """The value of the Prefect Secret block named ``block`` (one clear sentence if absent)."""
    try:
        return str(Secret.load(block).get())
    except ValueError:
        raise CubeguardError(f"no Prefect Secret block named {block!r}; create it or use {{env: NAME}}") from None
