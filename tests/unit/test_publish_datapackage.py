"""CSV exports come with a Frictionless Data Package saying which columns are codes (strings) and counts."""

from __future__ import annotations

import json

import frictionless
import pandas as pd

from cubeguard.config.load import Release
from cubeguard.publish.datapackage import package_name
from tests.unit.test_publish_stage import _publish, built, release  # noqa: F401  (fixtures)


def test_the_data_package_types_every_csv_column_and_frictionless_validates_the_files(release: Release) -> None:  # noqa: F811
    exports = _publish(release, "Tiny.1", exports=("csv",)).path / "exports"
    package = frictionless.Package(str(exports / "datapackage.json"))
    report = package.validate()  # every CSV read against its resource's schema
    assert report.valid, report.flatten(["type", "note"])
    described = json.loads((exports / "datapackage.json").read_text())
    assert described["name"] == "tiny" and described["profile"] == "tabular-data-package"
    resources = {r["path"]: r for r in described["resources"]}
    assert sorted(resources) == ["c1.csv", "c2.csv", "hh.csv"]
    fields = resources["c1.csv"]["schema"]["fields"]
    assert [(f["name"], f["type"]) for f in fields] == [
        ("GEO.2", "string"),
        ("SEX", "string"),
        ("AGE.M", "string"),
        ("count", "integer"),
    ]
    assert resources["c1.csv"]["schema"]["primaryKey"] == ["GEO.2", "SEX", "AGE.M"]
    rows = package.get_resource("cube-c1").read_rows()
    assert {type(r["SEX"]) for r in rows} == {str} and {r["SEX"] for r in rows} == {"0", "1", "2"}


def test_pandas_reads_codes_as_strings_with_the_packages_types(release: Release) -> None:  # noqa: F811
    exports = _publish(release, exports=("csv",)).path / "exports"
    fields = json.loads((exports / "datapackage.json").read_text())["resources"][0]["schema"]["fields"]
    guessed = pd.read_csv(exports / "c1.csv")
    assert guessed["SEX"].dtype.kind == "i"  # what a reader gets without the package: numbers
    typed = pd.read_csv(exports / "c1.csv", dtype={f["name"]: str for f in fields if f["type"] == "string"})
    assert typed["SEX"].map(type).eq(str).all() and typed["count"].dtype.kind == "i"


def test_package_names_are_lower_case_ids() -> None:
    assert package_name("EU2021 Release/1") == "eu2021-release-1"
    assert package_name("") == "release"


def test_no_csv_no_data_package(release: Release) -> None:  # noqa: F811
    exports = _publish(release, exports=("parquet",)).path / "exports"
    assert not (exports / "datapackage.json").exists()
