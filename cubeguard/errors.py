"""The two kinds of failure cubeguard distinguishes.

A :class:`CubeguardError` is something the user can fix (bad config, bad input, infeasible
parameters); its message is one sentence that says what to change. An :class:`InternalError` is a
broken invariant inside cubeguard: a bug to report, never the user's fault.
"""


class CubeguardError(Exception):
    """A mistake the user can correct; the message says what to change."""


class InternalError(Exception):
    """A broken invariant: this is a bug in cubeguard."""
