"""Speed work keeps every published byte: a release's files against checksums recorded before it.

``tests/golden/data/release_files.json`` holds the SHA-256 of every file a release of
``TINY_CONFIG`` (cell key method, the three export formats) publishes, its manifest left out (it
holds the time), the SDMX structure message without its header's time. It was written at commit a054245, before issue 18's changes to protection,
measures, report and publish. A change that means to alter published bytes (a new export layout,
say) rewrites it with ``python tests/integration/test_release_bytes.py --write`` and says why
in its commit.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

from cubeguard.audit.record import sha256_file
from cubeguard.release.run import PlainRunner, Results, prepare, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Services
from expectations.release import gate_release
from schemas.validate import validate_release
from tests.conftest import TINY_CONFIG, tiny_microdata

GOLDEN = Path(__file__).parents[1] / "golden" / "data" / "release_files.json"
CONFIG = TINY_CONFIG.replace("output: {folder: out}", "output: {folder: out, exports: [csv, parquet, sdmx-csv]}")


def published_checksums(folder: Path) -> dict[str, str]:
    """Every file a release of CONFIG publishes, by path, with its SHA-256 (the manifest left out)."""
    (folder / "data").mkdir()
    tiny_microdata().to_parquet(folder / "data" / "persons.parquet", row_group_size=2000)
    config = folder / "tiny.yaml"
    config.write_text(CONFIG)
    services = Services(validate=validate_release, gate=gate_release)
    spec, prepared = prepare(RunSpec(str(config), release_id="bytes"), services)
    results: Results = {"prepare": prepared}
    walk(spec, PlainRunner(services), results)
    release = folder / "out" / "published" / "bytes"
    return {
        p.relative_to(release).as_posix(): _digest(p)
        for p in sorted(release.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


def _digest(path: Path) -> str:
    """SHA-256 of a file; of the SDMX structure message without its header's time (when it was published)."""
    if path.name != "structure.sdmx.xml":
        return sha256_file(path)
    text = re.sub(r"<mes:Prepared>[^<]*</mes:Prepared>", "<mes:Prepared/>", path.read_text(encoding="utf-8"))
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_release_publishes_the_bytes_it_published_before(tmp_path: Path) -> None:
    expected = json.loads(GOLDEN.read_text())
    found = published_checksums(tmp_path)
    assert sorted(found) == sorted(expected)  # the same files
    changed = [name for name in expected if found[name] != expected[name]]
    assert not changed, f"{len(changed)} published file(s) changed: {changed[:10]}"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.write_text(json.dumps(published_checksums(Path(tmp)), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
