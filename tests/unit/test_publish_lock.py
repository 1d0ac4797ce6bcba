"""The publishing lock: one holder at a time, a message that names it, free again afterwards."""

from __future__ import annotations

import fcntl
import os
import re
import socket
from pathlib import Path

import pytest

from cubeguard.errors import CubeguardError
from cubeguard.publish.lock import LOCK_NAME, ReleaseLocked, release_lock

STARTED = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def test_a_second_holder_is_told_who_holds_the_lock(tmp_path: Path) -> None:
    root = tmp_path / "published"
    with release_lock(root), pytest.raises(ReleaseLocked) as caught, release_lock(root):
        pytest.fail("the lock was taken twice")
    message = (
        rf"another release \(pid {os.getpid()} on {re.escape(socket.gethostname())}, started {STARTED}\) "
        rf"is publishing into {re.escape(str(root))}; wait for it to finish, then run again"
    )
    assert re.fullmatch(message, str(caught.value))
    assert isinstance(caught.value, CubeguardError)
    assert caught.value.holder is not None and caught.value.holder["pid"] == os.getpid()


def test_the_lock_is_free_again_after_the_block_even_after_an_error(tmp_path: Path) -> None:
    root = tmp_path / "published"
    with pytest.raises(RuntimeError, match="boom"), release_lock(root):
        raise RuntimeError("boom")
    assert (root / LOCK_NAME).read_bytes() == b""  # no stale holder left to mislead a reader
    with release_lock(root):
        assert f'"pid": {os.getpid()}' in (root / LOCK_NAME).read_text()


def test_a_holder_not_yet_written_gives_the_short_message(tmp_path: Path) -> None:
    root = tmp_path / "published"
    root.mkdir()
    fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ReleaseLocked) as caught, release_lock(root):
            pytest.fail("the lock was taken while held")
    finally:
        os.close(fd)
    assert str(caught.value) == (f"another release is publishing into {root}; wait for it to finish, then run again")
