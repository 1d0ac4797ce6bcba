"""The audit table, its append-only triggers, and engines that serialise appends.

SQLite (the default) and PostgreSQL are supported. Appends must read the last hash and insert in
one transaction that no other writer can interleave with: on SQLite the transaction starts with
``BEGIN IMMEDIATE`` (SQLAlchemy's documented pysqlite recipe: the driver's own BEGIN is switched off
and the ``begin`` event emits ours) and waits up to :data:`BUSY_TIMEOUT` seconds for the write lock;
on PostgreSQL the store takes ``LOCK TABLE ... IN EXCLUSIVE MODE``, which still lets readers in.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy import CHAR, Column, Engine, Index, Integer, MetaData, String, Table, Text, create_engine, event
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from cubeguard.audit.errors import AuditStoreError

TABLE = "audit_records"
BUSY_TIMEOUT = 30.0
CONNECT_TIMEOUT = 10  # seconds to reach a PostgreSQL server before the attempt fails
WRITE = "cubeguard_audit_write"
APPEND_ONLY = "audit records are append-only"

metadata = MetaData()
records = Table(
    TABLE,
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("record", Text, nullable=False),
    Column("prev_hash", CHAR(64), nullable=False),
    Column("hash", CHAR(64), nullable=False, unique=True),
    Index("ix_audit_records_run_id", "run_id"),
    sqlite_autoincrement=True,
)
COLUMNS = frozenset(column.name for column in records.columns)

_SQLITE_GUARDS = {
    f"{TABLE}_no_{verb.lower()}": f"CREATE TRIGGER {TABLE}_no_{verb.lower()} BEFORE {verb} ON {TABLE} "
    f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END"
    for verb in ("UPDATE", "DELETE")
}
_PG_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {TABLE}_append_only() RETURNS trigger LANGUAGE plpgsql AS "
    f"$$ BEGIN RAISE EXCEPTION '{APPEND_ONLY}'; END $$"
)
_PG_GUARDS = {
    f"{TABLE}_no_{verb.lower()}": f"CREATE TRIGGER {TABLE}_no_{verb.lower()} BEFORE {verb} ON {TABLE} "
    f"FOR EACH {level} EXECUTE FUNCTION {TABLE}_append_only()"
    for verb, level in (("UPDATE", "ROW"), ("DELETE", "ROW"), ("TRUNCATE", "STATEMENT"))
}
GUARDS = {"sqlite": _SQLITE_GUARDS, "postgresql": _PG_GUARDS}


def postgres_guards(table: str, message: str) -> list[str]:
    """DDL making ``table`` append-only on PostgreSQL: a trigger function, and triggers on UPDATE, DELETE, TRUNCATE.

    Each statement may run again (``CREATE OR REPLACE``; triggers dropped first), so a second opener
    of the table does no harm.
    """
    function = f"{table}_append_only"
    ddl = [f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS "
           f"$$ BEGIN RAISE EXCEPTION '{message}'; END $$"]  # fmt: skip
    for verb, level in (("UPDATE", "ROW"), ("DELETE", "ROW"), ("TRUNCATE", "STATEMENT")):
        name = f"{table}_no_{verb.lower()}"
        ddl.append(f"DROP TRIGGER IF EXISTS {name} ON {table}")
        ddl.append(f"CREATE TRIGGER {name} BEFORE {verb} ON {table} FOR EACH {level} EXECUTE FUNCTION {function}()")
    return ddl


def shown_url(url: str) -> str:
    """``url`` with any password masked, fit for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        head, at, host = url.rpartition("@")
        if not at:
            return url
        scheme = head.split("//", 1)[0] + "//" if "//" in head else ""
        return f"{scheme}***@{host}"


def reason(exc: BaseException) -> str:
    """The first line of the driver's message (never the SQL parameters, which may hold secrets)."""
    source = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    text = str(source).strip().splitlines()
    return text[0] if text else type(source).__name__


