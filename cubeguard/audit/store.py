"""The append-only, hash-chained store of audit records (SQLite by default, PostgreSQL by URL).

Each appended record is stored as canonical JSON with ``hash = sha256(prev_hash + json)``, where
``prev_hash`` is the hash of the record before it (64 zeros for the first), so changing, removing
or inserting a record breaks the chain (see :mod:`cubeguard.audit.verify`). Triggers in the
database refuse UPDATE and DELETE, and this class has no method for either.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import ValidationError
from sqlalchemy import insert, or_, select
from sqlalchemy.engine import Connection, RowMapping, make_url
from sqlalchemy.exc import SQLAlchemyError

from cubeguard.audit import schema
from cubeguard.audit.errors import AuditStoreError
from cubeguard.audit.record import AuditRecord, canonical_json
from cubeguard.errors import InternalError

GENESIS = "0" * 64
BATCH = 500
MAX_SHOWN = 5
_table = schema.records


def chain_hash(prev_hash: str, payload: bytes) -> str:
    """The hash of a record: SHA-256 of the previous hash (hex) followed by its canonical JSON."""
    return hashlib.sha256(prev_hash.encode("utf-8", "surrogateescape") + payload).hexdigest()


@dataclass(frozen=True)
class StoredRecord:
    """One row of the store: its place in the chain and the record's canonical JSON text."""

    seq: int
    run_id: str
    attempt: int
    created_at: str
    prev_hash: str
    hash: str
    text: str

    @property
    def payload(self) -> bytes:
        """The exact stored bytes the hash was computed from (invalid UTF-8 preserved)."""
        return self.text.encode("utf-8", "surrogateescape")

    @property
    def record(self) -> AuditRecord:
        """The parsed record.

        Raises:
            AuditStoreError: the stored JSON is not a valid audit record (it was altered).
        """
        try:
            return AuditRecord.model_validate_json(self.payload)
        except (ValidationError, ValueError):
            raise AuditStoreError(
                f"audit record seq {self.seq} is not a valid audit record; run `cubeguard audit verify`"
            ) from None


