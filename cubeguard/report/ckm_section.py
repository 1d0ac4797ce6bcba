"""The report's section on the cell key method: its p-table and the risk it leaves.

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
from cubeguard.report._markup import esc, image

ANCHOR = "cell-key-section"


def _pictures(table: PTable) -> tuple[bytes, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        noise = plot_ptable(table, Path(tmp) / "ptable.png").read_bytes()
        risk = plot_risk(posterior_probabilities(table), Path(tmp) / "risk.png").read_bytes()
    return noise, risk


def cell_key_section(steps: Sequence[tuple[str, PTable]]) -> str:
    """HTML of the section for ``(step label, p-table)`` pairs; empty when there is none."""
    if not steps:
        return ""
    parts = [
        f'<h2 id="{ANCHOR}">Cell key method</h2>',
        "<p>The p-table of each cell key step (Handbook on SDC v2, 5.4) and the disclosure risk it leaves: "
        "how likely a published value is to have come from a small original one, with every original "
        "count equally likely beforehand (Enderle, Giessing and Tent 2020).</p>",
    ]
    for label, table in steps:
        noise, risk = _pictures(table)
        worst = max_disclosure_probability(table, i_max=2)
        parts.append(f"<h3>{esc(label)}</h3>")
        parts.append(
            f"<p>Largest probability that a published value came from an original 1 or 2: <strong>{worst:.3f}"
            "</strong>.</p>"
        )
        parts.append(image(noise, f"p-table of {label}", "Noise distribution of each original count (p-table)."))
        parts.append(image(risk, f"risk of {label}", "P(original = i | published = j), uniform prior."))
    return "".join(parts)
