"""What a served release offers, for the API and the page: populations, means, rules, levels and ready-made cubes."""

from __future__ import annotations

from typing import Any

from cubeguard.tables.engine import TableEngine
from cubeguard.tables.query import TableQuery, TableRefused
from cubeguard.tables.rules import check_form


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
        "protection_use": protection_use(cfg.steps[0]),
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


def protection_use(step: Any) -> str:
    """What the protection means for someone using a table, in plain words (no parameter)."""
    if step.method == "random_rounding":
        change = f"Every count was rounded at random to a multiple of {step.base}, the same way each time it is asked"
    elif step.method == "cell_key":
        change = "Every count was changed by a small amount of noise, the same each time the same cell is asked"
    else:
        change = f"Every count was protected by {step.method.replace('_', ' ')}"
    return (
        f"{change}. Differences between tables, or between a table and a published one, are this noise, not "
        "real differences. Small values are never exact: do not read a small count as the true number. "
        "Totals are protected on their own, so a total may not equal the sum of its parts."
    )


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


def describe_cubes(engine: TableEngine) -> list[dict[str, Any]]:
    """The release's published cubes that the service can serve as they are, in the config's order.

    A cube is listed when its population and every breakdown are offered and its form passes the
    rules (:func:`~cubeguard.tables.rules.check_form`: ``max_dimensions``, ``max_cells``), so that
    opening it asks a table the service would answer unless a value rule refuses it.
    """
    out = []
    for cube in engine.release.config.hypercubes:
        try:
            check_form(TableQuery(breakdowns=cube.breakdowns, population=cube.population), engine.spec, engine.offered)
        except TableRefused:
            continue
        out.append(
            {"id": cube.id, "label": cube.label or cube.id, "population": cube.population,
             "breakdowns": list(cube.breakdowns)}
        )  # fmt: skip
    return out