def open_engine(url: str) -> Engine:
    """An engine for a supported URL, with SQL parameters kept out of logs and errors.

    Raises:
        AuditStoreError: the URL cannot be parsed, its driver is missing, or its database is not
            SQLite or PostgreSQL.
    """
    try:
        parsed = make_url(url)
        if parsed.drivername == "postgresql":  # SQLAlchemy's default would be psycopg2; the lock file has psycopg 3
            parsed = parsed.set(drivername="postgresql+psycopg")
        sqlite = parsed.get_backend_name() == "sqlite"
        # PostgreSQL: connections dropped while the server was away are replaced before use, and a
        # server that does not answer fails a connection within CONNECT_TIMEOUT rather than hanging
        options: dict[str, Any] = (
            {"connect_args": {"timeout": BUSY_TIMEOUT}}
            if sqlite
            else {"pool_pre_ping": True, "connect_args": {"connect_timeout": CONNECT_TIMEOUT}}
        )
        engine = create_engine(parsed, hide_parameters=True, **options)
    except ImportError as exc:
        raise _cannot_open(url, f"its database driver is not installed ({exc})") from None
    except (SQLAlchemyError, ValueError) as exc:
        raise _cannot_open(url, reason(exc)) from None
    if engine.dialect.name not in GUARDS:
        engine.dispose()
        raise _cannot_open(url, f"{engine.dialect.name} is not supported (use sqlite:/// or postgresql://)")
    if sqlite:
        _serialise_sqlite_writes(engine)
    return engine


def _cannot_open(url: str, why: str) -> AuditStoreError:
    return AuditStoreError(
        f"audit store {shown_url(url)} cannot be opened: {why}; check output.audit_url (or audit --url)"
    )


def _serialise_sqlite_writes(engine: Engine) -> None:
    """Emit our own BEGIN: IMMEDIATE (take the write lock now) on write connections, else DEFERRED."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        dbapi_connection.isolation_level = None
        dbapi_connection.text_factory = _lenient_text

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        mode = "IMMEDIATE" if connection.get_execution_options().get(WRITE) else "DEFERRED"
        connection.exec_driver_sql(f"BEGIN {mode}")


def _lenient_text(raw: bytes) -> str:
    """Decode TEXT losslessly even when a tampered row holds invalid UTF-8 (verify reports it)."""
    return raw.decode("utf-8", "surrogateescape")


def begin_write(connection: Connection) -> None:
    """Mark ``connection`` as a writer; call before its transaction begins."""
    connection.execution_options(**{WRITE: True})


def lock_for_append(connection: Connection) -> None:
    """On PostgreSQL, lock out other writers until the transaction ends (SQLite: done by BEGIN)."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"LOCK TABLE {TABLE} IN EXCLUSIVE MODE")


def has_schema(connection: Connection, url: str) -> bool:
    """True for an audit store, False for a database where one may be created.

    Raises:
        AuditStoreError: the database holds an ``audit_records`` table of another shape, or (SQLite)
            another application's tables.
    """
    inspector = sa_inspect(connection)
    tables = set(inspector.get_table_names())
    where = shown_url(url)
    if TABLE in tables:
        found = {column["name"] for column in inspector.get_columns(TABLE)}
        if found != COLUMNS:
            raise AuditStoreError(f"{where} has an {TABLE} table that is not cubeguard's; give another audit.url")
        return True
    others = sorted(tables - {"sqlite_sequence"})
    if others and connection.dialect.name == "sqlite":
        listed = ", ".join(others[:5])
        raise AuditStoreError(f"{where} is not an audit store (it holds tables {listed}); give another audit.url")
    return False


def create_schema(connection: Connection, url: str) -> None:
    """Create the table and its append-only triggers, unless a concurrent opener just did.

    Call inside a write transaction (on PostgreSQL an advisory lock serialises creators).
    """
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("SELECT pg_advisory_xact_lock(7261530981)")
    if has_schema(connection, url):
        return
    metadata.create_all(connection)
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(_PG_FUNCTION)
    for ddl in GUARDS[connection.dialect.name].values():
        connection.exec_driver_sql(ddl)


def present_guards(connection: Connection) -> set[str]:
    """Names of the append-only triggers on the audit table."""
    if connection.dialect.name == "sqlite":
        sql = f"SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = '{TABLE}'"
    else:
        sql = f"SELECT tgname FROM pg_trigger WHERE tgrelid = '{TABLE}'::regclass AND NOT tgisinternal"
    return {str(name) for name in connection.exec_driver_sql(sql).scalars()}


def issued_seq(connection: Connection) -> int | None:
    """The highest seq SQLite has ever handed out (AUTOINCREMENT never reuses one); None elsewhere."""
    if connection.dialect.name != "sqlite":
        return None
    sql = f"SELECT seq FROM sqlite_sequence WHERE name = '{TABLE}'"
    value = connection.exec_driver_sql(sql).scalar_one_or_none()
    return None if value is None else int(value)
