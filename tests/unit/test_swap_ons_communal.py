"""ONS record swapping of communal-establishment residents (Frend et al. 2011, seed 003, section 3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from cubeguard.methods.ons_communal_swap import kernel as oc
from cubeguard.methods.ons_communal_swap.kernel import CommunalSwapResult, ons_communal_swap
from cubeguard.methods.ons_communal_swap.model import MatchingProfiles, OnsCommunalSwapStep
from cubeguard.swap.common import SwapDataError, SwapSeedError
from cubeguard.synth import generate

RATES = {"rate_a": 0.05, "rate_b": 0.1, "rate_c": 0.2, "family_rate": 0.1}
HAND = {
    **RATES,
    "risk_variables": ("sex",),
    "hierarchy": ("dg", "lad", "lau"),
    "score_area": "lau",
    "unique_area": "lad",
    "family_area": "lad",
    "delivery_group": "dg",
    "leave_unique_area": False,
    "person_id": "pid",
    "establishment_id": "hid",
}


def establishments(specs: list[tuple[int, int, int, str, int, int, int]], seed: int = 0) -> pd.DataFrame:
    """CE residents from (dg, lad, lau, ce_type, clients, staff, family) per establishment, plus 20
    private-household persons; persons get random sex, adult ages and activity."""
    rng = np.random.default_rng(seed)
    rows = []
    for hid, (dg, lad, lau, ce_type, n_c, n_s, n_f) in enumerate(specs, start=1):
        for role, count in (("C", n_c), ("S", n_s), ("F", n_f)):
            rows += [(hid, role, ce_type, dg, lad, lau)] * count
    for i in range(20):
        rows.append((1000 + i, "N", "0", i % 2, 0, 0))
    frame = pd.DataFrame(rows, columns=["hid", "ce_role", "ce_type", "dg", "lad", "lau"])
    n = len(frame)
    frame.insert(0, "pid", np.arange(100, 100 + n))
    frame["sex"] = rng.integers(1, 3, n)
    frame["age"] = rng.integers(20, 80, n)
    frame["cas"] = np.where(frame["ce_role"] == "S", "1.1", "2.4")
    frame["imputed"] = np.zeros(n, dtype=np.int8)
    return frame


def assert_same_frame(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Same columns, index, dtypes and bytes (categoricals: categories and codes).

    ``pandas.testing.assert_frame_equal`` takes seconds per categorical column of 200k rows.
    """
    assert list(a.columns) == list(b.columns)
    assert a.index.equals(b.index)
    for column in a.columns:
        x, y = a[column], b[column]
        assert x.dtype == y.dtype, column
        if isinstance(x.dtype, pd.CategoricalDtype):
            assert x.cat.categories.equals(y.cat.categories), column
            x, y = x.cat.codes, y.cat.codes
        bx, by = np.ascontiguousarray(x.to_numpy()), np.ascontiguousarray(y.to_numpy())
        assert bx.dtype == by.dtype and bx.tobytes() == by.tobytes(), column


