"""Crash and concurrency: a publish killed at any point leaves the whole release or none of it.

Each publish runs in its own process (``_publish_child.py``, forked from a forkserver that has
cubeguard imported already), which stops dead with
``os._exit(137)`` at one checkpoint of the sequence (as SIGKILL would: no cleanup, no flush), or
pauses there holding the lock. After each crash the store must hold either the complete release
(every file as the manifest lists it) or no folder of that id, the earlier release must be byte for
byte what it was, and the next publish must succeed and clear the crashed run's staging folder.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import socket
import time
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest

from cubeguard.config import Release, load_release
from cubeguard.cubes.store import list_cubes
from cubeguard.publish import ReleaseExists, ReleaseLocked, publish_release, published_root, release_lock
from cubeguard.publish.checksums import tree_checksums
from cubeguard.publish.stage import CHECKPOINTS, STAGING_PREFIX, STORE_NAME
from tests.integration._publish_child import CRASH_EXIT, LOCKED_EXIT, publish_child
from tests.publish_helpers import build_protected, complete, copy_release

CONTEXT = multiprocessing.get_context("forkserver")
CONTEXT.set_forkserver_preload(["tests.integration._publish_child"])
EARLIER = "tiny-earlier"
TIMEOUT = 180


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny release, protected, with one release already published (``tiny-earlier``)."""
    config = build_protected(tmp_path_factory.mktemp("built"))
    _publish(load_release(config), EARLIER)
    return config


@pytest.fixture
def release(built: Path, tmp_path: Path) -> Release:
    """A copy of the built release folder (earlier release included) for one test."""
    return copy_release(built, tmp_path / "rel")


def _publish(release: Release, release_id: str) -> Path:
    return publish_release(release, release_id, release.config.output.protected_store, ("csv", "parquet")).path


def _child(release: Release, release_id: str, folder: Path, *mode: str) -> BaseProcess:
    folder.mkdir(exist_ok=True)
    child = CONTEXT.Process(target=publish_child, args=(str(release.path), release_id, str(folder), *mode))
    child.start()
    return child


def _end(child: BaseProcess, folder: Path) -> int | None:
    """Wait for ``child`` to end; its exit code, after showing any traceback it left."""
    child.join(TIMEOUT)
    error = folder / "error.txt"
    assert not error.exists(), error.read_text()
    return child.exitcode


def _wait_for(path: Path, child: BaseProcess) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not path.exists():
        assert child.is_alive(), f"child {child.pid} ended (exit {child.exitcode}) before pausing"
        assert time.monotonic() < deadline, f"the child did not reach the pause at {path}"
        time.sleep(0.05)


def _staging(root: Path) -> list[Path]:
    return sorted(root.glob(f"{STAGING_PREFIX}*"))


@pytest.mark.parametrize("point", CHECKPOINTS)
def test_a_crash_leaves_the_whole_release_or_none(release: Release, point: str, tmp_path: Path) -> None:
    root = published_root(release)
    earlier = tree_checksums(root / EARLIER)
    child = _child(release, "tiny-crash", tmp_path / "child", "crash", point)
    assert _end(child, tmp_path / "child") == CRASH_EXIT  # the child really stopped at this checkpoint
    target = root / "tiny-crash"
    assert target.exists() == (point == "after-rename")
    assert not target.exists() or complete(target)
    assert tree_checksums(root / EARLIER) == earlier
    leftover = _staging(root)
    assert len(leftover) == (0 if point == "after-rename" else 1)
    if point == "store-copying":  # stopped after the first of the three cubes
        assert list_cubes(leftover[0] / STORE_NAME) == ["c1"]
    if target.exists():
        with pytest.raises(ReleaseExists, match="release tiny-crash was already published"):
            _publish(release, "tiny-crash")
    else:
        assert complete(_publish(release, "tiny-crash"))
    assert sorted(p.name for p in root.iterdir()) == sorted([".lock", EARLIER, "tiny-crash"])  # staging cleared
    assert complete(root / "tiny-crash")
    assert tree_checksums(root / EARLIER) == earlier


def test_two_publishes_at_once_one_wins_the_other_is_told_who_holds_the_lock(release: Release, tmp_path: Path) -> None:
    folders = {rid: tmp_path / rid for rid in ("tiny-a", "tiny-b")}
    children = {rid: _child(release, rid, f, "pause", "staging-created") for rid, f in folders.items()}
    try:
        deadline = time.monotonic() + TIMEOUT
        while all(c.is_alive() for c in children.values()):  # the first to end must be the loser
            assert time.monotonic() < deadline, "both publishes hold the lock at once"
            time.sleep(0.05)
        loser = next(rid for rid, c in children.items() if not c.is_alive())
        winner = next(rid for rid in children if rid != loser)
        assert _end(children[loser], folders[loser]) == LOCKED_EXIT
        root = published_root(release)
        expected = (
            rf"another release \(pid {children[winner].pid} on {re.escape(socket.gethostname())}, "
            rf"started \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ\) is publishing into {re.escape(str(root))}; "
            r"wait for it to finish, then run again"
        )
        assert re.fullmatch(expected, (folders[loser] / "locked.txt").read_text())
        assert (folders[winner] / "paused").read_text() == str(children[winner].pid)
        (folders[winner] / "go").touch()
        assert _end(children[winner], folders[winner]) == 0
    finally:
        for child in children.values():
            child.kill()
            child.join(TIMEOUT)
    assert sorted(p.name for p in root.iterdir()) == sorted([".lock", EARLIER, winner])
    assert complete(root / winner)


def test_the_lock_is_free_once_its_holder_is_killed(release: Release, tmp_path: Path) -> None:
    root = published_root(release)
    child = _child(release, "tiny-killed", tmp_path, "pause", "exports-written")
    try:
        _wait_for(tmp_path / "paused", child)
        with pytest.raises(ReleaseLocked, match=rf"^another release \(pid {child.pid} on "), release_lock(root):
            pytest.fail("the lock was taken while its holder was alive")
    finally:
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(TIMEOUT)
    assert child.exitcode == -signal.SIGKILL
    assert len(_staging(root)) == 1
    assert complete(_publish(release, "tiny-next"))
    assert sorted(p.name for p in root.iterdir()) == sorted([".lock", EARLIER, "tiny-next"])
