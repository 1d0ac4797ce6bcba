"""The CLI's last line of defence: an unexpected error is a bug report, never a traceback or a secret."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cli.errors import EXIT_BUG, os_error_sentence, user_errors


def _app(exc: BaseException) -> typer.Typer:
    app = typer.Typer(pretty_exceptions_show_locals=False)

    @app.command()
    @user_errors
    def boom() -> None:
        secret_d = 73019  # a local that must never be shown
        assert secret_d
        raise exc

    return app


def test_an_unexpected_error_exits_3_naming_a_log_with_numbers_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(_app(KeyError("D=58213 out of range")), [])
    assert result.exit_code == EXIT_BUG
    said = " ".join(result.stderr.split())
    assert "Internal error: this is a bug in cubeguard (KeyError)" in said and "Traceback" not in said
    (log,) = (tmp_path / ".cubeguard" / "logs").iterdir()
    assert log.name in said.replace(" ", "")  # the console may wrap the path
    text = log.read_text()
    assert "KeyError" in text and "Traceback" in text and "raise exc" in text
    assert "58213" not in text and "73019" not in text and "D=# out of range" in text
    assert log.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (errno.ENOSPC, "/x/y: no space left on its device; free space there or set output.folder to another disk"),
        (errno.EROFS, "/x/y: the file system is read-only; set output.folder to a writable folder"),
        (errno.EACCES, "/x/y: permission denied; grant write access or choose another folder"),
        (errno.ENOTDIR, "/x/y: a file stands where a folder is needed; move that file or choose another folder"),
    ],
)
def test_a_file_system_failure_is_one_sentence_saying_what_to_change(code: int, said: str) -> None:
    assert os_error_sentence(OSError(code, "whatever", "/x/y")) == said
    result = CliRunner().invoke(_app(OSError(code, "whatever", "/x/y")), [])
    assert (result.exit_code, " ".join(result.stderr.split())) == (2, f"Error: {said}")


def test_an_os_error_without_an_errno_is_a_bug() -> None:
    assert os_error_sentence(OSError("Truncated compressed stream")) is None
