"""A catalogue of bad inputs and faults, each spoiling the tiny release in one way.

``tests/integration/test_bad_input_cli.py`` runs every case through the real command line and
``benchmarks/bad_inputs.py`` prints the table of what cubeguard says to each. A case spoils a copy
of the tiny release folder (``tiny.yaml`` and ``data/persons.parquet``) and returns the command's
arguments; ``written`` says how far the run may get before it stops: nothing at all, the
internal folder (audit record, validation report), or the original store as well. No case may
leave a protected store or anything in ``published/``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

CONFIG = "tiny.yaml"
PERSONS = Path("data") / "persons.parquet"
NOTHING, INTERNAL, ORIGINAL, PROTECTED = "nothing", "internal", "original", "protected"


@dataclass(frozen=True)
class Case:
    """One way to spoil a release, and the sentence cubeguard must answer with."""

    name: str
    spoil: Callable[[Path], list[str]]  # spoils the folder; returns the arguments after ``cubeguard``
    message: str  # a part of the answer (white space folded)
    exit: int = 2
    written: str = NOTHING  # NOTHING, INTERNAL, ORIGINAL or PROTECTED: the most the output folder may hold
    env: dict[str, str] = field(default_factory=dict)
    mounts: bool = False  # mounts a small file system (needs root); undone by :func:`undo`


def release(*extra: str) -> list[str]:
    """Arguments of ``cubeguard release`` on the tiny config."""
    return ["release", CONFIG, *extra]


def edit(folder: Path, old: str, new: str) -> None:
    """Replace ``old`` (which must occur) by ``new`` in the config."""
    config = folder / CONFIG
    text = config.read_text()
    assert old in text, old
    config.write_text(text.replace(old, new, 1))


def edited(old: str, new: str, *extra: str) -> Callable[[Path], list[str]]:
    """A spoil that edits the config and runs the release."""

    def spoil(folder: Path) -> list[str]:
        edit(folder, old, new)
        return release(*extra)

    return spoil


def persons(folder: Path) -> pd.DataFrame:
    """The tiny microdata."""
    return pd.read_parquet(folder / PERSONS)


def rewrite(change: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[Path], list[str]]:
    """A spoil that changes the microdata and runs the release."""

    def spoil(folder: Path) -> list[str]:
        change(persons(folder)).to_parquet(folder / PERSONS)
        return release()

    return spoil


def set_cell(column: str, row: int, value: object, as_str: bool = False) -> Callable[[Path], list[str]]:
    """A spoil that puts ``value`` into one cell of the microdata."""

    def change(frame: pd.DataFrame) -> pd.DataFrame:
        if as_str:
            frame[column] = frame[column].astype(str)
        frame.loc[row, column] = value
        return frame

    return rewrite(change)


def as_csv(
    rows: int | None, sep: str = ",", gzip_half: bool = False, extra_fields_at: int | None = None
) -> Callable[[Path], list[str]]:
    """A spoil that gives the microdata as CSV (``rows`` records), read by a config expecting commas."""

    def spoil(folder: Path) -> list[str]:
        frame = persons(folder)
        name = "persons.csv.gz" if gzip_half else "persons.csv"
        target = folder / "data" / name
        frame.head(rows if rows is not None else len(frame)).to_csv(target, sep=sep, index=False)
        if gzip_half:
            data = target.read_bytes()
            target.write_bytes(data[: len(data) // 2])
        if extra_fields_at is not None:
            lines = target.read_text().splitlines()
            lines[extra_fields_at - 1] += ",9,9"
            target.write_text("\n".join(lines) + "\n")
        edit(folder, f"  microdata: {PERSONS}\n", f"  microdata: data/{name}\n  format: csv\n")
        return release()

    return spoil


def output_on_small_disk(options: str) -> Callable[[Path], list[str]]:
    """A spoil that puts ``output.folder`` on a new tmpfs mounted with ``options`` (root only)."""

    def spoil(folder: Path) -> list[str]:
        mount = folder / "disk"
        mount.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], check=True)
        edit(folder, "output: {folder: out}", "output: {folder: disk}")
        return release()

    return spoil


def undo(folder: Path) -> None:
    """Unmount what a case mounted and release locks it holds."""
    mount = folder / "disk"
    if mount.is_mount():
        subprocess.run(["umount", str(mount)], check=False)
    for fd in _HELD.pop(str(folder), []):
        os.close(fd)


_HELD: dict[str, list[int]] = {}


def locked(folder: Path) -> list[str]:
    """Hold the output folder's lock as a running release would."""
    out = folder / "out"
    out.mkdir()
    fd = os.open(out / ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _HELD.setdefault(str(folder), []).append(fd)
    return release()


def already_published(folder: Path) -> list[str]:
    """A release folder of that id exists (as an earlier release left it)."""
    (folder / "out" / "published" / "r1").mkdir(parents=True)
    return release("--release-id", "r1")


def _two_regions_in_a_household(frame: pd.DataFrame) -> pd.DataFrame:
    shared = frame["hid"].duplicated(keep=False)
    row = frame.index[shared][1]
    frame["region"] = frame["region"].astype(str)
    frame.loc[row, "region"] = "B1" if frame.loc[row, "region"] != "B1" else "A1"
    return frame


def _shell(script: Callable[[Path], object], args: list[str]) -> Callable[[Path], list[str]]:
    def spoil(folder: Path) -> list[str]:
        script(folder)
        return args

    return spoil


def _bad_ptable(folder: Path) -> list[str]:
    (folder / "p.csv").write_text("a,b\n1,2\n")
    edit(folder, CELL_KEY, "{method: cell_key, ptable_file: p.csv}")
    return release()


def _microdata_folder(folder: Path) -> list[str]:
    (folder / PERSONS).unlink()
    (folder / PERSONS).mkdir()
    return release()


def _empty_population(folder: Path) -> list[str]:
    edit(folder, *EMPTY_POPULATION)
    edit(folder, "  - {id: hh, ", "  - {id: none, population: nobody, breakdowns: [GEO.1]}\n  - {id: hh, ")
    return release()


CELL_KEY = "{method: cell_key, D: 5, V: 3, js: 2}"
EMPTY_POPULATION = (
    "  households: {unit: households}\n",
    "  households: {unit: households}\n  nobody: {where: {sex: [9]}}\n",
)

CASES: tuple[Case, ...] = (
    # The command line and the config file
    Case("config file missing", lambda f: ["release", "nope.yaml"], "nope.yaml: no such file; check the path"),
    Case(
        "config path is a folder",
        _shell(lambda f: (f / "cfg").mkdir(), ["release", "cfg"]),
        "cfg is a folder, not a YAML file; name the file",
    ),
    Case(
        "config not UTF-8",
        _shell(lambda f: (f / CONFIG).write_bytes((f / CONFIG).read_bytes() + b"# \xff\n"), release()),
        "not UTF-8 text (byte 0xff); save the file as UTF-8",
    ),
    Case(
        "YAML syntax error",
        edited("js: 2}", "js: 2"),
        "not valid YAML (did not find expected ',' or '}'); fix the syntax",
    ),
    Case(
        "empty config",
        _shell(lambda f: (f / CONFIG).write_text(""), release()),
        "the config must be a YAML mapping of keys",
    ),
    Case("unknown key", edited("js: 2}", "js: 2, jz: 1}"), "steps[0].jz (tiny.yaml line 43): unknown key 'jz'"),
    Case(
        "unknown method", edited("method: cell_key", "method: cell_keys"), "input tag 'cell_keys' found using 'method'"
    ),
    Case(
        "value of the wrong type",
        edited("js: 2}", "js: two}"),
        "steps[0].js (tiny.yaml line 43): input should be a valid integer",
    ),
    Case("unknown breakdown", edited("[GEO.1, AGE.L]", "[GEO.1, AGE.Q]"), "unknown breakdown 'AGE.Q'; did you mean"),
    Case("cube id used twice", edited("{id: c2,", "{id: c1,"), "hypercube id 'c1' is used twice; ids must be unique"),
    Case(
        "cube id with a path",
        edited("{id: c2,", "{id: ../x,"),
        "hypercubes[1].id (tiny.yaml line 40): a cube id names its folder and files",
    ),
    Case("cube id with a slash", edited("{id: c2,", "{id: a/b,"), "a cube id names its folder"),
    Case(
        "classification file missing",
        edited("  SEX:\n    column: sex\n", "  SEX: {file: sex.yaml}\n  SEXX:\n    column: sex\n"),
        "variables.SEX.file (tiny.yaml line",
    ),
    Case(
        "no disclosure gate",
        edited("gates: {forbidden_values: [1, 2]}", ""),
        "no disclosure gate is configured; set gates.max_recovered_by_attack",
    ),
    Case("a cube no step protects", edited(CELL_KEY, "{method: identity}"), "cube 'c1' would be published unprotected"),
    Case(
        "secret from an unset environment variable",
        edited("D: 5,", "D: {env: CG_UNSET_D},"),
        "environment variable CG_UNSET_D is not set",
    ),
    Case(
        "secret from a missing Prefect block",
        edited("D: 5,", "D: {prefect_secret: no-such-block},"),
        "no Prefect Secret block named 'no-such-block'",
    ),
    Case(
        "p-table file that is not a p-table",
        _bad_ptable,
        "the header lacks the columns",
    ),
    Case("--set without '='", lambda f: release("--set", "steps[0].js"), "--set 'steps[0].js': write it as KEY=VALUE"),
    Case(
        "--set on an unknown key",
        lambda f: release("--set", "steps[0].jz=3"),
        "steps[0].jz (--set steps[0].jz): unknown key 'jz'",
    ),
    Case(
        "--set with a secret inline",
        lambda f: release("--set", "steps[0].V=4"),
        "secrets given inline would be stored and shown",
    ),
    Case(
        "release id with a path",
        lambda f: release("--release-id", "../x"),
        "release id '../x' is not a safe folder name",
    ),
    Case("release id already published", already_published, "release r1 was already published at", written=INTERNAL),
    # The microdata file
    Case(
        "microdata file missing",
        _shell(lambda f: (f / PERSONS).unlink(), release()),
        "persons.parquet does not exist; fix input.microdata",
    ),
    Case(
        "microdata path is a folder",
        _microdata_folder,
        "persons.parquet is a folder, not a file",
    ),
    Case(
        "truncated Parquet file",
        _shell(lambda f: (f / PERSONS).write_bytes((f / PERSONS).read_bytes()[:20000]), release()),
        "is not a readable Parquet file",
    ),
    Case(
        "a text file named .parquet",
        _shell(lambda f: (f / PERSONS).write_text("pid,hid\n1,2\n"), release()),
        "is not a readable Parquet file",
    ),
    Case(
        "Parquet file without records",
        _shell(lambda f: pq.write_table(pq.read_table(f / PERSONS).slice(0, 0), f / PERSONS), release()),
        "has no records; point input.microdata at the census file",
    ),
    Case("CSV with the wrong delimiter", as_csv(100, sep=";"), "the file looks delimited by ';', not ','"),
    Case("CSV with a header only", as_csv(0), "has no records (a header at most)"),
    Case(
        "truncated gzip CSV",
        as_csv(None, gzip_half=True),
        "cannot be read to its end (Truncated compressed stream)",
        written=INTERNAL,
    ),
    Case(
        "CSV line with extra fields",
        as_csv(None, extra_fields_at=5000),
        "line 5000: 9 fields, expected 7",
        written=INTERNAL,
    ),
    Case(
        "column a variable needs is missing",
        rewrite(lambda d: d.rename(columns={"sex": "gender"})),
        "variables.SEX.column (tiny.yaml line 8): the microdata have no column 'sex'",
    ),
    Case(
        "population filter on a missing column",
        edited(*EMPTY_POPULATION[:1], "  households: {unit: households}\n  women: {where: {gender: ['2']}}\n"),
        "populations.women.where.gender (tiny.yaml line 38): the microdata have no column 'gender'",
    ),
    Case(
        "record key column missing",
        rewrite(lambda d: d.drop(columns=["rkey"])),
        "input.record_key.column (tiny.yaml line 3): the microdata have no column 'rkey'",
    ),
    # The microdata's values (found by validation)
    Case(
        "code outside the classification",
        set_cell("sex", 5, "7", as_str=True),
        "column 'sex' rule 'value not a leaf code of SEX' fails on 1 row(s)",
        written=INTERNAL,
    ),
    Case(
        "person id twice",
        set_cell("pid", 5, 4),
        "column 'pid' rule 'unique person id' fails on 1 row(s)",
        written=INTERNAL,
    ),
    Case(
        "record key outside [0, 1)",
        set_cell("rkey", 5, 1.5),
        "column 'rkey' rule 'record key < 1' fails on 1 row(s)",
        written=INTERNAL,
    ),
    Case(
        "text in a numeric column",
        set_cell("age", 5, "abc", as_str=True),
        "column 'age' rule 'value not a leaf code of AGE'",
        written=INTERNAL,
    ),
    Case("household members in two regions", rewrite(_two_regions_in_a_household), "household", written=INTERNAL),
    Case(
        "population without records",
        _empty_population,
        "population 'nobody' of cube 'none' has no records",
        written=ORIGINAL,
    ),
    # The output folder and the machine
    Case(
        "output folder is a file",
        _shell(lambda f: (f / "out").write_text("x"), release()),
        "is a file; move it or set output.folder to a folder",
    ),
    Case("another release is running", locked, "another release is publishing into"),
    Case(
        "output folder read-only",
        output_on_small_disk("size=10m,ro"),
        "cannot be written (its file system is read-only); set output.folder to a writable folder",
        mounts=True,
    ),
    Case(
        "disk full during the release",
        output_on_small_disk("size=300k"),
        "no space left on its device; free space there",
        written=PROTECTED,
        mounts=True,
    ),
    # Other commands
    Case(
        "export of an unknown store",
        lambda f: ["export", "nowhere.zarr", "--cube", "c1"],
        "store nowhere.zarr does not exist; check the path",
    ),
    Case(
        "export of an internal store without --internal",
        _shell(
            lambda f: (f / "out" / "original.zarr").mkdir(parents=True), ["export", "out/original.zarr", "--cube", "c1"]
        ),
        "is not a published release",
        written=ORIGINAL,
    ),
    Case(
        "sweep grid file missing",
        lambda f: ["sweep", CONFIG, "--grid", "grid.yaml"],
        "grid.yaml: no such file; check the path",
    ),
    Case(
        "audit without a store named",
        lambda f: ["audit", "list"],
        "say which audit store to open: give the release config (CONFIG) or --url URL",
    ),
    Case(
        "audit of a folder never released",
        lambda f: ["audit", "list", CONFIG],
        "there is no audit store at",
    ),
)


@dataclass(frozen=True)
class Outcome:
    """What a case's run did: exit status, the sentence printed, and what the output folder holds."""

    exit: int
    stdout: str
    stderr: str
    written: str  # NOTHING, INTERNAL, ORIGINAL, PROTECTED or "published"

    @property
    def said(self) -> str:
        """The error output with white space folded."""
        return " ".join(self.stderr.split())


def run_case(case: Case, base: Path, folder: Path) -> Outcome:
    """Copy the tiny release ``base`` to ``folder``, spoil it as ``case`` says and run the command."""
    shutil.copytree(base, folder)
    try:
        args = case.spoil(folder)
        run = subprocess.run(
            [sys.executable, "-m", "cli.main", *args],
            cwd=folder,
            env={**os.environ, "PREFECT_HOME": str(folder / ".prefect"), "COLUMNS": "400", **case.env},
            capture_output=True,
            text=True,
            timeout=300,
        )
        return Outcome(run.returncode, run.stdout, run.stderr, _written(folder))
    finally:
        undo(folder)


def _written(folder: Path) -> str:
    outs = [o for o in (folder / "out", folder / "disk") if o.is_dir()]
    for published in (o / "published" for o in outs):  # the already-published case leaves r1 empty
        if published.is_dir() and any(p.name != "r1" or any(p.iterdir()) for p in published.iterdir()):
            return "published"
    for level, name in ((PROTECTED, "protected.zarr"), (ORIGINAL, "original.zarr"), (INTERNAL, "internal")):
        if any((o / name).exists() for o in outs):
            return level
    return NOTHING


ORDER = (NOTHING, INTERNAL, ORIGINAL, PROTECTED, "published")


def within(written: str, allowed: str) -> bool:
    """True when a run that wrote ``written`` stayed within what its case allows."""
    return ORDER.index(written) <= ORDER.index(allowed)
