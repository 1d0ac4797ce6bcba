"""The cell key method's section of the release report: its p-tables and the risk they leave.

For each cell key step of the release: the p-table's noise distributions (one panel per original
count, as R ptable's ``plot(type = "d")``), the probability that a published value came from a
small original one, ``P(original = i | published = j)`` under a uniform prior (Enderle, Giessing
and Tent 2020), and the largest such probability for an original 1 or 2. The pictures reveal the
noise design (D and V), as the noise plots do: the report is internal. No parameter value is
written as text.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from cubeguard.ckm.ptable import PTable
from cubeguard.ckm.ptable_plot import plot_ptable
from cubeguard.ckm.risk import max_disclosure_probability, posterior_probabilities
from cubeguard.ckm.risk_plot import plot_risk
from cubeguard.methods.cell_key.method import ptable
from cubeguard.methods.cell_key.model import CellKeyStep
from cubeguard.methods.section import Heading, Part, Picture, Section, Text

ANCHOR = "cell-key-section"
TITLE = "Cell key method"


def _pictures(table: PTable) -> tuple[bytes, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        noise = plot_ptable(table, Path(tmp) / "ptable.png").read_bytes()
        risk = plot_risk(posterior_probabilities(table), Path(tmp) / "risk.png").read_bytes()
    return noise, risk


def ptable_section(tables: Sequence[tuple[str, PTable]]) -> Section | None:
    """The section for ``(step label, p-table)`` pairs; None when there is none."""
    if not tables:
        return None
    parts: list[Part] = [
        Text(
            "The p-table of each cell key step (Handbook on SDC v2, 5.4) and the disclosure risk it leaves: how "
            "likely a published value is to have come from a small original one, with every original count "
            "equally likely beforehand (Enderle, Giessing and Tent 2020)."
        )
    ]
    for label, table in tables:
        noise, risk = _pictures(table)
        worst = max_disclosure_probability(table, i_max=2)
        parts.append(Heading(label))
        parts.append(
            Text("Largest probability that a published value came from an original 1 or 2: ", f"{worst:.3f}", ".")
        )
        parts.append(Picture(noise, f"p-table of {label}", "Noise distribution of each original count (p-table)."))
        parts.append(Picture(risk, f"risk of {label}", "P(original = i | published = j), uniform prior."))
    return Section(ANCHOR, TITLE, parts)


def section(steps: Sequence[tuple[str, CellKeyStep]]) -> Section | None:
    """The report section of the release's cell key steps, ``(label, resolved step)`` in step order."""
    return ptable_section([(label, ptable(step)) for label, step in steps])
