"""A process-wide progress sink the CLI sets, so tasks can drive its progress bars."""

from __future__ import annotations

from collections.abc import Callable

Sink = Callable[[str, int], None]
_sink: Sink | None = None


def set_sink(sink: Sink | None) -> None:
    """Install (or clear) the callback that receives ``(stage, amount)`` updates."""
    global _sink
    _sink = sink


def report(stage: str, amount: int) -> None:
    """Forward one progress update to the installed sink, if any."""
    if _sink is not None:
        _sink(stage, amount)
