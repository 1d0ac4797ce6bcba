"""The step ledger: a finished step is reused only for the same run key and while its outputs exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubeguard.release.ledger import StepLedger, run_key

ORDER = ("validate", "pre_tabular", "tabulate", "protect", "measure", "gate")


def test_reused_only_for_the_same_key_and_existing_outputs(tmp_path: Path) -> None:
    ledger = StepLedger(tmp_path / "steps", ORDER)
    store = tmp_path / "original.zarr"
    store.mkdir()
    calls: list[str] = []
    result, resumed = ledger.run("tabulate", "k1", [store], lambda: calls.append("a") or {"cubes": 3})
    assert (result, resumed) == ({"cubes": 3}, False)
    assert ledger.run("tabulate", "k1", [store], lambda: calls.append("b")) == ({"cubes": 3}, True)
    assert ledger.lookup("tabulate", "k2") is None  # another config, secret or input
    store.rmdir()
    assert ledger.lookup("tabulate", "k1") is None  # its outputs are gone
    assert calls == ["a"]


def test_beginning_a_step_forgets_it_and_every_later_step(tmp_path: Path) -> None:
    ledger = StepLedger(tmp_path / "steps", ORDER)
    for step in ("validate", "tabulate", "protect", "measure"):
        ledger.record(step, "k", {"step": step}, [])
    ledger.begin("protect")
    assert ledger.lookup("tabulate", "k") == {"step": "tabulate"}
    assert ledger.lookup("protect", "k") is None and ledger.lookup("measure", "k") is None


def test_a_crash_inside_a_step_leaves_no_entry(tmp_path: Path) -> None:
    ledger = StepLedger(tmp_path / "steps", ORDER)
    ledger.record("protect", "k", ["old"], [])

    def crash() -> None:
        raise OSError("injected")

    with pytest.raises(OSError, match="injected"):
        ledger.run("protect", "other", [], crash)
    assert ledger.lookup("protect", "k") is None and ledger.lookup("protect", "other") is None


def test_a_fresh_run_never_reuses_a_record(tmp_path: Path) -> None:
    ledger = StepLedger(tmp_path / "steps", ORDER)
    ledger.record("tabulate", "k", {"cubes": 3}, [])
    ledger.record("gate", "k", {"passed": True}, [])
    assert ledger.resume("tabulate", "k") == {"cubes": 3}
    assert ledger.resume("tabulate", "k", fresh=True) is None
    assert ledger.lookup("tabulate", "k") is None and ledger.lookup("gate", "k") is None


def test_run_key_is_independent_of_key_order_and_changes_with_any_value() -> None:
    assert run_key({"a": 1, "b": [2]}) == run_key({"b": [2], "a": 1}) != run_key({"a": 1, "b": [3]})
