"""Option checks of ``cubeguard ptable``: count p-tables (``create_cnt_ptable``) or, with ``--numeric``, numeric ones.

Each mix-up of the two kinds' options is one sentence that says what to change; D and V are
never quoted (they are secret).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from cubeguard.errors import CubeguardError

if TYPE_CHECKING:
    from cubeguard.ckm.magnitude.ptable import NumPTable

COUNT_ONLY = ("--js", "--pstay", "--plot", "--risk", "--format tau")
NUMERIC_ONLY = ("--icat", "--step", "--type")


def parse_ints(text: str, option: str) -> tuple[int, ...]:
    """``"4,1,1"`` -> ``(4, 1, 1)``.

    Raises:
        CubeguardError: an entry is not a whole number.
    """
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise CubeguardError(f"{option} {text!r}: give whole numbers separated by commas, e.g. 1,5,10.") from None


def check_kind(numeric: bool, count_only: list[str], numeric_only: list[str]) -> None:
    """Refuse the options of the other kind of p-table (the lists name the options given).

    Raises:
        CubeguardError: ``--numeric`` with count options, or numeric options without ``--numeric``.
    """
    if numeric and count_only:
        raise CubeguardError(f"{', '.join(count_only)} apply to count p-tables only; leave them out with --numeric.")
    if not numeric and numeric_only:
        raise CubeguardError(f"{', '.join(numeric_only)} apply to numeric p-tables only; add --numeric.")


def numeric_ptable(
    D: int, V: float, step: int | None, icat: str | None, optim: str, mono: bool, kind: str | None, out_file: Path
) -> NumPTable:
    """Build the numeric p-table of R ptable's ``create_num_ptable`` and write it as ptable's CSV.

    Raises:
        CubeguardError: no ``--icat``, a list that does not parse, parameters ptable refuses, or
            no distribution meets the constraints (nothing is written then).
    """
    from cubeguard.ckm.magnitude.ptable_create import create_num_ptable, num_ptable_params, write_num_ptable

    if icat is None:
        raise CubeguardError("--numeric needs --icat, the points i with their own distribution, e.g. --icat 1,5,10.")
    params = num_ptable_params(
        D=D,
        V=V,
        step=2 if step is None else step,
        icat=parse_ints(icat, "--icat"),
        optim=parse_ints(optim, "--optim"),
        mono=mono,
        type=kind or "all",
    )
    table = create_num_ptable(params)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    write_num_ptable(table, out_file)
    return table
