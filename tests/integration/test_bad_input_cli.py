"""Bad input stops `cubeguard release` with exit 2 and one sentence, no traceback, nothing published.

Each case spoils the tiny release in one way. Nothing may reach the protected store or
``published/``; where the problem can be seen before tabulation, not even the original store.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.test_cli_release import cli

Spoil = Callable[[Path], list[str]]  # spoils the release folder; returns extra CLI arguments


def _text(folder: Path, old: str, new: str) -> None:
    config = folder / "tiny.yaml"
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new))


def _zero_rows(folder: Path) -> list[str]:
    import pyarrow.parquet as pq

    file = folder / "data" / "persons.parquet"
    pq.write_table(pq.read_table(file).slice(0, 0), file)
    return []


def _empty_population(folder: Path) -> list[str]:
    _text(
        folder,
        "  households: {unit: households}\n",
        "  households: {unit: households}\n  nobody: {where: {sex: [9]}}\n",
    )
    _text(folder, "  - {id: hh, ", "  - {id: none, population: nobody, breakdowns: [GEO.1]}\n  - {id: hh, ")
    return []


def _microdata_is_a_folder(folder: Path) -> list[str]:
    (folder / "data" / "persons.parquet").unlink()
    (folder / "data" / "persons.parquet").mkdir()
    return []


def _corrupt_parquet(folder: Path) -> list[str]:
    file = folder / "data" / "persons.parquet"
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])  # a truncated copy
    return []


def _csv(folder: Path, rows: int, sep: str) -> None:
    """The microdata as CSV (``rows`` records) separated by ``sep``, read by a config that expects commas."""
    import pandas as pd

    frame = pd.read_parquet(folder / "data" / "persons.parquet").head(rows)
    frame.to_csv(folder / "data" / "persons.csv", sep=sep, index=False)
    _text(folder, "  microdata: data/persons.parquet\n", "  microdata: data/persons.csv\n  format: csv\n")


CASES: dict[str, tuple[Spoil, str, bool]] = {  # spoil, message, original store may exist
    "cube id with a path": (
        lambda f: _text(f, "{id: c2,", "{id: ../x,") or [],
        "hypercubes[1].id (tiny.yaml line 40): a cube id names its folder and files",
        False,
    ),
    "cube id with a slash": (lambda f: _text(f, "{id: c2,", "{id: a/b,") or [], "a cube id names its folder", False),
    "release id with a path": (
        lambda f: ["--release-id", "../x"],
        "release id '../x' is not a safe folder name",
        False,
    ),
    "microdata without records": (_zero_rows, "has no records; point input.microdata at the census file", False),
    "population without records": (_empty_population, "population 'nobody' of cube 'none' has no records", True),
    "csv with the wrong delimiter": (
        lambda f: _csv(f, 100, ";") or [],
        "the header reads as one column containing ';'; the file looks delimited by ';', not ','",
        False,
    ),
    "csv with a header only": (lambda f: _csv(f, 0, ",") or [], "has no records (a header at most)", False),
}


@pytest.mark.parametrize(("spoil", "message", "tabulated"), CASES.values(), ids=list(CASES))
def test_bad_input_exits_2_with_one_sentence(tiny_release: Path, spoil: Spoil, message: str, tabulated: bool) -> None:
    folder = tiny_release.parent
    extra = spoil(folder)
    run = cli("release", str(tiny_release), *extra, cwd=folder)
    assert run.returncode == 2, run.stderr
    assert message in " ".join(run.stderr.split()), run.stderr
    assert "Traceback" not in run.stderr + run.stdout
    out = folder / "out"
    assert not (out / "protected.zarr").exists() and not (out / "published").exists()
    assert tabulated or not (out / "original.zarr").exists()


@pytest.mark.parametrize("spoil", [_microdata_is_a_folder, _corrupt_parquet], ids=["folder", "truncated"])
def test_unreadable_microdata_exits_2_naming_the_file(tiny_release: Path, spoil: Spoil) -> None:
    spoil(tiny_release.parent)
    run = cli("release", str(tiny_release), cwd=tiny_release.parent)
    assert (run.returncode, "Traceback" in run.stderr) == (2, False), run.stderr
    assert "persons.parquet" in run.stderr
