"""The claims check of the README and the documentation site: every figure names its source.

A figure is a number outside code that carries a unit (``78.9 s``, ``48.6 %``, ``2.3 GB``, ``15x``)
or thousands separators (``1,119,662``). Each block (paragraph, list item, table row) holding one
must name, in itself or in the paragraph that leads into its list or table, an existing file of the
project as an inline-code path (``benchmarks/results/ckm.md``, a test, a config, a module), and each
figure's number must occur in one of those files as a whole number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# "s" and "h" need their space: "1s and 2s" are counts of one and two, not seconds
UNITS = r"(?:\s?(?:%|ms|min|B|KB|MB|GB|TB|KiB|MiB|GiB)|\s(?:s|h)|x)(?![\w])"
NUMBER = r"\d+(?:\.\d+)?"
GROUPED = re.compile(r"(?<![\w.,/-])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])")
WITH_UNIT = re.compile(r"(?<![\w.,/-])(" + NUMBER + r")(?:\s?[-\u2013]\s?(" + NUMBER + r"))?" + UNITS)
CODE_SPAN = re.compile(r"`([^`]*)`")
LIST_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+\.)\s")


@dataclass(frozen=True)
class Block:
    """A paragraph, list item or table row, with the text that leads into its list or table."""

    line: int
    text: str
    lead: str


@dataclass(frozen=True)
class Problem:
    """A figure without a source, or one its sources do not hold."""

    line: int
    figure: str
    why: str


def figures(text: str) -> list[str]:
    """The figures of a block's prose (code spans removed), as written."""
    prose = CODE_SPAN.sub(" ", text)
    prose = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", prose)  # link targets are not prose
    found = [m.group(0) for m in GROUPED.finditer(prose)]
    for m in WITH_UNIT.finditer(prose):
        found += [g for g in m.groups() if g]
    return found


def sources(text: str) -> list[Path]:
    """The existing files a block names as inline-code paths."""
    named = []
    for span in CODE_SPAN.findall(text):
        candidate = span.strip().split()[0] if span.strip() else ""
        candidate = candidate.rstrip(".,;:)")
        if "/" not in candidate:
            continue
        path = (ROOT / candidate).resolve()
        if path.is_file():
            named.append(path)
    return named


PROJECT_DIRS = (
    "cubeguard/",
    "tests/",
    "benchmarks/",
    "configs/",
    "service/",
    "cli/",
    "flows/",
    "tasks/",
    "schemas/",
    "expectations/",
    "docs/",
    "../shared/",
)


def dangling_paths(markdown: str) -> list[str]:
    """Inline-code paths into the project (files or folders, without wildcards) that do not exist."""
    out = []
    for span in CODE_SPAN.findall(markdown):
        path = span.strip().split(" ")[0].rstrip(".,;:)") if span.strip() else ""
        if not path.startswith(PROJECT_DIRS) or any(c in path for c in "*<>{}[]$"):
            continue
        if not (ROOT / path.split("::")[0]).exists():
            out.append(path)
    return out


def _number(figure: str) -> str:
    return figure.replace(",", "")


def holds(path: Path, figure: str) -> bool:
    """Whether a source file holds a figure's number as a whole number (separators ignored)."""
    text = re.sub(r"(?<=\d),(?=\d{3})", "", path.read_text(errors="replace"))
    number = re.escape(_number(figure))
    return re.search(r"(?<![\d.])" + number + r"(?![\d]|\.\d)", text) is not None


def blocks(markdown: str) -> list[Block]:
    """Paragraphs, list items and table rows, outside fenced code and headings."""
    out: list[Block] = []
    lead, current, start, in_fence, kind = "", [], 0, False, ""

    def flush() -> None:
        nonlocal current, lead, kind
        if current:
            text = "\n".join(current)
            out.append(Block(start, text, lead if kind in ("item", "row") else ""))
            if kind == "para":
                lead = text
        current, kind = [], ""

    for number, line in enumerate(markdown.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if not stripped:
            flush()
            continue
        if stripped.startswith("#"):
            flush()
            lead = ""
            continue
        if stripped.startswith("|"):
            flush()
            current, start, kind = [line], number, "row"
            flush()
            continue
        if LIST_ITEM.match(line):
            flush()
            current, start, kind = [line], number, "item"
            continue
        if not current:
            start, kind = number, "para"
        current.append(line)
    flush()
    return out


def check(markdown: str) -> list[Problem]:
    """Every figure without a source, or whose sources do not hold it."""
    problems = []
    for block in blocks(markdown):
        found = figures(block.text)
        if not found:
            continue
        named = sources(block.text) + sources(block.lead)
        for figure in found:
            if not named:
                problems.append(Problem(block.line, figure, "no source named in its block or lead-in"))
            elif not any(holds(path, figure) for path in named):
                names = ", ".join(str(p.relative_to(ROOT.parent)) for p in named)
                problems.append(Problem(block.line, figure, f"not found in {names}"))
    return problems


def pages() -> list[Path]:
    """The README and every hand-written page of the site (the generated config reference is not)."""
    site = sorted((ROOT / "docs").rglob("*.md"))
    return [ROOT / "README.md", *(p for p in site if p.name != "config-reference.md")]
