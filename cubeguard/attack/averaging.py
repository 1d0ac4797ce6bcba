"""Averaging: the same cell read from every cube that publishes it, where its values differ.

A method that perturbs each cube on its own (stochastic perturbation without ``hold``, random or
semi-controlled rounding per cube) publishes one set of units with independent noise in every cube
that holds it; the mean of those values estimates the original better than any one of them
(Handbook on SDC v2, 5.2 and 5.4, on why the cell key method keys the noise to the cell). The
attack's best guess is that mean, rounded; it claims no certainty (differencing does that).
Targets are the small cells published in two cubes or more.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cubeguard.attack.cells import CellIndex, CubeView
from cubeguard.attack.intervals import UNBOUNDED
from cubeguard.attack.score import AttackFacts, score

NAME = "averaging"


def attack(views: Sequence[CubeView], index: CellIndex | None = None) -> list[AttackFacts]:
    """Per cube: the rounded mean of each of its cells over every cube of the population that publishes it."""
    index = index or CellIndex.of(views)
    keys = index.of_views(views)
    flat = np.concatenate(keys) if keys else np.empty(0, dtype=np.int64)
    values = np.concatenate([v.published.ravel() for v in views]).astype(np.float64) if views else np.empty(0)
    counts = np.bincount(flat)
    means = np.bincount(flat, weights=values) / np.maximum(counts, 1)
    out: list[AttackFacts] = []
    for v, k in zip(views, keys, strict=True):
        shared = (counts[k] > 1).reshape(v.published.shape)
        guess = np.rint(means[k]).astype(np.int64).reshape(v.published.shape)
        lo, hi = np.zeros_like(guess), np.full_like(guess, UNBOUNDED)
        out.append(score(NAME, v, lo, hi, guess=guess, targets=shared))
    return out
