"""Geography layouts of the synthetic census."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from cubeguard.synth import codes, generate, layout


def test_national_layout_has_polands_region_counts() -> None:
    lay = layout("national")
    assert (len(lay.nuts1), len(lay.nuts2), len(lay.nuts3), len(lay.lau)) == (7, 17, 73, 2_477)
    all_codes = [lay.country, *lay.nuts1, *lay.nuts2, *lay.nuts3, *lay.lau]
    assert len(set(all_codes)) == len(all_codes)
    # codes nest: every child code starts with its parent's code
    assert all(c.startswith(lay.nuts1[p]) for c, p in zip(lay.nuts2, lay.nuts2_parent, strict=True))
    assert all(c.startswith(lay.nuts2[p]) for c, p in zip(lay.nuts3, lay.nuts3_parent, strict=True))
    assert all(c.startswith(lay.nuts3[p]) for c, p in zip(lay.lau, lay.lau_parent, strict=True))
    assert np.bincount(lay.lau_parent, minlength=73).min() >= 1


def test_national_lau_sizes_are_skewed() -> None:
    lay = layout("national")
    pop = np.sort(lay.lau_pop)[::-1]
    assert 37_000_000 < pop.sum() < 39_000_000
    assert pop[0] > 1_000_000, "a big capital"
    assert pop[0] > 2 * pop[1]
    assert np.median(pop) < 15_000, "many small rural LAU"
    assert (pop < 5_000).sum() > 100
    assert len(set(lay.lau_loc.tolist())) >= 9
    assert codes.LOC[int(lay.lau_loc[np.argmax(lay.lau_pop)])] == "1"


def test_two_regions_layout_has_the_seed_populations() -> None:
    lay = layout("two_regions")
    assert (len(lay.nuts1), len(lay.nuts2)) == (1, 2)
    assert 3 <= len(lay.nuts3) <= 8 and 50 <= len(lay.lau) <= 300
    by_nuts2 = np.bincount(lay.lau_nuts2, weights=lay.lau_pop).astype(int).tolist()
    assert by_nuts2 == [845_539, 645_461]


def test_unknown_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown geography 'mars'; expected one of national, two_regions"):
        layout("mars")  # type: ignore[arg-type]


def test_households_spread_over_the_layout(tmp_path: Path) -> None:
    s = generate(200_000, 1, tmp_path, geography="national")
    t = pq.read_table(s.path, columns=["nuts2", "lau", "loc"]).to_pandas()
    lay = layout("national")
    share = t.nuts2.value_counts(normalize=True)
    expected = np.bincount(lay.lau_nuts2, weights=lay.lau_pop) / lay.lau_pop.sum()
    for i, code in enumerate(lay.nuts2):
        assert abs(share[code] - expected[i]) < 0.01
    assert t.lau.nunique() > 2_000
    assert (t.lau == lay.lau[int(np.argmax(lay.lau_pop))]).mean() > 0.03  # the capital
