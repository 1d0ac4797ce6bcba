"""Every input a release reads is in its run key and its audit checksums, by content."""

from __future__ import annotations

import os
from pathlib import Path

from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
from cubeguard.ckm.ptable_io import write_ptable
from cubeguard.config import load_release
from cubeguard.pipeline.inputs import input_checksums, input_files
from cubeguard.release.spec import release_key
from tests.conftest import TINY_CONFIG, tiny_microdata

SEX_FILE = 'column: sex\ncodes:\n  - {code: "0"}\n  - {code: "1", parent: "0"}\n  - {code: "2", parent: "0"}\n'


def _config(tmp_path: Path) -> Path:
    """TINY_CONFIG with SEX from a classification file and the cell key method from a p-table file."""
    (tmp_path / "data").mkdir()
    tiny_microdata().to_parquet(tmp_path / "data" / "persons.parquet")
    (tmp_path / "sex.yaml").write_text(SEX_FILE + "breakdowns: {SEX: {}}\n")
    write_ptable(create_cnt_ptable(PTableParams(D=5, V=3, js=2)), tmp_path / "p.csv")
    start, end = TINY_CONFIG.index("  SEX:"), TINY_CONFIG.index("  AGE:")
    text = TINY_CONFIG[:start] + "  SEX: {file: sex.yaml}\n" + TINY_CONFIG[end:]
    text = text.replace("{method: cell_key, D: 5, V: 3, js: 2}", "{method: cell_key, ptable_file: p.csv, js: 2}")
    assert "ptable_file" in text
    (tmp_path / "c.yaml").write_text(text)
    return tmp_path / "c.yaml"


def test_microdata_classification_and_ptable_files_are_inputs(tmp_path: Path) -> None:
    release = load_release(_config(tmp_path))
    assert input_files(release) == [tmp_path / "data" / "persons.parquet", tmp_path / "sex.yaml", tmp_path / "p.csv"]
    assert set(input_checksums(release)) == {str(f) for f in input_files(release)}


def test_an_edited_input_changes_the_run_key_even_with_size_and_time_kept(tmp_path: Path) -> None:
    release = load_release(_config(tmp_path))
    before = release_key(release)
    assert release_key(release) == before  # the same inputs give the same key
    for name in ("p.csv", "data/persons.parquet"):
        file = tmp_path / name
        data, stat = file.read_bytes(), file.stat()
        edited = bytearray(data)
        edited[len(data) // 2] ^= 1  # one bit, same size
        file.write_bytes(bytes(edited))
        os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same modification time
        assert release_key(release) != before, name
        file.write_bytes(data)
        os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
