"""The audit store: one hash-chained, append-only record per release attempt.

``AuditStore`` keeps the records (SQLite by default, PostgreSQL by URL), ``AuditRecord`` is what
one attempt did, and ``verify`` checks the chain and the published files against their checksums.
The store is the only place secret parameter values are kept.
"""

from cubeguard.audit.errors import AuditStoreError
from cubeguard.audit.record import (
    AuditRecord,
    canonical_json,
    code_version,
    library_versions,
    sha256_file,
    tree_checksums,
    utc_now,
)
from cubeguard.audit.store import GENESIS, AuditStore, StoredRecord, chain_hash
from cubeguard.audit.verify import VerifyReport, verify

__all__ = [
    "GENESIS",
    "AuditRecord",
    "AuditStore",
    "AuditStoreError",
    "StoredRecord",
    "VerifyReport",
    "canonical_json",
    "chain_hash",
    "code_version",
    "library_versions",
    "sha256_file",
    "tree_checksums",
    "utc_now",
    "verify",
]
