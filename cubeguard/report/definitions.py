"""What each column of the measures table means, in words, with the source that defines it.

``o`` is a cell's original count, ``p`` its published count, over the cells of the column's
scope (after the ``@``). Every key of :data:`cubeguard.measures.table.MEASURE_KEYS` has an entry,
and ``anova_r2_*`` too, and the :data:`FACTS` columns (a test holds the lists together), so the
report can define every column.
:data:`DRILLDOWN` defines the drill-down tables' own columns; their measures are defined here.
"""

from __future__ import annotations

from collections.abc import Iterable

_SHLOMO = "Shlomo (2009), section 4"
_HB58, _HB59 = "Handbook on SDC v2, 5.8", "Handbook on SDC v2, 5.9"
#: The Handbook (5.8) asks for distance metrics between original and perturbed cells and defines none of these.
_HELLINGER = "Shlomo and Young (2005); distance metrics in general: Handbook on SDC v2, 5.8"
_OWN = "cubeguard's own (no published source)"
_BEFORE_AFTER = " Two columns: of the original table (_original) and of the published one (_protected)."

DEFINITIONS: dict[str, tuple[str, str]] = {
    "absolute_distance": ("AD: the sum of |p - o| over the cells.", _HB58),
    "average_absolute_distance": ("AAD: AD divided by the number of cells.", _HB58),
    "rad": ("RAD: the mean of |p - o| / o over the cells with o > 0.", _SHLOMO),
    "rad_sum": ("The sum of |p - o| / o over the cells with o > 0.", _SHLOMO),
    "hellinger": (
        "Hellinger distance between the shares of the cells in the original and the published total, "
        "sqrt(1/2 sum (sqrt(p/P) - sqrt(o/O))^2); 0 for identical tables, at most 1.",
        _HELLINGER,
    ),
    "hellinger_counts": ("Hellinger distance on the counts, sqrt(1/2 sum (sqrt(p) - sqrt(o))^2).", _HELLINGER),
    "max_abs_deviation": ("The largest |p - o| over the cells.", "Höhne (2011), section 2.1"),
    "spearman": ("Spearman's rank correlation of o and p over the cells (1: the same order).", _HB58),
    "wilcoxon_p": ("p-value of Wilcoxon's signed-rank test that p - o is centred on 0.", f"{_HB58} (signed rank test)"),
    "cramers_v_original": ("Cramér's V of a two-way scope (association in [0, 1])." + _BEFORE_AFTER, _SHLOMO),
    "loglinear_fit_original": (
        "Pearson's X² of the table against its log-linear model without the highest-order interaction "
        "(every margin of all dimensions but one, fitted by IPF); not computed above 200,000 cells." + _BEFORE_AFTER,
        _HB58,
    ),
    "median_entropy_original": ("Median over sub-groups of the entropy of their tables." + _BEFORE_AFTER, _SHLOMO),
    "avg_cell_size_variance_original": (
        "Variance of the average cell size of the rows of the scope." + _BEFORE_AFTER,
        _HB58,
    ),
    "anova_r2_original": (
        "R² of a one-way ANOVA of the target dimension's scores across the other dimensions' groups." + _BEFORE_AFTER,
        _HB58,
    ),
    "small_cells_unchanged": (
        "Share of the cells with o of 1 or 2 that are published unchanged (the risk left in small cells).",
        _SHLOMO,
    ),
    "small_origin_risk": (
        "The largest share, over the published values, of the cells published with that value whose "
        "original count is 1 or 2: how sure an intruder can be that a published value hides a small count "
        "(empty for a cube without small counts).",
        "after Enderle, Giessing and Tent (2020)",
    ),
    "zeros_kept": ("Share of the cells with o = 0 that are published as 0.", _OWN),
    "entropy_risk_original": (
        "Entropy-based disclosure risk r of the original table and r# of the published one "
        "(r# <= r; from the cells' value transitions, or the persons' for a swap step's report cubes).",
        f"{_HB59} (Antal, Shlomo and Elliot 2014)",
    ),
    "disclosive_original": (
        "Directly disclosive cells of the original cube: cells holding all but at most k (the coalition "
        "size) of the persons of a group one level up, which reveals their category to the others.",
        f"{_HB59} (Lupp and Langsrud 2021)",
    ),
    "disclosive_protected": ("Directly disclosive cells as published (apparent disclosures).", _HB59),
    "disclosive_true": ("Cells disclosive both in the original and as published (true disclosures).", _HB59),
    "disclosive_share_original": ("Directly disclosive cells as a share of all cells, original.", _HB59),
    "disclosive_share_protected": ("Directly disclosive cells as a share of all cells, published.", _HB59),
    "swap_removed_share": (
        "Share of the real attribute disclosures (not made by imputed records) that the swap removed.",
        "Frend et al. (2011), section 4",
    ),
    "swap_false_share": (
        "Share of the apparent disclosures after the swap that are false.",
        "Frend et al. (2011), section 4",
    ),
    "unit_transitions": (
        "Which transitions r# of this cube counts: 1, the units (persons or households) that the "
        "pre-tabular steps moved between cells; 0, the cells' values (a post-tabular step changed them).",
        _HB59,
    ),
}
#: Columns of the measures table that describe how a measure was taken, not measures themselves.
FACTS = ("unit_transitions",)
for _stat in ("cramers_v", "loglinear_fit", "median_entropy", "avg_cell_size_variance", "anova_r2", "entropy_risk"):
    DEFINITIONS[f"{_stat}_protected"] = DEFINITIONS[f"{_stat}_original"]


def defined(keys: Iterable[str]) -> list[tuple[str, str, str]]:
    """``(key, meaning, source)`` for each distinct key (before ``@``) that has a definition, in order."""
    seen = dict.fromkeys(str(k).partition("@")[0] for k in keys)
    return [(k, *DEFINITIONS[k]) for k in seen if k in DEFINITIONS]


#: The columns of the report's drill-down tables that are not measures of the table above.
DRILLDOWN: dict[str, tuple[str, str]] = {
    "breakdown": ("The cube dimension the row drills into (a breakdown of a variable, e.g. GEO.M).", "cube convention"),
    "level": (
        "Depth in the breakdown's hierarchy of the codes the row selects: 0 is the total, 1 the codes under it, "
        "and so on. The row covers every cell with such a code on the breakdown, whatever its other codes.",
        "cube convention",
    ),
    "name": (
        "What the level holds: the words its codes' labels share before the code, else an example label; "
        "in brackets the breakdowns of the same variable that stop at that level.",
        "classification labels",
    ),
    "codes": ("Number of the breakdown's codes at that level.", "cube convention"),
    "cells": ("Number of cells of the row: its codes times the cells of the other breakdowns.", "cube convention"),
    "changed": ("Number of the row's cells whose published count differs from the original (p != o).", _HB58),
}


def drilldown_defined(keys: Iterable[str]) -> list[tuple[str, str, str]]:
    """``(key, meaning, source)`` of each drill-down column: its own definition, else the measure's."""
    table = DEFINITIONS | DRILLDOWN
    return [(k, *table[k]) for k in dict.fromkeys(keys) if k in table]
