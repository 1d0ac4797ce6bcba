"""The report's section on the attacks: what an intruder who knows the methods recovered, per cube.

For each attack of :mod:`cubeguard.attack` and each cube: the small original cells (1s and 2s)
attacked, those recovered with certainty (self-test on the unprotected counts beside them), those
whose interval lies within 1 and 2, and the best guess's hits against the base rate of guessing the
most common small value; a plot of best-guess hits over the base rate per cube and attack; and the
cells recovered with certainty, by their codes (never a value). Handbook on SDC v2, 5.2 and 5.7.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cubeguard.attack import AttackReport
from cubeguard.report._markup import esc, image, table
from cubeguard.report.plots import DPI, _figure, _png

ANCHOR = "attack-section"


def attack_frame(report: AttackReport) -> pd.DataFrame:
    """One row per attack and cube: targets, recovered (and in the self-test), disclosed, guessed, base rate."""
    plain = {(f.attack, f.cube): f for f in report.facts if f.unprotected}
    rows = []
    for f in report.published:
        u = plain.get((f.attack, f.cube))
        rows.append(
            {
                "attack": f.attack,
                "cube": f.cube,
                "small cells": f.targets,
                "recovered with certainty": f.certain,
                "self-test: recovered": u.guessed if u and f.attack == "averaging" else (u.certain if u else None),
                "interval within 1-2": f.disclosed,
                "best guess right": f.guessed,
                "base rate": f.base_rate,
            }
        )
    return pd.DataFrame(rows).set_index(["attack", "cube"]) if rows else pd.DataFrame()


def plot_guesses(frame: pd.DataFrame, *, dpi: int = DPI) -> bytes:
    """Best-guess hits over the base rate, per cube (bars) and attack (groups); 1 is guessing blind."""
    figure = _figure(7.0, 3.2, dpi, (0.09, 0.98, 0.3, 0.9))
    ax = figure.add_subplot()
    shown = frame[frame["small cells"] > 0]
    ratio = shown["best guess right"] / shown["base rate"].clip(lower=1)
    labels = [f"{a}\n{c}" for a, c in shown.index]
    ax.bar(np.arange(len(ratio)), ratio.to_numpy(), color="0.45")
    ax.axhline(1.0, color="0.1", linestyle="--", linewidth=1)
    ax.set_xticks(np.arange(len(ratio)), labels, rotation=90, fontsize=7)
    ax.set_ylabel("hits / base rate")
    ax.set_title("Best guess of small cells against guessing the most common small value", fontsize=9)
    return _png(figure)


def attack_section(report: AttackReport | None) -> str:
    """HTML of the section; empty when no attack ran."""
    if report is None:
        return ""
    frame = attack_frame(report)
    parts = [
        f'<h2 id="{ANCHOR}">Attacks</h2>',
        "<p>An intruder who knows every method and its parameters, secret ones included, attacked the "
        "protected cubes: feasibility intervals from each cube's bounds and additivity (as tau-ARGUS audits "
        "suppressed cells), differencing across cubes that share cells, linking persons to households "
        "through household size, and averaging one cell over the cubes that publish it (Handbook on SDC v2, "
        "5.2). A small cell is recovered with certainty when its interval is one value. Each attack also ran "
        "on the unprotected counts, where it must recover every small cell (self-test).</p>",
    ]
    if report.broken:
        parts.append(f"<p><strong>Broken attacks (self-test failed): {esc(', '.join(report.broken))}.</strong></p>")
    if frame.empty:
        return "".join([*parts, "<p>No cube was attacked.</p>"])
    parts.append(table(frame.reset_index(), caption="Small original cells per attack and cube.", index=False))
    if (frame["small cells"] > 0).any():
        parts.append(image(plot_guesses(frame), "best-guess hits over the base rate per cube and attack"))
    named = [(f.attack, f.cube, n) for f in report.published for n in f.named]
    if named:
        cells = pd.DataFrame(named, columns=["attack", "cube", "cell recovered with certainty"])
        parts.append(table(cells, caption="Cells recovered with certainty (first ones per cube).", index=False))
    return "".join(parts)
