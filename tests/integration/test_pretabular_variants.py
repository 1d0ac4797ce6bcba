"""Every record-swapping variant as a pre_tabular step, on a small synthetic census (20k persons).

Each variant runs through ``apply_pre_tabular`` as a release would; the tests check the internal
report (counts per level and per area add up, effect on the report cubes), the swapped microdata
(only the method's columns change, swap rate 0 gives the input back, the seed fixes the result)
and that secrets given by reference stay out of the public summary.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from cubeguard.config import load_release
from cubeguard.config.load import Release
from cubeguard.errors import ConfigError, CubeguardError
from cubeguard.methods import swap_section
from cubeguard.pipeline.inputs import ensure_microdata
from cubeguard.pipeline.pretabular import apply_pre_tabular
from cubeguard.pipeline.tabulation import tabulate_release
from cubeguard.release.reporting import step_reports
from cubeguard.report.section import render
from cubeguard.secrets import EnvSecret
from cubeguard.synth import generate, layout

ROOT = Path(__file__).resolve().parents[2]
CLASSIFICATIONS = ROOT / "configs" / "classifications"
PRIVATE = {"hh_kind": ["P"]}
REPORT_CUBES = ["geo", "nogeo"]
# Distinctive secret values, so that a leak into the summary would be found by a text search.
RATE, SEED = 0.0731, 987654321
THRESHOLDS = [0.00131, 0.0131, 0.0531, 0.2131]
COMMUNAL_RATES = {"rate_a": 0.0731, "rate_b": 0.1731, "rate_c": 0.3731, "family_rate": 0.1931}

STEPS: dict[str, dict[str, Any]] = {
    "targeted_swap": {
        "hierarchy": ["nuts1", "nuts2", "nuts3"],
        "similar": [["sph"]],
        "risk_variables": ["sex", "coc"],
        "carry_along": ["lau", "loc"],
        "swap_rate": RATE,
        "k_anonymity": 3,
        "where": PRIVATE,
    },
    "random_swap": {
        "swap_columns": ["lau"],
        "strata": ["nuts2", "sph"],
        "carry_along": ["nuts3", "loc"],
        "swap_rate": RATE,
        "where": PRIVATE,
    },
    "ons_household_swap": {
        "hierarchy": ["nuts1", "nuts2", "nuts3", "lau"],
        "household_size": "sph",
        "matching": [["tph"], []],
        "risk_variables": ["sex", "age", "coc"],
        "risk_thresholds": THRESHOLDS,
        "carry_along": ["loc"],
        "swap_rate": RATE,
        "where": PRIVATE,
    },
    "ons_communal_swap": {**COMMUNAL_RATES, "risk_variables": ["sex", "cas"], "carry_along": ["loc"]},
}
ZERO: dict[str, dict[str, Any]] = {
    "targeted_swap": {"swap_rate": 0.0, "k_anonymity": 0},
    "random_swap": {"swap_rate": 0.0},
    "ons_household_swap": {"swap_rate": 0.0},
    "ons_communal_swap": dict.fromkeys(COMMUNAL_RATES, 0.0),
}
GEOGRAPHY = ["nuts1", "nuts2", "nuts3", "lau", "loc"]
MOVED = {
    "targeted_swap": GEOGRAPHY,
    "random_swap": ["nuts3", "lau", "loc"],
    "ons_household_swap": GEOGRAPHY,
    "ons_communal_swap": [*GEOGRAPHY, "hid", "ce_type", "ce_role"],
}
METHODS = list(STEPS)
# NUTS 3 regions of the census as a small classification (the full LAU one is slow to load).
NUTS3 = {
    "column": "nuts3",
    "codes": [{"code": "T"}, *({"code": c, "parent": "T"} for c in layout("national").nuts3)],
    "breakdowns": {"NUTS3": {}},
}


@pytest.fixture(scope="module")
def census(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path: Path = generate(20_000, 5, tmp_path_factory.mktemp("census"), geography="national").path
    return path


def _release(folder: Path, census: Path, method: str, **changes: Any) -> Release:
    """A release of ``census`` with one ``method`` step (seed ``SEED``), step keys replaced."""
    step = {"method": method, **copy.deepcopy(STEPS[method]), "seed": SEED, "report_cubes": REPORT_CUBES}
    step.update(changes)
    config = {
        "schema_version": 1,
        "name": "variants",
        "input": {"microdata": str(census), "household_columns": ["lau", "hh_kind", "sph"]},
        "variables": {name: {"file": str(CLASSIFICATIONS / f"{name.lower()}.yaml")} for name in ("SEX", "AGE", "CAS")}
        | {"NUTS3": NUTS3},
        "hypercubes": [
            {"id": "geo", "breakdowns": ["NUTS3", "SEX", "AGE.L"]},
            {"id": "nogeo", "breakdowns": ["SEX", "AGE.M", "CAS.L"]},
        ],
        "pre_tabular": [step],
        "output": {"folder": str(folder / "out")},
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return load_release(folder / "c.yaml")


def _report(release: Release, method: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((release.config.output.internal / f"{method}_report.json").read_text())
    return data


Run = tuple[Release, dict[str, Any], dict[str, Any]]


@pytest.fixture(scope="module")
def runs(census: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Run]:
    """The run of each method with the values of STEPS (made once, on first use)."""

    @functools.cache
    def run(method: str) -> Run:
        release = _release(tmp_path_factory.mktemp(method), census, method)
        summary = apply_pre_tabular(release)
        return release, summary, _report(release, method)

    return run


@pytest.fixture(scope="module")
def env_runs(census: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Run]:
    """The run of each method again, every secret given as an ``{env: NAME}`` reference."""

    @functools.cache
    def run(method: str) -> Run:
        values: dict[str, Any] = {"seed": SEED}
        values |= {k: v for k, v in STEPS[method].items() if k in ("swap_rate", "k_anonymity", *COMMUNAL_RATES)}
        refs: dict[str, Any] = {k: {"env": f"CG_{k.upper()}"} for k in values}
        if "risk_thresholds" in STEPS[method]:
            values |= {f"t{i}": t for i, t in enumerate(THRESHOLDS)}
            refs["risk_thresholds"] = [{"env": f"CG_T{i}"} for i in range(len(THRESHOLDS))]
        with pytest.MonkeyPatch.context() as env:
            for key, value in values.items():
                env.setenv(f"CG_{key.upper()}", str(value))
            release = _release(tmp_path_factory.mktemp(f"{method}-env"), census, method, **refs)
            summary = apply_pre_tabular(release)
        return release, summary, _report(release, method)

    return run


@pytest.mark.parametrize("method", METHODS)
def test_report_counts_per_level_and_area_add_up_to_the_totals(method: str, runs: Callable[[str], Run]) -> None:
    _, summary, report = runs(method)
    households = method != "ons_communal_swap"
    assert summary["steps"] == [method]
    assert summary["persons_swapped"] == [report["persons_swapped"]] and report["persons_swapped"] > 20
    assert summary["households_swapped"] == [report["households_swapped"]]
    assert (report["households_swapped"] is not None) == households
    levels = report["per_level"]
    assert sum(v["persons"] for v in levels.values()) == report["persons_swapped"]
    for level in levels.values():
        assert level["areas"] and sum(a["persons"] for a in level["areas"].values()) == level["persons"]
        if households:
            assert sum(a["households"] for a in level["areas"].values()) == level["households"]
            assert level["households"] <= level["persons"]
    if households:
        assert sum(v["households"] for v in levels.values()) == report["households_swapped"]
    reasons = report["not_swapped_by_reason"]
    assert sum(reasons.values()) == len(report["not_swapped"])
    assert all(r["reason"] in reasons for r in report["not_swapped"])


@pytest.mark.parametrize("method", METHODS)
def test_area_codes_are_codes_of_the_swap_level(method: str, runs: Callable[[str], Run], census: Path) -> None:
    _, _, report = runs(method)
    data = pq.read_table(census).to_pandas()
    for level, counts in report["per_level"].items():
        codes = set(data[level].astype(str))
        assert set(counts["areas"]) <= codes, (method, level)


@pytest.mark.parametrize("method", METHODS)
def test_swapped_microdata_differ_only_in_the_swapped_columns(
    method: str, runs: Callable[[str], Run], census: Path
) -> None:
    release, _, _ = runs(method)
    before = pq.read_table(census)
    after = pq.read_table(release.config.output.swapped_microdata)
    assert after.schema.equals(before.schema) and after.num_rows == before.num_rows
    changed = {c for c in before.column_names if not before[c].equals(after[c])}
    assert changed and changed <= set(MOVED[method])
    kind = before["hh_kind"].to_numpy()
    if method != "ons_communal_swap":  # only private households take part (where: {hh_kind: [P]})
        assert before.filter(kind == "C").equals(after.filter(kind == "C"))
    else:  # only communal residents take part
        assert before.filter(kind == "P").equals(after.filter(kind == "P"))


@pytest.mark.parametrize("method", METHODS)
def test_cube_without_geography_is_unchanged_and_report_measures_the_effect(
    method: str, runs: Callable[[str], Run]
) -> None:
    release, _, report = runs(method)
    plain = Release(
        release.config.model_copy(update={"pre_tabular": []}), release.path, release.breakdowns, release.config_hash
    )
    swapped, original = tabulate_release(release), tabulate_release(plain)
    ids = [p.cube_id for p in swapped.plans]
    nogeo, geo = ids.index("nogeo"), ids.index("geo")
    np.testing.assert_array_equal(swapped.bottom(nogeo)[0], original.bottom(nogeo)[0])
    assert not np.array_equal(swapped.bottom(geo)[0], original.bottom(geo)[0])
    effects = report["cube_effects"]
    assert set(effects) == set(REPORT_CUBES)
    assert effects["nogeo"]["absolute_distance@cube"] == 0.0 and effects["nogeo"]["hellinger@cube"] == 0.0
    moved = np.abs(swapped.bottom(geo)[0] - original.bottom(geo)[0]).sum()
    assert effects["geo"]["absolute_distance@interior"] == moved > 0
    assert effects["geo"]["rad@interior"] > 0 and effects["geo"]["hellinger@interior"] > 0
    for key in ("small_cells_unchanged@interior", "swap_removed_share@cube", "swap_false_share@cube"):
        assert key in effects["geo"], key
    # persons moved between interior cells: r# from unit transitions (Handbook on SDC v2, 5.9)
    assert effects["geo"]["unit_transitions@interior"] == 1.0
    assert effects["geo"]["entropy_risk_protected@interior"] < effects["geo"]["entropy_risk_original@interior"]


@pytest.mark.parametrize("method", METHODS)
def test_rate_zero_gives_the_microdata_back_bit_for_bit(method: str, census: Path, tmp_path: Path) -> None:
    release = _release(tmp_path, census, method, **ZERO[method])
    summary = apply_pre_tabular(release)
    assert summary["persons_swapped"] == [0]
    assert pq.read_table(release.config.output.swapped_microdata).equals(pq.read_table(census))
    report = _report(release, method)
    assert report["per_level"] == {} and report["not_swapped"] == []
    for cube in REPORT_CUBES:
        effects = report["cube_effects"][cube]
        for key in ("absolute_distance", "rad", "hellinger", "max_abs_deviation"):
            assert effects[f"{key}@cube"] == 0.0 and effects[f"{key}@interior"] == 0.0, (cube, key)
        assert effects["small_cells_unchanged@interior"] in (1.0, None)
        assert effects["swap_removed_share@cube"] in (0.0, None)
        # the communal step names an imputed column: apparent cases made only of imputed records
        # are false without any swap (Frend et al. 2011, section 4)
        assert effects["swap_false_share@cube"] in (0.0, None) or method == "ons_communal_swap"
        assert effects["unit_transitions@interior"] == 1.0
        assert effects["entropy_risk_protected@interior"] == effects["entropy_risk_original@interior"]


@pytest.mark.parametrize("method", METHODS)
def test_same_seed_same_output_other_seed_other_output(
    method: str, runs: Callable[[str], Run], env_runs: Callable[[str], Run], census: Path, tmp_path: Path
) -> None:
    first, _, first_report = runs(method)
    again, _, again_report = env_runs(method)  # the same values, given by reference
    swapped = pq.read_table(first.config.output.swapped_microdata)
    assert pq.read_table(again.config.output.swapped_microdata).equals(swapped)
    assert again_report == first_report
    other = _release(tmp_path, census, method, seed=SEED + 1)
    apply_pre_tabular(other)
    assert not pq.read_table(other.config.output.swapped_microdata).equals(swapped)


@pytest.mark.parametrize("method", METHODS)
def test_secrets_given_by_env_reference_stay_out_of_the_summary(method: str, env_runs: Callable[[str], Run]) -> None:
    release, summary, _ = env_runs(method)
    step = release.config.pre_tabular[0]
    assert isinstance(step.seed, EnvSecret)
    assert set(summary) == {"steps", "households_swapped", "persons_swapped"}
    assert all(isinstance(n, int | None) for n in [*summary["households_swapped"], *summary["persons_swapped"]])
    text = json.dumps(summary)
    secrets = [SEED, *THRESHOLDS, *(v for k, v in STEPS[method].items() if k in ("swap_rate", *COMMUNAL_RATES))]
    for value in secrets:
        assert str(value) not in text and str(value).lstrip("0") not in text


def test_secret_out_of_range_names_the_key_not_the_value(
    census: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = _release(tmp_path, census, "random_swap", swap_rate={"env": "CG_RATE"})  # unset: checked at run
    monkeypatch.setenv("CG_RATE", "0.8765")
    with pytest.raises(
        CubeguardError, match=r"pre_tabular\[0\]\.swap_rate: input should be less than or equal to 0\.5"
    ) as info:
        apply_pre_tabular(release)
    assert "0.8765" not in str(info.value)
    with pytest.raises(  # set when the config loads: refused then, before any data is read
        ConfigError, match=r"pre_tabular\[0\]\.swap_rate \(\S+ line \d+\): input should be less than or equal to 0\.5"
    ) as loaded:
        _release(tmp_path, census, "random_swap", swap_rate={"env": "CG_RATE"})
    assert "0.8765" not in str(loaded.value)
    release = _release(tmp_path, census, "random_swap", seed={"env": "CG_ABSENT_SEED"})
    with pytest.raises(CubeguardError, match=r"pre_tabular\[0\]\.seed: environment variable CG_ABSENT_SEED is not set"):
        apply_pre_tabular(release)


def test_where_on_a_person_column_is_refused(census: Path, tmp_path: Path) -> None:
    release = _release(tmp_path, census, "random_swap", where={"sex": ["1"]})
    with pytest.raises(CubeguardError, match=r"pre_tabular\[0\]\.where: the selection splits \d+ households"):
        apply_pre_tabular(release)


def test_shipped_swap_demo_runs_on_a_small_census(tmp_path: Path) -> None:
    text = (ROOT / "configs" / "demo-swap.yaml").read_text()
    text = text.replace("persons: 200000", "persons: 20000").replace("../work/demo-swap", str(tmp_path / "out"))
    text = text.replace("file: classifications/", f"file: {CLASSIFICATIONS}/")
    (tmp_path / "demo-swap.yaml").write_text(text)
    release = load_release(tmp_path / "demo-swap.yaml")
    assert release.config.input.synthetic is not None and release.config.input.synthetic.persons == 20_000
    ensure_microdata(release)
    summary = apply_pre_tabular(release)
    assert summary["steps"] == [s.name for s in release.config.pre_tabular] and min(summary["persons_swapped"]) > 0
    for step in release.config.pre_tabular:
        report = _report(release, step.name)
        assert set(report["cube_effects"]) == set(step.report_cubes) != set()
    reports = step_reports(release, swap_section.section)  # what the release's report shows, one section per swap step
    assert [r["name"] for r in reports] == [s.name for s in release.config.pre_tabular]
    html = render(swap_section.section(reports))
    for r in reports:
        assert f"<h3>{r['name']} ({r['method']})</h3>" in html and f"{r['persons_swapped']:,} persons" in html
    assert html.count("per level of the swap hierarchy") == len(reports)


def test_random_swap_of_single_records_reports_persons_only(census: Path, tmp_path: Path) -> None:
    release = _release(
        tmp_path, census, "random_swap", unit="records", strata=["nuts3", "sex"], carry_along=[], report_cubes=[]
    )
    summary = apply_pre_tabular(release)
    report = _report(release, "random_swap")
    assert summary["households_swapped"] == [None] and report["households_swapped"] is None
    (level,) = report["per_level"].values()
    assert "households" not in level and level["persons"] == report["persons_swapped"] > 100
    assert sum(a["persons"] for a in level["areas"].values()) == level["persons"]
    before = pq.read_table(census).to_pandas()
    after = pq.read_table(release.config.output.swapped_microdata).to_pandas()
    moved = (before["lau"] != after["lau"]).to_numpy()
    assert moved.sum() == report["persons_swapped"]
    assert (before["nuts3"] == after["nuts3"]).all() and (before["sex"] == after["sex"]).all()
    assert report["cube_effects"] == {}