def partners(result: CommunalSwapResult, data: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Original rows of each swapped resident and of its partner (aligned)."""
    swapped = result.partner[result.records["swapped"]]
    before = data.set_index("pid")
    return before.loc[swapped.index], before.loc[swapped.to_numpy()]


# --- Tables 1-4 as the paper gives them ---------------------------------------------------------


def test_tables_hold_the_papers_values() -> None:
    assert oc.CE_COUNT_SCORE == ((1, 3), (3, 2), (6, 1))  # Table 1/2 column A: 1-2, 3-5, 6+
    assert oc.UNIQUE_IN_LAD_SCORE == {True: 2, False: 1}  # column B
    assert oc.HIGH_IMPACT_SCORE == {True: 2, False: 1}  # column C
    assert oc.CLIENT_COUNT_SCORE == ((0, 0), (1, 4), (16, 3), (41, 2), (101, 1))  # Table 1 D1
    assert oc.CLIENT_TURNOVER_SCORE == {"low": 2, "high": 1}  # Table 1 E
    assert oc.STAFF_COUNT_SCORE == ((0, 0), (1, 2), (11, 1))  # Table 2 D2
    assert oc.CLIENT_RATE_BANDS == ((0, "0"), (1, "A"), (6, "B"), (26, "C"))  # Table 3
    assert oc.STAFF_RATE_BANDS == ((0, "0"), (1, "A"), (6, "B"), (12, "C"))  # Table 4


@pytest.mark.parametrize(
    ("table", "values", "scores"),
    [
        (oc.CE_COUNT_SCORE, [1, 2, 3, 5, 6, 40], [3, 3, 2, 2, 1, 1]),
        (oc.CLIENT_COUNT_SCORE, [0, 1, 15, 16, 40, 41, 100, 101, 5000], [0, 4, 4, 3, 3, 2, 2, 1, 1]),
        (oc.STAFF_COUNT_SCORE, [0, 1, 10, 11, 300], [0, 2, 2, 1, 1]),
    ],
)
def test_step_scores_at_the_band_edges(table: oc.ScoreTable, values: list[int], scores: list[int]) -> None:
    assert oc.step_score(values, table).tolist() == scores


def test_rate_bands_at_the_band_edges() -> None:
    assert oc.rate_band([0, 1, 5, 6, 25, 26, 96], oc.CLIENT_RATE_BANDS).tolist() == [0, 1, 1, 2, 2, 3, 3]
    assert oc.rate_band([0, 1, 5, 6, 11, 12, 24], oc.STAFF_RATE_BANDS).tolist() == [0, 1, 1, 2, 2, 3, 3]


def test_worked_examples_of_section_3() -> None:
    # Prison: 1 in MSOA and LAD, high impact, low turnover, 250 clients, 12 staff: CPS 24, SPS 12.
    cps = oc.client_protection_score(1, True, True, 250, False)
    sps = oc.staff_protection_score(1, True, True, 12)
    assert (int(cps), int(sps)) == (24, 12)
    assert oc.BANDS[int(oc.rate_band(cps, oc.CLIENT_RATE_BANDS))] == "B"
    assert oc.BANDS[int(oc.rate_band(sps, oc.STAFF_RATE_BANDS))] == "C"
    # University: 6 in the MSOA, low impact, high turnover, 24 clients, 1 staff: CPS 3 (A%), SPS 2.
    cps = oc.client_protection_score(6, False, False, 24, True)
    sps = oc.staff_protection_score(6, False, False, 1)
    assert (int(cps), int(sps)) == (3, 2)
    assert oc.BANDS[int(oc.rate_band(cps, oc.CLIENT_RATE_BANDS))] == "A"
    assert oc.BANDS[int(oc.rate_band(sps, oc.STAFF_RATE_BANDS))] == "A"


def test_cells_compute_factors_from_the_data() -> None:
    data = establishments(
        [
            (0, 0, 0, "4", 120, 12, 0),  # the only prison in lad 0: unique in LAD
            (0, 0, 1, "3", 30, 1, 0),  # two halls in lau 1, a third in lau 2 (same LAD)
            (0, 0, 1, "3", 10, 0, 1),
            (0, 0, 2, "3", 5, 1, 0),
        ]
    )
    cells = ons_communal_swap(data, OnsCommunalSwapStep(**HAND), seed=0).cells
    prison = cells.loc[(0, 0, 0, "4")]
    assert prison[["establishments", "score_a", "score_d1", "score_d2", "cps", "sps"]].tolist() == [1, 3, 1, 1, 24, 12]
    assert (prison["unique_in_lad"], prison["high_impact"], prison["high_turnover"]) == (True, True, False)
    halls = cells.loc[(0, 0, 1, "3")]
    # A=3 (2 halls), B=1 (3 in the LAD), C=1, D1=3 (40 clients), E=1 (high turnover).
    assert halls[["establishments", "clients", "staff", "family", "cps", "sps"]].tolist() == [2, 40, 1, 1, 9, 6]
    assert (halls["client_band"], halls["staff_band"]) == ("B", "B")


# --- sampling ------------------------------------------------------------------------------------


def test_client_and_family_samples_are_rounded_up() -> None:
    specs = [(0, lad, lad * 10 + k, t, 3 + 7 * k, 0, 2 + k) for lad in range(3) for k in range(3) for t in "19"]
    data = establishments(specs, seed=1)
    data.loc[data.index[::9], "imputed"] = 1
    params = OnsCommunalSwapStep(**{**HAND, "rate_a": 0.07, "rate_b": 0.07, "rate_c": 0.07, "family_rate": 0.13})
    result = ons_communal_swap(data, params, seed=3)
    ce = data[data["ce_role"] != "N"]
    eligible = ce[ce["imputed"] == 0]
    clients = eligible[eligible["ce_role"] == "C"].groupby(["dg", "lad", "lau", "ce_type"]).size()
    cells = result.cells
    assert (cells.loc[clients.index, "client_band"] != "0").all()
    expected = np.ceil(np.round(0.07 * clients, 9)).astype(int)
    assert cells.loc[clients.index, "clients_sampled"].tolist() == expected.tolist()
    assert (expected > 0.07 * clients).any()  # rounding up happened
    family = eligible[eligible["ce_role"] == "F"].groupby("lad").size()
    sampled = result.records["sampled"] & result.records["resident_group"].eq("family")
    per_lad = ce.set_index("pid").loc[sampled[sampled].index].groupby("lad").size()
    assert per_lad.reindex(family.index, fill_value=0).tolist() == np.ceil(0.13 * family).astype(int).tolist()
    assert not result.records.loc[ce.loc[ce["imputed"] == 1, "pid"], "sampled"].any()


def test_random_family_rounding_takes_floor_or_ceiling() -> None:
    data = establishments([(0, 0, 0, "1", 5, 0, 7), (0, 0, 1, "1", 5, 0, 3)])
    params = OnsCommunalSwapStep(**{**HAND, "family_rate": 0.25, "family_rounding": "random"})
    n_family = [
        int((r.records["sampled"] & r.records["resident_group"].eq("family")).sum())
        for r in (ons_communal_swap(data, params, seed) for seed in range(40))
    ]
    assert set(n_family) == {2, 3}  # 10 * 0.25 = 2.5


def test_staff_round_up_probability_grows_with_sps() -> None:
    """One staff record, rate * 1 < 1: sampled with probability min(1, SPS / 12).

    300 independent cells (one uniform each) x 4 seeds = 1200 trials; 5-sd bound (false-positive
    rate ~6e-7).
    """
    params = OnsCommunalSwapStep(**HAND)
    # Six halls in each LAU (= LAD), the first with one staff: A=1, B=1, C=1, D2=2: SPS 2, band A.
    halls = establishments([(0, m, m, "3", 3, int(k == 0), 0) for m in range(300) for k in range(6)])
    # A care home alone in its LAD: A=3, B=2, C=1, D2=2: SPS 12, band C.
    lone = establishments([(0, m, m, "1", 3, 1, 0) for m in range(300)])
    for data, sps, p in ((halls, 2, 2 / 12), (lone, 12, 1.0)):
        staff = data.loc[data["ce_role"] == "S", "pid"]
        runs = [ons_communal_swap(data, params, seed) for seed in range(4)]
        assert set(runs[0].cells["sps"]) == {sps}
        hits = np.mean([r.records.loc[staff, "sampled"].mean() for r in runs])
        assert abs(hits - p) <= 5 * np.sqrt(p * (1 - p) / (4 * len(staff))) + 1e-12


def test_sampling_is_weighted_by_risk_score() -> None:
    """Clients with sex 1, 1, 2: scores 1/2, 1/2, 1; one drawn: P(unique) = 1/2, not 1/3.

    500 independent cells x 3 seeds = 1500 trials; 5-sd bound (false-positive rate ~6e-7).
    """
    data = establishments([(0, m, m, "1", 3, 0, 0) for m in range(500)])
    data.loc[data["ce_role"] == "C", "sex"] = np.tile([1, 1, 2], 500)
    params = OnsCommunalSwapStep(**{**HAND, "rate_a": 0.3, "rate_b": 0.3, "rate_c": 0.3})
    unique = data.loc[(data["ce_role"] == "C") & (data["sex"] == 2), "pid"]
    runs = [ons_communal_swap(data, params, seed) for seed in range(3)]
    assert (runs[0].records.loc[unique, "risk_score"] == 1.0).all()
    assert (runs[0].cells["clients_sampled"] == 1).all()
    hits = np.mean([r.records.loc[unique, "sampled"].mean() for r in runs])
    assert abs(hits - 0.5) <= 5 * np.sqrt(0.25 / 1500)


# --- matching ------------------------------------------------------------------------------------


def test_same_ce_type_first_then_other_types() -> None:
    # dg 0: prisons in two LAUs; dg 1: one prison and a care home.
    data = establishments(
        [(0, 0, 0, "4", 30, 0, 0), (0, 0, 1, "4", 30, 0, 0), (1, 1, 2, "4", 30, 0, 0), (1, 1, 3, "1", 200, 0, 0)]
    )
    params = OnsCommunalSwapStep(**{**HAND, "rate_a": 0.1, "rate_b": 0.1, "rate_c": 0.1})
    result = ons_communal_swap(data, params, seed=2)
    own, other = partners(result, data)
    assert (own["dg"].to_numpy() == other["dg"].to_numpy()).all()
    prisons = own["ce_type"].eq("4").to_numpy()
    in_dg0 = own["dg"].eq(0).to_numpy()
    assert (other["ce_type"].to_numpy()[prisons & in_dg0] == "4").all()
    assert (other["ce_type"].to_numpy()[prisons & ~in_dg0] == "1").all()
    rec = result.records.loc[own.index]
    assert rec.loc[prisons & ~in_dg0, "same_ce_type_pass"].eq(False).all()
    assert rec.loc[prisons & in_dg0, "match_pass"].eq(0).all()


def test_never_other_type_or_group_when_not_relaxed() -> None:
    data = establishments([(0, 0, 0, "4", 30, 0, 2), (0, 0, 1, "1", 200, 30, 0), (0, 0, 2, "1", 100, 20, 0)])
    data["cas"] = "1.1"  # adult family are matched with staff
    params = OnsCommunalSwapStep(**{**HAND, "rate_c": 0.3, "relaxation": ("profile", "level")})
    result = ons_communal_swap(data, params, seed=1)
    own, other = partners(result, data)
    assert result.n_swapped > 20
    assert (own["ce_type"].to_numpy() == other["ce_type"].to_numpy()).all()
    assert (own["ce_role"].to_numpy() == other["ce_role"].to_numpy()).all()
    prison = data.loc[data["ce_type"] == "4", "pid"]
    assert result.records.loc[prison, "sampled"].sum() > 1
    assert result.unmatched.index.isin(prison).all()
    assert result.unmatched["reason"].eq(oc.NO_CANDIDATE).all()


def test_family_matching_groups_and_swap_with_staff() -> None:
    data = establishments([(0, 0, 0, "1", 5, 0, 3), (0, 0, 1, "1", 5, 4, 0)])
    family = data.index[data["ce_role"] == "F"]
    data.loc[family, "age"] = [8, 40, 40]
    data.loc[family, "cas"] = ["2.1", "1.1", "2.4"]
    params = OnsCommunalSwapStep(**{**HAND, "family_rate": 1.0})
    result = ons_communal_swap(data, params, seed=0)
    groups = result.records.loc[data.loc[family, "pid"], "matching_group"].tolist()
    assert groups == ["client_child", "staff", "client_adult"]
    employed = data.loc[family[1], "pid"]
    assert result.records.loc[employed, "swapped"]
    partner = result.partner[employed]
    assert data.set_index("pid").loc[partner, "ce_role"] == "S"
    assert not result.records.loc[employed, "same_resident_group_pass"]
    # The resident group moves with the place: the family member takes the staff place.
    after = result.data.set_index("pid")
    assert (after.loc[employed, "ce_role"], after.loc[partner, "ce_role"]) == ("S", "F")
    child = data.loc[family[0], "pid"]
    assert result.unmatched.loc[child, "reason"] == oc.NO_CANDIDATE  # no other child in the DG


def test_resident_group_stays_with_the_person_when_asked() -> None:
    data = establishments([(0, 0, 0, "1", 5, 0, 3), (0, 0, 1, "1", 5, 4, 0)])
    data["cas"] = "1.1"
    data["age"] = 40
    params = OnsCommunalSwapStep(**{**HAND, "family_rate": 1.0, "exchange_resident_group": False})
    result = ons_communal_swap(data, params, seed=0)
    assert result.n_swapped > 0
    pd.testing.assert_series_equal(result.data["ce_role"], data["ce_role"])


def test_unmatched_reasons() -> None:
    # Staff: SPS 6 (band B): 2 of 10 sampled in lau 0; the single staff of lau 1 is the only
    # candidate (its round-up has probability 6 / 1000) and is taken by the first.
    data = establishments([(0, 0, 0, "1", 20, 10, 0), (0, 0, 1, "1", 20, 1, 0)])
    params = OnsCommunalSwapStep(**{**HAND, "rate_b": 0.2, "rate_c": 0.2, "staff_round_up_score": 1000})
    result = ons_communal_swap(data, params, seed=0)
    assert result.cells["staff_sampled"].tolist() == [2, 0]
    assert result.cells["staff_swapped"].tolist() == [1, 1]
    assert result.unmatched["resident_group"].tolist() == ["staff"]
    assert result.unmatched["reason"].tolist() == [oc.CANDIDATES_USED]
    # A sampled record whose partners would all be sampled too has no candidate.
    alone = establishments([(0, 0, 0, "1", 10, 0, 0), (0, 0, 1, "1", 1, 0, 0)])
    result = ons_communal_swap(alone, params, seed=0)
    assert result.cells["clients_sampled"].tolist() == [2, 1]
    assert result.n_swapped == 2
    assert result.unmatched["reason"].tolist() == [oc.NO_CANDIDATE, oc.NO_CANDIDATE]


def test_uniques_leave_the_area_where_they_are_unique() -> None:
    specs = [(0, lad, lad * 10 + k, "1", 12, 0, 0) for lad in range(3) for k in range(3)]
    data = establishments(specs, seed=5)
    first = data["hid"] == 1
    data.loc[first, "age"] = np.arange(100, 100 + first.sum())  # unique in the DG; 20-79 elsewhere
    params = OnsCommunalSwapStep(**{**HAND, "risk_variables": ("age",), "leave_unique_area": True})
    result = ons_communal_swap(data, params, seed=4)
    own, other = partners(result, data)
    first_ce = own["hid"].eq(1).to_numpy() & result.records.loc[own.index, "sampled"].to_numpy()
    assert first_ce.any()
    assert (own["lad"].to_numpy()[first_ce] != other["lad"].to_numpy()[first_ce]).all()
    assert result.records.loc[own.index[first_ce], "unique_level"].eq("dg").all()


def test_no_residents_and_row_labels_as_ids() -> None:
    private = establishments([]).drop(columns="pid")
    result = ons_communal_swap(private, OnsCommunalSwapStep(**{**HAND, "person_id": None}), seed=0)
    pd.testing.assert_frame_equal(result.data, private)
    assert result.n_swapped == 0 and len(result.records) == 0 and len(result.cells) == 0
    data = establishments([(0, 0, 0, "1", 20, 0, 0), (0, 0, 1, "1", 20, 0, 0)]).drop(columns="pid")
    data.index = pd.Index([f"r{i}" for i in range(len(data))])
    result = ons_communal_swap(data, OnsCommunalSwapStep(**{**HAND, "person_id": None}), seed=0)
    assert result.n_swapped > 0
    assert result.partner.index.equals(data.index[data["ce_role"] != "N"])
    swapped = result.partner[result.records["swapped"]]
    moved = result.data.loc[swapped.index, ["hid", "lau"]].to_numpy()
    np.testing.assert_array_equal(moved, data.loc[swapped.to_numpy(), ["hid", "lau"]].to_numpy())


# --- identity, determinism, invariants on synthetic census data -----------------------------------


@pytest.fixture(scope="module")
def census(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    path: Path = generate(200_000, 5, tmp_path_factory.mktemp("synth"), geography="national").path
    data = pd.read_parquet(path)
    data["age5"] = (data["age"] // 5).astype(np.int8)
    data["age10"] = (data["age"] // 10).astype(np.int8)
    return data


def census_params(**update: object) -> OnsCommunalSwapStep:
    matching = MatchingProfiles(
        client_adult=(("sex", "age5", "cas"), ("sex", "age10"), ()),
        client_child=(("sex", "age5"), ()),
        staff=(("sex", "age10"), ()),
    )
    base = OnsCommunalSwapStep(
        **RATES,
        risk_variables=("sex", "age10", "cas"),
        matching=matching,
        carry_along=("loc",),
        person_id="pid",
        establishment_id="hid",
    )
    return base.model_copy(update=update)


def test_rate_zero_returns_the_data_bit_for_bit(census: pd.DataFrame) -> None:
    params = census_params(rate_a=0.0, rate_b=0.0, rate_c=0.0, family_rate=0.0)
    result = ons_communal_swap(census, params, seed=1)
    assert_same_frame(result.data, census)
    assert result.n_swapped == 0 and not result.records["sampled"].any() and len(result.unmatched) == 0


def test_same_seed_same_swaps(census: pd.DataFrame) -> None:
    params = census_params()
    first = ons_communal_swap(census, params, seed=8)
    again = ons_communal_swap(census.copy(), params, seed=8)
    other = ons_communal_swap(census, params, seed=9)
    assert first.n_swapped > 100
    pd.testing.assert_series_equal(first.partner, again.partner)
    assert_same_frame(first.data, again.data)
    pd.testing.assert_frame_equal(first.cells, again.cells)
    assert not first.partner.equals(other.partner)


def test_swaps_respect_delivery_group_area_and_pass(census: pd.DataFrame) -> None:
    params = census_params(rate_a=0.1, rate_b=0.2, rate_c=0.4, family_rate=0.3)
    result = ons_communal_swap(census, params, seed=3)
    own, other = partners(result, census)
    rec = result.records.loc[own.index]
    assert len(own) > 500
    assert (own["nuts2"].to_numpy() == other["nuts2"].to_numpy()).all()
    assert (own["lau"].to_numpy() != other["lau"].to_numpy()).all()
    assert (rec["matching_group"].to_numpy() == result.records.loc[other.index, "matching_group"].to_numpy()).all()
    same_type = own["ce_type"].to_numpy() == other["ce_type"].to_numpy()
    same_role = own["ce_role"].to_numpy() == other["ce_role"].to_numpy()
    assert same_type[rec["same_ce_type_pass"].to_numpy(bool)].all()
    assert same_role[rec["same_resident_group_pass"].to_numpy(bool)].all()
    first = rec["match_pass"].eq(0).to_numpy(bool)
    assert first.sum() > 10 and same_type[first].all() and same_role[first].all()
    assert (own["nuts3"].to_numpy()[first] == other["nuts3"].to_numpy()[first]).all()
    # Each pair shares the area above its swap level and the matching profile of the pass.
    levels = list(params.hierarchy)
    for level in rec["swap_level"].unique():
        rows = (rec["swap_level"] == level).to_numpy()
        depth = levels.index(level)
        assert (own[levels[depth]].to_numpy()[rows] != other[levels[depth]].to_numpy()[rows]).all()
        assert (own[levels[depth - 1]].to_numpy()[rows] == other[levels[depth - 1]].to_numpy()[rows]).all()
    for g, name in enumerate(("client_adult", "client_child", "staff")):
        profiles = params.matching.of(g)
        for k, columns in enumerate(profiles):
            rows = ((rec["matching_group"] == name) & (rec["matched_profile"] == k)).to_numpy(bool)
            for c in columns:
                assert (own[c].to_numpy()[rows] == other[c].to_numpy()[rows]).all()


def test_exchange_and_invariants(census: pd.DataFrame) -> None:
    params = census_params(rate_a=0.1, rate_b=0.2, rate_c=0.4, family_rate=0.3)
    result = ons_communal_swap(census, params, seed=4)
    own, other = partners(result, census)
    after = result.data.set_index("pid").loc[own.index]
    for column in params.moved_columns:
        assert (after[column].to_numpy() == other[column].to_numpy()).all(), column
    person = ["sex", "age", "cas", "occ", "imputed", "rkey"]
    assert_same_frame(result.data[person], census[person])
    private = census["hh_kind"] == "P"
    assert_same_frame(result.data[private], census[private])
    for keys in (["lau", "ce_role"], ["nuts3", "ce_type", "ce_role"], ["hid"], ["lau", "hid"]):
        before = census.groupby(keys, observed=True).size()
        pd.testing.assert_series_equal(result.data.groupby(keys, observed=True).size(), before)
    imputed = census.loc[(census["imputed"] == 1) & (census["hh_kind"] == "C"), "pid"]
    assert len(imputed) > 0
    assert not result.records.loc[imputed, ["sampled", "swapped"]].any().any()


# --- errors and secrecy ----------------------------------------------------------------------------


def test_rates_are_kept_out_of_repr_and_errors() -> None:
    params = OnsCommunalSwapStep(
        **{**HAND, "rate_a": 0.0123, "rate_b": 0.0456, "rate_c": 0.0789, "family_rate": 0.0321}
    )
    for text in (repr(params), str(params)):
        assert "0.0123" not in text and "0.0456" not in text and "0.0789" not in text and "0.0321" not in text
        assert "rate_a" not in text
    with pytest.raises(ValidationError) as error:
        OnsCommunalSwapStep(**{**HAND, "rate_c": 0.777, "rate_b": 0.888})
    assert "rate_a <= rate_b <= rate_c" in str(error.value)
    assert "0.777" not in str(error.value) and "0.888" not in str(error.value)
    with pytest.raises(ValidationError) as error:
        OnsCommunalSwapStep(**{**HAND, "rate_c": 1.2345})
    assert "less than or equal to 1" in str(error.value) and "1.2345" not in str(error.value)


def test_invalid_params() -> None:
    with pytest.raises(ValidationError, match="score_area 'msoa' must be one of the hierarchy columns"):
        OnsCommunalSwapStep(**{**HAND, "score_area": "msoa"})
    with pytest.raises(ValidationError, match=r"unique_area \(the LAD\) must be score_area"):
        OnsCommunalSwapStep(**{**HAND, "unique_area": "lau", "score_area": "lad"})
    with pytest.raises(ValidationError, match=r"columns \['lau'\] appear more than once"):
        OnsCommunalSwapStep(**{**HAND, "carry_along": ("lau",)})
    with pytest.raises(ValidationError, match=r"matching, risk and age columns \['lad'\] are exchanged"):
        OnsCommunalSwapStep(**{**HAND, "risk_variables": ("lad",)})
    with pytest.raises(ValidationError, match="relaxation must contain 'profile' and 'level'"):
        OnsCommunalSwapStep(**{**HAND, "relaxation": ("ce_type",)})
    with pytest.raises(ValidationError, match="client_code, staff_code and family_code must differ"):
        OnsCommunalSwapStep(**{**HAND, "staff_code": "C"})


def test_invalid_data() -> None:
    data = establishments([(0, 0, 0, "1", 5, 1, 0), (0, 0, 1, "1", 5, 1, 0)])
    params = OnsCommunalSwapStep(**HAND)
    with pytest.raises(SwapDataError, match=r"communal swap columns \['sex'\] are not in the data"):
        ons_communal_swap(data.drop(columns="sex"), params, seed=0)
    bad = data.copy()
    bad.loc[0, "lau"] = 7
    with pytest.raises(SwapDataError, match=r"column 'lau' varies within 1 establishments \(e.g. 1\)"):
        ons_communal_swap(bad, params, seed=0)
    bad = data.astype({"age": float})
    bad.loc[1, "age"] = np.nan
    with pytest.raises(SwapDataError, match="column 'age' has 1 missing values among CE residents"):
        ons_communal_swap(bad, params, seed=0)
    bad = data.copy()
    bad.loc[1, "pid"] = bad.loc[0, "pid"]
    with pytest.raises(SwapDataError, match="person ids in 'pid' repeat among CE residents"):
        ons_communal_swap(bad, params, seed=0)
    with pytest.raises(SwapDataError, match="age column 'age' must be numeric"):
        ons_communal_swap(data.astype({"age": str}), params, seed=0)
    with pytest.raises(SwapSeedError, match="seed must be a non-negative integer"):
        ons_communal_swap(data, params, seed=-1)
    # Private-household rows may hold anything: missing values there are fine.
    ok = data.astype({"age": float})
    ok.loc[ok["ce_role"] == "N", "age"] = np.nan
    ons_communal_swap(ok, params, seed=0)
