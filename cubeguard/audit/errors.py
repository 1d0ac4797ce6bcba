"""The one error of the audit store: a store that cannot be opened, read or appended to."""

from cubeguard.errors import CubeguardError


class AuditStoreError(CubeguardError):
    """The audit store cannot be used as asked; the message says what to change."""
