"""Turn user-fixable failures into one clear sentence and an exit status, never a traceback."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console

from cubeguard.errors import ConfigError, CubeguardError, ReleaseBlocked

F = TypeVar("F", bound=Callable[..., Any])
err = Console(stderr=True)
MAX_SHOWN = 20


def user_errors(func: F) -> F:
    """Decorator: a CubeguardError prints its sentence (all problems of a config) and exits 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
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

    return wrapper  # type: ignore[return-value]
