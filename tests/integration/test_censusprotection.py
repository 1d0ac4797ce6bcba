"""The ESTP course data as a foreign input: tau-ARGUS microdata, .rda metadata, .hrc hierarchies, 8-digit keys."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from cubeguard.config import load_release
from cubeguard.pipeline.tabulation import tabulate_release
from schemas.validate import validate_microdata

CONFIG = Path(__file__).parents[2] / "configs" / "censusprotection.yaml"
DATA = Path(__file__).parents[3] / "shared" / "external" / "censusprotection"
pytestmark = pytest.mark.skipif(not DATA.exists(), reason="shared course data not present")
COLUMNS = [
    "NUTS3",
    "LAU2",
    "HID",
    "Size",
    "SEX",
    "AGE.H",
    "TPH.H",
    "HST",
    "EDU",
    "SIE",
    "COC.M",
    "POB.M",
    "Y",
    "X",
    "RKEY",
]


@pytest.fixture(scope="module")
def tabulated():
    release = load_release(CONFIG)
    assert validate_microdata(release, None).records == 30578
    return release, tabulate_release(release)


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return pd.read_csv(DATA / "test_data_10k_tau.csv.gz", sep=";", header=None, names=COLUMNS, dtype=str)


def test_course_table_sex_x_coc_x_nuts3_matches_a_crosstab(tabulated, raw) -> None:
    _release, tab = tabulated
    c = [p.cube_id for p in tab.plans].index("course-1")
    cube = tab.cube(c, {"cube_id": "course-1"})
    assert cube["count"].sizes == {"SEX": 3, "COC.M": 11, "NUTS3": 48}
    expected = raw.groupby(["SEX", "COC.M", "NUTS3"]).size()
    for (sex, coc, nuts3), n in expected.items():
        assert int(cube["count"].sel(SEX=sex, **{"COC.M": coc, "NUTS3": nuts3})) == n
    # NUTS 1 region "1" (a subtotal from the .hrc) equals the count of its NUTS 3 codes.
    assert int(cube["count"].sel(SEX="Total", **{"COC.M": "Total", "NUTS3": "1"})) == int(
        raw["NUTS3"].str[0].eq("1").sum()
    )


def test_eight_digit_keys_give_exact_decimal_cell_keys(tabulated, raw) -> None:
    _release, tab = tabulated
    c = [p.cube_id for p in tab.plans].index("course-1")
    cube = tab.cube(c, {"cube_id": "course-1"})
    from cubeguard.ckm.keys import KeyScale

    scale = KeyScale.from_label(cube.attrs["key_scale"])
    ck = float(scale.cell_keys(cube["key_sum"].sel(SEX="2", **{"COC.M": "Total", "NUTS3": "Total"}).values))
    exact = sum(Decimal(k) for k in raw.loc[raw["SEX"] == "2", "RKEY"]) % 1
    assert ck == float(exact)


def test_the_controlled_rounding_advice_rounds_the_course_4d_table_when_followed() -> None:
    """NUTS2 x AGE.M x SEX x HST (4,368 cells) has no zero-restricted rounding; the error's advice works."""
    from cubeguard.errors import CubeguardError
    from cubeguard.gates.additivity import check_additivity
    from cubeguard.methods.controlled_rounding import ControlledRoundingStep, round_cube

    release = load_release(CONFIG, {"hypercubes": [{"id": "t4", "breakdowns": ["NUTS2", "AGE.M", "SEX", "HST"]}]})
    cube = tabulate_release(release).cube(0, {"cube_id": "t4"})
    step = ControlledRoundingStep(method="controlled_rounding", base=3)
    with pytest.raises(CubeguardError, match=r"raise 'steps' .* \(e\.g\. to 2\) .*e\.g\. to 1,092") as info:
        round_cube(cube, step)
    assert "4,368 cells" in str(info.value)
    advised = step.model_copy(update={"steps": 2, "partition_above_cells": 1_092})
    rounded = round_cube(cube, advised)
    assert check_additivity(rounded).additive and (rounded["count"].values % 3 == 0).all()
