"""Properties of ONS communal-establishment swapping (seed 003, section 3) on small random data."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.methods.ons_communal_swap.kernel import CommunalSwapResult, ons_communal_swap
from cubeguard.methods.ons_communal_swap.model import MATCHING_GROUPS, MatchingProfiles, OnsCommunalSwapStep

HIERARCHY = ("dg", "lad", "lau")
PERSON = ["sex", "age", "age10", "cas", "imputed"]


@st.composite
def communal_data(draw: st.DrawFn) -> pd.DataFrame:
    """Establishments in 2 delivery groups x 2 LADs x 3 LAUs, plus private-household persons."""
    n_establishments = draw(st.integers(1, 14))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    rows = []
    for hid in range(1, n_establishments + 1):
        dg, lad, k = draw(st.integers(0, 1)), draw(st.integers(0, 1)), draw(st.integers(0, 2))
        ce_type = draw(st.sampled_from(["1", "4", "9"]))
        sizes = (draw(st.integers(0, 9)), draw(st.integers(0, 3)), draw(st.integers(0, 2)))
        for role, count in zip("CSF", sizes, strict=True):
            rows += [(hid, role, ce_type, dg, dg * 10 + lad, dg * 100 + lad * 10 + k)] * count
    rows += [(500 + i, "N", "0", i % 2, 0, 0) for i in range(draw(st.integers(0, 6)))]
    data = pd.DataFrame(rows, columns=["hid", "ce_role", "ce_type", *HIERARCHY])
    n = len(data)
    data.insert(0, "pid", rng.permutation(n) + 7)
    data["sex"] = rng.integers(1, 3, n)
    data["age"] = rng.integers(0, 90, n)
    data["age10"] = data["age"] // 10
    data["cas"] = rng.choice(["1.1", "2.4"], n)
    data["imputed"] = (rng.random(n) < 0.1).astype(np.int8)
    data["loc"] = data["lau"] % 7  # an establishment-level attribute carried along
    return data.sample(frac=1.0, random_state=int(rng.integers(100))).reset_index(drop=True)


@st.composite
def communal_params(draw: st.DrawFn) -> OnsCommunalSwapStep:
    rates = sorted(draw(st.lists(st.sampled_from([0.0, 0.05, 0.2, 0.5, 1.0]), min_size=3, max_size=3)))
    profiles = draw(st.sampled_from([((),), (("sex", "age10"), ("sex",), ()), (("sex",),)]))
    relaxation = draw(
        st.sampled_from(
            [
                ("resident_group", "profile", "level", "ce_type"),
                ("profile", "level", "ce_type", "resident_group"),
                ("profile", "level"),
                ("level", "profile", "resident_group"),
            ]
        )
    )
    return OnsCommunalSwapStep(
        rate_a=rates[0],
        rate_b=rates[1],
        rate_c=rates[2],
        family_rate=draw(st.sampled_from([0.0, 0.3, 1.0])),
        risk_variables=draw(st.sampled_from([("sex",), ("sex", "age10")])),
        hierarchy=HIERARCHY,
        person_id="pid",
        establishment_id="hid",
        score_area="lau",
        unique_area="lad",
        family_area=draw(st.sampled_from(["lad", "lau"])),
        delivery_group="dg",
        carry_along=("loc",),
        matching=MatchingProfiles(client_adult=profiles, client_child=((),), staff=profiles[-1:]),
        family_rounding=draw(st.sampled_from(["up", "random"])),
        leave_unique_area=draw(st.booleans()),
        exchange_resident_group=draw(st.booleans()),
        relaxation=relaxation,
    )


def pairs(result: CommunalSwapResult, data: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    swapped = result.partner[result.records["swapped"]]
    before = data.set_index("pid")
    return before.loc[swapped.index], before.loc[swapped.to_numpy()], result.records.loc[swapped.index]


@settings(max_examples=150, deadline=None)
@given(communal_data(), communal_params(), st.integers(0, 2**32 - 1))
def test_pairs_satisfy_their_pass(data: pd.DataFrame, params: OnsCommunalSwapStep, seed: int) -> None:
    result = ons_communal_swap(data, params, seed)
    partner = result.partner
    assert (partner.loc[partner.to_numpy()].to_numpy() == partner.index).all()  # an involution
    own, other, rec = pairs(result, data)
    assert result.n_swapped == len(own)
    assert (own["dg"].to_numpy() == other["dg"].to_numpy()).all()
    assert (own["lau"].to_numpy() != other["lau"].to_numpy()).all()
    assert (rec["matching_group"].to_numpy() == result.records.loc[other.index, "matching_group"].to_numpy()).all()
    assert (own["imputed"] == 0).all() and (other["imputed"] == 0).all()
    same_type = own["ce_type"].to_numpy() == other["ce_type"].to_numpy()
    same_role = own["ce_role"].to_numpy() == other["ce_role"].to_numpy()
    assert same_type[rec["same_ce_type_pass"].to_numpy(bool)].all()
    assert same_role[rec["same_resident_group_pass"].to_numpy(bool)].all()
    if "ce_type" not in params.relaxation:
        assert same_type.all()
    if "resident_group" not in params.relaxation:
        assert same_role.all()
    for level in rec["swap_level"].unique():
        rows = (rec["swap_level"] == level).to_numpy()
        depth = HIERARCHY.index(level)
        assert (own[HIERARCHY[depth]].to_numpy()[rows] != other[HIERARCHY[depth]].to_numpy()[rows]).all()
        if depth:
            assert (own[HIERARCHY[depth - 1]].to_numpy()[rows] == other[HIERARCHY[depth - 1]].to_numpy()[rows]).all()
    for g, name in enumerate(MATCHING_GROUPS):
        for k, columns in enumerate(params.matching.of(g)):
            rows = ((rec["matching_group"] == name) & (rec["matched_profile"] == k)).to_numpy(bool)
            for c in columns:
                assert (own[c].to_numpy()[rows] == other[c].to_numpy()[rows]).all()
    # Sampled uniques leave the LAD where they are unique (or the DG, then the LAD if any DG
    # holds two LADs).
    if params.leave_unique_area and (result.passes["level"] == "lad").any():
        sampled_unique = (rec["sampled"] & rec["unique_level"].isin(["dg", "lad"])).to_numpy()
        assert (own["lad"].to_numpy()[sampled_unique] != other["lad"].to_numpy()[sampled_unique]).all()
    # Every sampled record is swapped or reported; only sampled records are reported.
    failed = result.records.index[result.records["sampled"] & ~result.records["swapped"]]
    assert result.unmatched.index.equals(failed)


@settings(max_examples=150, deadline=None)
@given(communal_data(), communal_params(), st.integers(0, 2**32 - 1))
def test_exchange_keeps_counts_and_private_households(
    data: pd.DataFrame, params: OnsCommunalSwapStep, seed: int
) -> None:
    result = ons_communal_swap(data, params, seed)
    out = result.data
    assert out.index.equals(data.index) and list(out.columns) == list(data.columns)
    pd.testing.assert_frame_equal(out[[*PERSON, "pid"]], data[[*PERSON, "pid"]])
    private = data["ce_role"] == "N"
    pd.testing.assert_frame_equal(out[private], data[private])
    own, other, _ = pairs(result, data)
    after = out.set_index("pid").loc[own.index]
    for column in params.moved_columns:
        assert (after[column].to_numpy() == other[column].to_numpy()).all()
    unchanged = result.records.index[~result.records["swapped"]]
    pd.testing.assert_frame_equal(out.set_index("pid").loc[unchanged], data.set_index("pid").loc[unchanged])
    keys = [["hid"], ["lau"], ["lau", "ce_type"], ["dg", "lad", "hid"]]
    if params.exchange_resident_group or (own["ce_role"].to_numpy() == other["ce_role"].to_numpy()).all():
        keys += [["lau", "ce_role"], ["hid", "ce_role"], ["lad", "ce_type", "ce_role"]]
    for k in keys:
        pd.testing.assert_series_equal(out.groupby(k).size(), data.groupby(k).size())


@settings(max_examples=150, deadline=None)
@given(communal_data(), communal_params(), st.integers(0, 2**32 - 1))
def test_sample_sizes_follow_the_bands(data: pd.DataFrame, params: OnsCommunalSwapStep, seed: int) -> None:
    result = ons_communal_swap(data, params, seed)
    cells = result.cells
    rates = np.array([0.0, params.rate_a, params.rate_b, params.rate_c])
    ce = data[data["ce_role"] != "N"]
    eligible = ce[ce["imputed"] == 0]
    index = cells.index.names

    def count(role: str) -> np.ndarray:
        return eligible[eligible["ce_role"] == role].groupby(index).size().reindex(cells.index, fill_value=0).to_numpy()

    client_rate = rates[cells["client_band"].cat.codes.to_numpy()]
    staff_rate = rates[cells["staff_band"].cat.codes.to_numpy()]
    np.testing.assert_array_equal(cells["clients_sampled"], np.ceil(np.round(client_rate * count("C"), 9)))
    staff_x = np.round(staff_rate * count("S"), 9)
    assert (cells["staff_sampled"] >= np.floor(staff_x)).all() and (cells["staff_sampled"] <= np.ceil(staff_x)).all()
    family = eligible[eligible["ce_role"] == "F"].groupby(params.family_area).size()
    sampled = result.records["sampled"] & result.records["resident_group"].eq("family")
    got = ce.set_index("pid").loc[sampled[sampled].index].groupby(params.family_area).size()
    got = got.reindex(family.index, fill_value=0).to_numpy()
    x = np.round(params.family_rate * family.to_numpy(), 9)
    if params.family_rounding == "up":
        np.testing.assert_array_equal(got, np.ceil(x))
    else:
        assert (got >= np.floor(x)).all() and (got <= np.ceil(x)).all()
    assert not result.records.loc[ce.loc[ce["imputed"] == 1, "pid"], "sampled"].any()


@settings(max_examples=100, deadline=None)
@given(communal_data(), communal_params(), st.integers(0, 2**32 - 1))
def test_rate_zero_returns_data_unchanged(data: pd.DataFrame, params: OnsCommunalSwapStep, seed: int) -> None:
    quiet = params.model_copy(update={"rate_a": 0.0, "rate_b": 0.0, "rate_c": 0.0, "family_rate": 0.0})
    result = ons_communal_swap(data, quiet, seed)
    pd.testing.assert_frame_equal(result.data, data, check_exact=True)
    assert result.n_swapped == 0 and len(result.unmatched) == 0


@settings(max_examples=100, deadline=None)
@given(communal_data(), communal_params(), st.integers(0, 2**32 - 1))
def test_same_seed_gives_same_swaps(data: pd.DataFrame, params: OnsCommunalSwapStep, seed: int) -> None:
    first = ons_communal_swap(data, params, seed)
    again = ons_communal_swap(data.copy(), params, seed)
    pd.testing.assert_series_equal(first.partner, again.partner)
    pd.testing.assert_frame_equal(first.data, again.data)
    pd.testing.assert_frame_equal(first.records, again.records)
    pd.testing.assert_frame_equal(first.unmatched, again.unmatched)
