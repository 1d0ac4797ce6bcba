"""What a served release offers, for the API and the page: populations, means, rules and levels."""

from __future__ import annotations

from typing import Any

from cubeguard.tables.engine import TableEngine


def describe_release(engine: TableEngine) -> dict[str, Any]:
    """The release id, what may be asked and the rules a table must pass (no secret among them)."""
    cfg = engine.release.config
    spec = engine.spec
    rules = spec.model_dump(include={"max_dimensions", "max_cells", "min_population", "min_average_cell_size",
                                     "small_count", "max_small_cell_share", "rate_limit_per_minute"})  # fmt: skip
    return {
        "release_id": engine.release_id,
        "name": cfg.name,
        "description": cfg.description,
        "populations": [
            {"id": p, "label": cfg.populations[p].label or p, "unit": cfg.populations[p].unit} for p in spec.populations
        ],
        "means": [{"id": k, "label": m.label or k} for k, m in spec.means.items()],
        "rules": rules,
        "protection": protection_text(cfg.steps[0], means=bool(spec.means)),
        "precomputed": {"ready": engine.crossings.ready, "planned": len(engine.crossings.planned)},
    }


def protection_text(step: Any, *, means: bool) -> str:
    """How the served tables are protected, in words a user reads (public parameters only)."""
    if step.method == "random_rounding":
        text = (
            f"random rounding to base {step.base} (each cell's draw is its cell key, from the release's record keys; "
            "totals rounded on their own, so a table need not add up)"
        )
    elif step.method == "cell_key":
        text = "cell key method (the release's p-table and record keys)"
    else:  # the tables check admits no other step; say what it is rather than claim a method
        text = step.method.replace("_", " ")
    return text + ("; means as perturbed sum / perturbed count" if means else "")


def describe_variables(engine: TableEngine) -> list[dict[str, Any]]:
    """Each variable with its offered levels, their codes, labels and parents."""
    out: dict[str, dict[str, Any]] = {}
    for bid, bd in engine.offered.items():
        cls = bd.classification
        spec = engine.release.config.variables[cls.variable]
        var = out.setdefault(cls.variable, {"id": cls.variable, "label": spec.label or cls.variable, "levels": []})
        label = spec.breakdowns[bid].label if bid in spec.breakdowns else ""
        var["levels"].append(
            {
                "id": bid,
                "label": label or bid,
                "cells": bd.n_bottom,
                "codes": [
                    {"code": c, "label": lab, "parent": p, "depth": d}
                    for c, lab, p, d in zip(bd.codes, bd.labels, bd.parents, bd.depths, strict=True)
                ],
            }
        )
    return list(out.values())
