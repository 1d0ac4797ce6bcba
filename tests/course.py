"""A shipped course-data config (configs/censusprotection*.yaml) rewritten to run from a test's folder."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def course_config(tmp: Path, name: str, replace: dict[str, str] | None = None) -> Path:
    """``configs/<name>.yaml`` writing into ``tmp/out``, reading the shared data, with text ``replace``d."""
    text = (ROOT / "configs" / f"{name}.yaml").read_text()
    text = text.replace(f"folder: ../work/{name}", f"folder: {tmp / 'out'}")
    for old, new in (replace or {}).items():
        text = text.replace(old, new, 1)
    shutil.copytree(ROOT / "configs" / "classifications" / "course", tmp / "classifications" / "course")
    text = text.replace("../../shared", str(SHARED))
    (tmp / "c.yaml").write_text(text)
    for f in (tmp / "classifications" / "course").glob("*.yaml"):
        f.write_text(f.read_text().replace("../../../../shared", str(SHARED)))
    return tmp / "c.yaml"
