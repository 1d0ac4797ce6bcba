"""The release every worker of a table service serves: chosen, read by another process's connection, forgotten."""

from __future__ import annotations

from pathlib import Path

from service.release_choice import ReleaseChoice, choice_file, chosen_release, forget_choice


def test_each_choice_has_a_newer_generation_that_another_connection_reads(tmp_path: Path) -> None:
    limits = tmp_path / "service" / "limits.sqlite"
    path = choice_file(limits)
    assert path.parent == limits.parent and chosen_release(path) is None  # no database yet: nothing chosen
    worker, other = ReleaseChoice(path), ReleaseChoice(path)
    try:
        assert worker.choose("r2") == 1 and worker.choose("r1") == 2
        assert other.current() == (2, "r1") and chosen_release(path) == (2, "r1")
        forget_choice(limits)  # a service starting again
        assert other.current() is None and worker.choose("r3") == 1
    finally:
        worker.close()
        other.close()
