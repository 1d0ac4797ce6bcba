"""The report names each gate check in words and shows its observed value at four digits."""

from __future__ import annotations

from cubeguard.report.gate_names import NOTHING, plain_check, plain_rows, readable


def test_every_check_the_gates_run_has_words_naming_its_config_key() -> None:
    assert plain_check("ExpectSmallCellsUnchangedShareToBeAtMost") == (
        "share of original 1s and 2s published unchanged (gates.max_small_cells_unchanged)"
    )
    assert "gates.forbidden_values" in plain_check("ExpectPublishedCountsOutsideForbiddenSet")
    assert "additivity" in plain_check("ExpectTotalsEqualSumOfChildren")
    assert plain_check("ExpectDistanceWithinBound[hellinger@interior]") == (
        "Hellinger distance (gates.max_hellinger), interior cells"
    )
    assert plain_check("ExpectDistanceWithinBound[average_absolute_distance@cube]") == (
        "mean absolute deviation (gates.max_mean_absolute_deviation), scope cube"
    )
    assert plain_check("SomethingNew") == "SomethingNew"


def test_observed_values_are_shown_at_four_significant_digits() -> None:
    assert readable("0.45234523452345234") == "0.4523"
    assert readable("802") == "802" and readable(3.0) == "3"
    assert readable("n/a") == "n/a" and readable(None) is None


def test_rows_keep_cube_status_and_required() -> None:
    rows = [{"cube": "c1", "expectation": "ExpectSmallCellsUnchangedShareToBeAtMost", "status": "pass",
             "observed": "0.5500000000000001", "required": "<= 0.6"}]  # fmt: skip
    assert plain_rows(rows) == [
        {"cube": "c1", "check": plain_check("ExpectSmallCellsUnchangedShareToBeAtMost"), "status": "pass", "observed": "0.55",
         "required": "<= 0.6"}
    ]  # fmt: skip


def test_a_check_with_nothing_to_measure_says_so_not_none() -> None:
    rows = [
        {"cube": "hh.1", "expectation": "ExpectSmallCellsUnchangedShareToBeAtMost", "status": "pass", "observed": None}
    ]
    assert plain_rows(rows)[0]["observed"] == NOTHING == "nothing to measure"


def test_the_run_summary_says_nothing_to_measure_not_none() -> None:
    from cubeguard.report.summary_md import release_markdown

    row = {
        "status": "pass",
        "cube": "hh.1",
        "expectation": "ExpectSmallCellsUnchangedShareToBeAtMost",
        "observed": None,
    }
    markdown = release_markdown({"gate_rows": [row]})
    assert "| pass | hh.1 | ExpectSmallCellsUnchangedShareToBeAtMost | nothing to measure |" in markdown
    assert "None" not in markdown


def test_the_run_artifact_lists_each_step_with_its_seconds() -> None:
    from cubeguard.report.summary_md import release_markdown

    steps = [
        {"step": "tabulate", "seconds": 1.25, "cpu_seconds": 1.1},
        {"step": "publish", "seconds": 0.4, "cpu_seconds": 0.3},
    ]
    markdown = release_markdown({"gate_rows": [], "steps": steps})
    assert "## Steps" in markdown and "| tabulate | 1.25 | 1.1 |" in markdown and "| publish | 0.4 | 0.3 |" in markdown
    assert "## Steps" not in release_markdown({"gate_rows": []})
