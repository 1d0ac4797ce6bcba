"""A real PostgreSQL server for the tests, started on a free loopback port and stopped afterwards.

The server's binaries come from the machine (Debian's ``postgresql`` package, which ``./dev test``
installs when it may); ``initdb`` refuses to run as root, so as root the cluster belongs to the
``postgres`` user that package creates. Without the binaries the tests skip, except in CI, where
they fail: CI must test the PostgreSQL audit store for real.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest


@dataclass(frozen=True)
class Server:
    """A running cluster: its port, data folder and the binaries' folder."""

    port: int
    data: Path
    bin: Path
    owner: str | None  # the user the server runs as when the tests run as root

    def url(self, database: str = "postgres") -> str:
        """A SQLAlchemy URL of ``database`` (trust authentication on loopback)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def admin(self) -> psycopg.Connection:  # type: ignore[type-arg]
        """An autocommit connection to the ``postgres`` database."""
        return psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True)

    def create_database(self) -> str:
        """A fresh empty database; its URL."""
        name = f"audit_{uuid.uuid4().hex[:12]}"
        with self.admin() as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def ctl(self, *args: str) -> None:
        """Run ``pg_ctl`` on the cluster."""
        _run(self, [str(self.bin / "pg_ctl"), "-D", str(self.data), *args])


def binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``: on the PATH, or Debian's newest version."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def _run(server: Server, command: list[str]) -> None:
    if server.owner is not None:
        command = ["runuser", "-u", server.owner, "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def postgres() -> Iterator[Server]:
    """A PostgreSQL cluster for the session, stopped (immediately) at its end."""
    folder = binaries()
    if folder is None:
        why = "PostgreSQL's initdb is not installed (./dev test installs Debian's postgresql as root)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="cubeguard-pg-"))
    owner = "postgres" if os.geteuid() == 0 else None
    if owner is not None:
        shutil.chown(root, owner)
    server = Server(_free_port(), root / "data", folder, owner)
    _run(server, [str(folder / "initdb"), "-D", str(server.data), "-U", "postgres", "--auth=trust", "--no-sync"])
    options = f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    server.ctl("-l", str(root / "server.log"), "-o", options, "-w", "start")
    try:
        yield server
    finally:
        server.ctl("-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(postgres: Server) -> str:
    """The URL of a fresh database on the session's server."""
    return postgres.create_database()
