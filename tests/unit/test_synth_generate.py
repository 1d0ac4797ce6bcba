"""cubeguard.synth.generate: file layout, determinism, household consistency, plausible marginals."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from cubeguard.errors import CubeguardError
from cubeguard.synth import codes, generate, layout, schema

N = 40_000
CLASSIFICATIONS = Path(__file__).resolve().parents[2] / "configs" / "classifications"
HOUSEHOLD_COLUMNS = ["hh_kind", "ce_type", "nuts1", "nuts2", "nuts3", "lau", "loc", "har", "sph", "tph", "tsh"]


@pytest.fixture(scope="module")
def national(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    out = tmp_path_factory.mktemp("national")
    summary = generate(N, 11, out, geography="national", row_group_size=9_000)
    assert summary.path == out / "persons.parquet"
    return summary.path, pq.read_table(summary.path).to_pandas()


@pytest.fixture(scope="module")
def df(national: tuple[Path, pd.DataFrame]) -> pd.DataFrame:
    frame = national[1]
    for c in frame.columns:
        if isinstance(frame[c].dtype, pd.CategoricalDtype):
            frame[c] = frame[c].astype(str)
    return frame


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_schema_row_groups_and_types(national: tuple[Path, pd.DataFrame]) -> None:
    path, _ = national
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == N
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [9_000] * 4 + [4_000]
    assert meta.row_group(0).column(0).compression == "ZSTD"
    table = pq.read_table(path)
    assert table.schema == schema("national")
    assert table.schema.names == list(codes.COLUMNS)
    assert table.schema.field("lau").type == pa.dictionary(pa.int16(), pa.string())
    assert table.schema.field("sex").type == pa.dictionary(pa.int8(), pa.string())
    types = {n: table.schema.field(n).type for n in ("pid", "hid", "age", "yae", "sph", "imputed", "is_ref", "rkey")}
    assert types == {"pid": pa.int64(), "hid": pa.int64(), "age": pa.int8(), "yae": pa.int16(), "sph": pa.int8(),
                     "imputed": pa.int8(), "is_ref": pa.bool_(), "rkey": pa.float64()}  # fmt: skip
    # every row group carries the full code list as its dictionary
    for name in codes.CODE_COLUMNS:
        assert table[name].chunk(0).dictionary.to_pylist() == list(codes.CODE_COLUMNS[name])


def test_ids_and_reference_persons(df: pd.DataFrame) -> None:
    assert (df.pid.to_numpy() == np.arange(1, N + 1)).all()
    hid = df.hid.to_numpy()
    assert hid[0] == 1 and (np.diff(hid) >= 0).all() and (np.diff(hid) <= 1).all(), "members are contiguous"
    first = np.r_[True, hid[1:] != hid[:-1]]
    assert (df.is_ref.to_numpy() == first).all(), "exactly one reference person per unit, listed first"


def test_household_members_share_household_variables(df: pd.DataFrame) -> None:
    per_unit = df.groupby("hid")[HOUSEHOLD_COLUMNS].nunique()
    assert (per_unit == 1).all().all()
    private = df[df.hh_kind == "P"]
    size = private.groupby("hid").size()
    assert (private.groupby("hid").sph.first() == size).all()
    assert set(private.ce_type) == {"0"} and set(private.ce_role) == {"N"}
    assert set(private.hst) <= {"1.1.1", "1.1.2", "1.1.3", "1.2.1", "1.2.2"}
    ce = df[df.hh_kind == "C"]
    assert (ce.sph == codes.SPH_NOT_APPLICABLE).all()
    assert set(ce.tph) == {"4"} and set(ce.tsh) == {"5"} and set(ce.har) == {"3"}
    assert set(ce.hst) == {"2"} and set(ce.fst) == {"4"} and set(ce.ce_role) <= {"C", "S", "F"}
    assert "0" not in set(ce.ce_type)
    # the geography columns are the LAU's ancestors
    lay = layout("national")
    lau = pd.Series(range(len(lay.lau)), index=list(lay.lau))[df.lau].to_numpy()
    assert (np.asarray(lay.nuts3)[lay.lau_parent[lau]] == df.nuts3.to_numpy()).all()
    assert (np.asarray(lay.nuts1)[lay.lau_nuts1[lau]] == df.nuts1.to_numpy()).all()


def test_household_composition(df: pd.DataFrame) -> None:
    private = df[df.hh_kind == "P"]
    alone = private[private.sph == 1]
    assert set(alone.hst) == {"1.2.1"} and set(alone.tph) == {"1.1"}
    partners = private[private.hst == "1.1.1"]
    assert set(partners.fst) <= {"1.1", "1.2", "1.3"}
    assert (partners[partners.fst == "1.1"].lms == "2.1").all()
    assert (partners[partners.fst == "1.2"].lms == "2.2").all()
    couples = private[private.tph.str.startswith("2.1")]
    assert ((couples.hst == "1.1.1").groupby(couples.hid).sum() == 2).all()
    lone = private[private.tph.str.match(r"2\.[23]\.")]
    assert ((lone.hst == "1.1.2").groupby(lone.hid).sum() == 1).all()


def test_age_drives_activity_occupation_and_education(df: pd.DataFrame) -> None:
    child = df.age < 15
    assert (df[child].cas == "2.1").all() and (df[~child].cas != "2.1").all()
    assert (df[child].occ == "12.1").all() and (df[child].edu == "11").all()
    assert (df[child].lms.isin(["1", "5"])).all()
    employed = df.cas == "1.1"
    assert not (employed & child).any(), "no employed children"
    assert ((df.occ.isin(["12.1", "12.2"])) == ~employed).all(), "occupation not applicable iff not employed"
    assert ((df.ind == "12") == ~employed).all() and ((df.sie == "6") == ~employed).all()
    assert (df[~child].edu != "11").all()
    assert df.age.between(0, 110).all() and df.age.max() >= 95
    # plausible shares
    assert 0.12 < child.mean() < 0.21
    assert 0.14 < (df.age >= 65).mean() < 0.24
    working = df[df.age.between(30, 54)]
    assert 0.65 < (working.cas == "1.1").mean() < 0.9
    old = df[df.age >= 70]
    assert (old.cas == "2.2").mean() > 0.8
    assert (df[df.age.between(25, 34)].edu.isin(["7", "8", "9"])).mean() > 2 * (
        df[df.age >= 75].edu.isin(["7", "8", "9"])
    ).mean()
    assert (old.lms == "3").mean() > (df[df.age.between(20, 39)].lms == "3").mean() + 0.1


def test_migration_variables_are_consistent(df: pd.DataFrame) -> None:
    native = df.pob == "1"
    foreign_born = ~native & (df.pob != "3")
    assert 0.04 < foreign_born.mean() < 0.2
    yae = df.yae.to_numpy()
    arrived = (yae != codes.YAE_NEVER_ABROAD) & (yae != codes.YAE_NOT_STATED)
    assert (arrived[foreign_born.to_numpy()] | (yae[foreign_born.to_numpy()] == codes.YAE_NOT_STATED)).all()
    birth_year = codes.CENSUS_YEAR - df.age.to_numpy().astype(np.int64)
    assert (yae[arrived] >= birth_year[arrived]).all() and (yae[arrived] <= codes.CENSUS_YEAR).all()
    assert ((df.roy == "4") == (df.age == 0)).all()
    # most foreign citizens were born abroad, in the country of their citizenship
    foreign_cit = df.coc.str.startswith("2.")
    same = (df.coc == df.pob)[foreign_cit]
    assert same.mean() > 0.6
    # migration is a household matter: most immigrant households have no native-born adult ref
    ref = df[df.is_ref & (df.hh_kind == "P")]
    private = df[df.hh_kind == "P"]
    members_abroad = (private.pob != "1").groupby(private.hid).mean()
    assert (members_abroad[ref.hid[ref.pob != "1"]] > 0.5).mean() > 0.7


def test_shares_of_special_groups(df: pd.DataFrame) -> None:
    assert 0.012 < (df.hh_kind == "C").mean() < 0.024  # communal establishments ~1.5-2%
    imputed = df.imputed.to_numpy() == 1
    assert 0.02 < imputed.mean() < 0.05
    # clustered: an imputed person mostly lives with another imputed person
    by_unit = df.groupby("hid").imputed.agg(["sum", "size"])
    multi = by_unit[by_unit["size"] > 1]
    assert (multi["sum"] >= 2).sum() > 0.6 * (multi["sum"] >= 1).sum()
    rkey = df.rkey.to_numpy()
    assert ((rkey >= 0) & (rkey < 1)).all() and abs(rkey.mean() - 0.5) < 0.01


def test_summary_counts(tmp_path: Path) -> None:
    seen: list[int] = []
    s = generate(70_000, 3, tmp_path, progress=seen.append)
    t = pq.read_table(s.path, columns=["hid", "hh_kind"]).to_pandas()
    assert s.persons == 70_000 and seen == [65_536, 70_000 - 65_536]  # increments per block
    assert s.persons_in_households + s.persons_in_ce == s.persons
    assert s.persons_in_ce == (t.hh_kind == "C").sum()
    assert s.private_households == t[t.hh_kind == "P"].hid.nunique()
    assert s.establishments == t[t.hh_kind == "C"].hid.nunique()
    assert s.row_groups == 1 and s.geography == "national" and s.seed == 3


def test_same_seed_same_bytes_other_seed_other_data(tmp_path: Path) -> None:
    a = generate(5_000, 42, tmp_path / "a", geography="two_regions")
    b = generate(5_000, 42, tmp_path / "b", geography="two_regions")
    c = generate(5_000, 43, tmp_path / "c", geography="two_regions")
    assert _sha(a.path) == _sha(b.path)
    assert _sha(a.path) != _sha(c.path)
    assert not pq.read_table(a.path)["age"].equals(pq.read_table(c.path)["age"])


def test_row_group_size_does_not_change_the_data(tmp_path: Path) -> None:
    a = generate(140_000, 5, tmp_path / "a", row_group_size=1_000_000)
    b = generate(140_000, 5, tmp_path / "b", row_group_size=33_333)
    assert pq.ParquetFile(b.path).metadata.num_row_groups == 5
    assert pq.read_table(a.path).equals(pq.read_table(b.path))


def test_a_larger_population_starts_with_the_smaller_one(tmp_path: Path) -> None:
    """Blocks draw from their own streams, so the first full block does not depend on the total."""
    small = pq.read_table(generate(70_000, 9, tmp_path / "s").path)
    large = pq.read_table(generate(131_072, 9, tmp_path / "l").path)
    assert small.slice(0, 65_536).equals(large.slice(0, 65_536))


def test_tiny_populations_are_exact(tmp_path: Path) -> None:
    for n in (1, 2, 7):
        s = generate(n, 0, tmp_path / str(n), geography="two_regions")
        t = pq.read_table(s.path)
        assert t.num_rows == n
        assert t["is_ref"].to_pylist()[0] is True


def test_bad_arguments_are_reported_together(tmp_path: Path) -> None:
    with pytest.raises(CubeguardError) as err:
        generate(0, -1, tmp_path, geography="mars", row_group_size=0)  # type: ignore[arg-type]
    msg = str(err.value)
    assert "persons must be a positive integer, got 0" in msg
    assert "seed must be a non-negative integer, got -1" in msg
    assert "geography must be one of 'national', 'two_regions', got 'mars'" in msg
    assert "row_group_size must be a positive integer, got 0" in msg
    with pytest.raises(CubeguardError, match=r"persons must be a positive integer, got 2\.5"):
        generate(2.5, 1, tmp_path)  # type: ignore[arg-type]


def _leaf_values(doc: dict[str, Any]) -> set[Any]:
    parents = {c.get("parent") for c in doc["codes"]}
    out: set[Any] = set()
    for c in doc["codes"]:
        if c["code"] in parents:
            continue
        if "values" in c:
            out.update(c["values"])
        elif "range" in c:
            out.update(range(c["range"][0], c["range"][1] + 1))
        else:
            out.add(c["code"])
    return out


def test_every_raw_value_is_a_leaf_of_its_classification(df: pd.DataFrame) -> None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    checked = set()
    for path in sorted(CLASSIFICATIONS.glob("*.yaml")):
        if path.stem == "geo_two_regions":
            continue
        doc = yaml.load(path.read_text(), Loader=loader)
        values = set(df[doc["column"]].unique().tolist())
        unknown = values - _leaf_values(doc)
        assert not unknown, f"{path.name}: {sorted(unknown)[:5]} are not leaf values"
        checked.add(doc["column"])
    assert checked == set(codes.COLUMNS) - {"pid", "hid", "is_ref", "nuts1", "nuts2", "nuts3", "rkey"}
