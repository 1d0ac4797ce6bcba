"""Turn every failure into one clear sentence and an exit status, never a traceback.

Exit 2: something the user can change (a config, an input file, a folder, a full disk). Exit 1: a
gate blocked the release. Exit 3: a bug in cubeguard; the sentence names a log file holding the
traceback, written with its messages' numbers masked, since secrets (D, V, swap rates, seeds,
record keys) are numbers and a message may quote a value.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console

from cubeguard.errors import ConfigError, CubeguardError, ReleaseBlocked

F = TypeVar("F", bound=Callable[..., Any])
err = Console(stderr=True)
MAX_SHOWN = 20
EXIT_BUG = 3

# What to change, by errno: the sentence ends "<path>: <what>; <change>".
_OS_ADVICE = {
    errno.ENOSPC: ("no space left on its device", "free space there or set output.folder to another disk"),
    errno.EDQUOT: ("the disk quota is used up", "free space there or set output.folder to another disk"),
    errno.EROFS: ("the file system is read-only", "set output.folder to a writable folder"),
    errno.EACCES: ("permission denied", "grant write access or choose another folder"),
    errno.EPERM: ("not permitted", "grant access or choose another folder"),
    errno.ENOTDIR: ("a file stands where a folder is needed", "move that file or choose another folder"),
    errno.EEXIST: ("a file stands where a folder is needed", "move that file or choose another folder"),
    errno.EISDIR: ("it is a folder, not a file", "name the file"),
    errno.ENOENT: ("no such file or folder", "check the path"),
}


def os_error_sentence(exc: OSError) -> str | None:
    """One sentence for a file-system failure the user can fix, or None (then it is a bug)."""
    advice = _OS_ADVICE.get(exc.errno or -1)
    if advice is None:
        return None
    what, change = advice
    path = exc.filename or "writing the release"
    return f"{path}: {what}; {change}"


def bug_log(exc: BaseException, folder: Path | None = None) -> Path:
    """Write the traceback of ``exc`` to a new file under ``.cubeguard/logs`` (numbers in messages masked)."""
    folder = folder or Path.cwd() / ".cubeguard" / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    path = folder / f"error-{stamp}-{os.getpid()}.log"
    lines = []
    for part in traceback.TracebackException.from_exception(exc).format():
        lines.append(part if part.startswith(("  File ", "    ", "Traceback")) else _masked(part))
    path.write_text("".join(lines), encoding="utf-8")
    path.chmod(0o600)
    return path


def _masked(text: str) -> str:
    """``text`` with every run of digits replaced by ``#`` (a secret may be any number)."""
    return re.sub(r"\d+", "#", text)


def user_errors(func: F) -> F:
    """Decorator: a failure prints one sentence and exits 2 (the user's to fix), 1 (a gate) or 3 (a bug)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except ReleaseBlocked as exc:
            err.print("[bold red]Release blocked by its gates:[/]")
            for line in exc.failures[:MAX_SHOWN]:
                err.print(f"  - {line}", markup=False, highlight=False)
            err.print(f"[bold red]Error:[/] {exc}", highlight=False)
            raise typer.Exit(1) from None
        except ConfigError as exc:
            err.print(f"[bold red]The config {exc.file} has {len(exc.problems)} problem(s):[/]")
            for p in exc.problems[:MAX_SHOWN]:
                err.print(f"  - {p}", markup=False, highlight=False)
            if len(exc.problems) > MAX_SHOWN:
                err.print(f"  ... and {len(exc.problems) - MAX_SHOWN} more")
            raise typer.Exit(2) from None
        except CubeguardError as exc:
            err.print(f"[bold red]Error:[/] {exc}", highlight=False)
            raise typer.Exit(2) from None
        except OSError as exc:
            sentence = os_error_sentence(exc)
            if sentence is None:
                _report_bug(exc)
            err.print(f"[bold red]Error:[/] {sentence}", highlight=False)
            raise typer.Exit(2) from None
        except Exception as exc:
            _report_bug(exc)

    return wrapper  # type: ignore[return-value]


def _report_bug(exc: BaseException) -> None:
    try:
        where = f"the traceback is in {bug_log(exc)}"
    except OSError:
        where = "no log could be written"
    err.print(
        f"[bold red]Internal error:[/] this is a bug in cubeguard ({type(exc).__name__}); {where}; "
        "please report it with that file",
        highlight=False,
    )
    raise typer.Exit(EXIT_BUG) from None