class AuditStore:
    """An audit store at a SQLAlchemy URL, created on first use when ``create`` is True.

    Raises:
        AuditStoreError: the URL cannot be opened or the database is not an audit store.
    """

    def __init__(self, url: str, create: bool = True) -> None:
        self.url = schema.shown_url(url)
        _refuse_missing_sqlite_file(url, create)
        self._engine = schema.open_engine(url)
        try:
            self._open(url, create)
        except AuditStoreError:
            self._engine.dispose()
            raise

    @classmethod
    def for_path(cls, path: Path | str, create: bool = True) -> AuditStore:
        """A SQLite store in the file ``path`` (its folder created if need be)."""
        file = Path(path).expanduser().resolve()
        if create:
            file.parent.mkdir(parents=True, exist_ok=True)
        return cls(f"sqlite:///{file}", create=create)

    def append(self, record: AuditRecord) -> StoredRecord:
        """Chain ``record`` after the last one, in one transaction no other writer can interleave with."""
        payload = canonical_json(record)
        with self._writing("append the record") as connection:
            schema.lock_for_append(connection)
            last = connection.execute(select(_table.c.hash).order_by(_table.c.seq.desc()).limit(1))
            prev_hash = last.scalar_one_or_none() or GENESIS
            row = {
                "run_id": record.run_id,
                "attempt": record.attempt,
                "created_at": record.finished_at,  # a copy of a hashed field, so verify can check it
                "record": payload.decode("utf-8"),
                "prev_hash": prev_hash,
                "hash": chain_hash(prev_hash, payload),
            }
            key = connection.execute(insert(_table).values(**row)).inserted_primary_key
            if key is None:
                raise InternalError("the database gave no seq for an appended audit record; this is a bug in cubeguard")
        return _stored({"seq": key[0], **row})

    def records(self) -> Iterator[StoredRecord]:
        """Every record in seq order, read in batches so no lock is held between them."""
        after: int | None = None
        while True:
            query = select(_table).order_by(_table.c.seq).limit(BATCH)
            if after is not None:
                query = query.where(_table.c.seq > after)
            with self._reading("read the records") as connection:
                rows = [_stored(row._mapping) for row in connection.execute(query)]
            yield from rows
            if len(rows) < BATCH:
                return
            after = rows[-1].seq

    def latest(self) -> StoredRecord | None:
        """The last record appended, or None for an empty store."""
        query = select(_table).order_by(_table.c.seq.desc()).limit(1)
        with self._reading("read the latest record") as connection:
            row = connection.execute(query).first()
        return None if row is None else _stored(row._mapping)

    def get(self, ref: int | str) -> StoredRecord:
        """The record with seq ``ref`` (an int or digits), or the one whose run id or hash starts with it.

        Raises:
            AuditStoreError: no record matches, or more than one does.
        """
        if isinstance(ref, int) or re.fullmatch(r"[0-9]+", ref):
            return self._by_seq(int(ref))
        if not ref:
            raise AuditStoreError("give a seq number, or the start of a run id or record hash")
        matches = self._by_prefix(ref)
        if not matches:
            raise AuditStoreError(f"no audit record has seq, run id or hash {ref!r}; `cubeguard audit list` shows them")
        if len(matches) > 1:
            shown = "; ".join(
                f"seq {m.seq} run {m.run_id} attempt {m.attempt} hash {m.hash[:12]}" for m in matches[:MAX_SHOWN]
            )
            raise AuditStoreError(
                f"{ref!r} matches several audit records ({shown}{'; ...' if len(matches) > MAX_SHOWN else ''}); "
                "give its seq number or a longer run id or hash prefix"
            )
        return matches[0]

    def missing_guards(self) -> list[str]:
        """Names of append-only triggers that are no longer in the database (someone dropped them)."""
        with self._reading("read its triggers") as connection:
            present = schema.present_guards(connection)
            expected = schema.GUARDS[connection.dialect.name]
        return sorted(set(expected) - present)

    def issued_seq(self) -> int | None:
        """The highest seq ever handed out (SQLite), to detect records removed from the end; else None."""
        with self._reading("read its sequence") as connection:
            return schema.issued_seq(connection)

    def close(self) -> None:
        """Close the store's database connections."""
        self._engine.dispose()

    def __enter__(self) -> AuditStore:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AuditStore({self.url!r})"

    def _open(self, url: str, create: bool) -> None:
        """Check the database is an audit store; create one (taking the write lock) only if need be."""
        with self._reading("be opened") as connection:
            if schema.has_schema(connection, url):
                return
        if not create:
            raise AuditStoreError(f"{self.url} holds no audit store yet; check output.audit_url (or audit --url)")
        with self._writing("be opened") as connection:
            schema.create_schema(connection, url)

    def _by_seq(self, seq: int) -> StoredRecord:
        with self._reading("read the record") as connection:
            row = connection.execute(select(_table).where(_table.c.seq == seq)).first()
        if row is None:
            raise AuditStoreError(f"no audit record has seq {seq}; `cubeguard audit list` shows them")
        return _stored(row._mapping)

    def _by_prefix(self, prefix: str) -> list[StoredRecord]:
        """Up to MAX_SHOWN + 1 records whose run id or hash starts with ``prefix`` (case-sensitive)."""
        hash_prefix = prefix.lower()
        condition = or_(
            _table.c.run_id.startswith(prefix, autoescape=True),
            _table.c.hash.startswith(hash_prefix, autoescape=True),
        )
        found: list[StoredRecord] = []
        with self._reading("look the record up") as connection:
            for row in connection.execute(select(_table).where(condition).order_by(_table.c.seq)):
                stored = _stored(row._mapping)
                if stored.run_id.startswith(prefix) or stored.hash.startswith(hash_prefix):
                    found.append(stored)
                if len(found) > MAX_SHOWN:
                    break
        return found

    @contextmanager
    def _reading(self, action: str) -> Iterator[Connection]:
        with self._failing(action), self._engine.connect() as connection:
            yield connection

    @contextmanager
    def _writing(self, action: str) -> Iterator[Connection]:
        with self._failing(action), self._engine.connect() as connection:
            schema.begin_write(connection)
            with connection.begin():
                yield connection

    @contextmanager
    def _failing(self, action: str) -> Iterator[None]:
        """Turn database errors into one sentence that never shows SQL parameters."""
        try:
            yield
        except SQLAlchemyError as exc:
            raise AuditStoreError(
                f"audit store {self.url} cannot {action}: {schema.reason(exc)}; check output.audit_url (or audit --url)"
            ) from None


def _stored(row: RowMapping | Mapping[str, Any]) -> StoredRecord:
    """A StoredRecord from a row mapping; BLOB content (only written by tampering) is kept byte-exact."""
    text = row["record"]
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    return StoredRecord(
        seq=int(row["seq"]),
        run_id=str(row["run_id"]),
        attempt=int(row["attempt"]),
        created_at=str(row["created_at"]),
        prev_hash=str(row["prev_hash"]),
        hash=str(row["hash"]),
        text=text,
    )


def _refuse_missing_sqlite_file(url: str, create: bool) -> None:
    """With ``create=False``, refuse a SQLite file that does not exist (SQLite would create it)."""
    try:
        parsed = make_url(url)
    except (SQLAlchemyError, ValueError):
        return
    database = parsed.database
    if create or parsed.get_backend_name() != "sqlite" or not database or database.startswith(":memory:"):
        return
    if not Path(database).exists():
        raise AuditStoreError(f"there is no audit store at {database}; check output.audit_url (or audit --url)")
