"""Every measure the report can show has a definition with its source, and the page lists them."""

from __future__ import annotations

import pandas as pd

from cubeguard.measures.table import MEASURE_KEYS
from cubeguard.report.definitions import DEFINITIONS, DRILLDOWN, FACTS, defined, drilldown_defined
from cubeguard.report.drilldown import SHOWN
from cubeguard.report.html import _measures_section


def test_every_measure_key_has_a_definition_and_a_source() -> None:
    keys = {*MEASURE_KEYS, "anova_r2_original", "anova_r2_protected", *FACTS}  # ANOVA is not offered to sweeps
    assert keys <= set(DEFINITIONS)
    assert set(DEFINITIONS) <= keys  # no definition of a measure that does not exist
    assert all(text.endswith(".") and source for text, source in DEFINITIONS.values())


def test_the_measures_section_defines_the_columns_it_shows_once_each() -> None:
    measures = pd.DataFrame(
        {"rad@interior": [0.1], "rad@cube": [0.2], "hellinger@interior": [0.01]}, index=pd.Index(["c1"], name="cube")
    )
    html = _measures_section(measures)
    assert html.count("<dt><code>rad</code></dt>") == 1 and "<dt><code>hellinger</code></dt>" in html
    assert "Shlomo (2009), section 4" in html and "<dt><code>zeros_kept</code></dt>" not in html
    assert [k for k, _, _ in defined(measures.columns)] == ["rad", "hellinger"]


def test_every_drilldown_column_has_one_definition_and_a_source() -> None:
    rows = drilldown_defined(SHOWN)
    assert [k for k, _, _ in rows] == list(SHOWN)
    assert set(DRILLDOWN) <= set(SHOWN) and not set(DRILLDOWN) & set(DEFINITIONS)  # none stale, none shadowed
    assert all(text.endswith(".") and source for _, text, source in rows)
