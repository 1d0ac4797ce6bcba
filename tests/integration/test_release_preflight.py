"""One preflight for the command line and the flow: a run started from the Prefect UI is checked as ``release`` is."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubeguard.config import load_release
from cubeguard.errors import CubeguardError
from cubeguard.pipeline.preflight import preflight
from flows.release import release_flow

SECRET = 4.75


@pytest.fixture
def config(tiny_release: Path) -> Path:
    return tiny_release


def test_a_secret_inline_in_the_flows_overrides_is_refused_and_nothing_is_written(config: Path) -> None:
    """The Prefect UI's Custom run calls the flow directly: it must refuse what ``--set`` refuses."""
    with pytest.raises(CubeguardError) as refused:
        release_flow.fn(str(config), overrides={"steps[0].js": 1, "steps[0].V": SECRET}, release_id="r1")
    said = str(refused.value)
    assert said.startswith("overrides steps[0].V: a secret given inline is refused, and nothing was run or written;")
    assert "delete the run in the Prefect UI" in said
    assert 'e.g. overrides {"steps[0].V": {"env": "NAME"}}' in said
    assert str(SECRET) not in said and "4.7" not in said
    assert not (config.parent / "out").exists()  # nothing published, no audit record, no lock


def test_the_command_lines_wording_is_kept_for_set(config: Path) -> None:
    overrides = {"steps[0].D": 8}
    with pytest.raises(CubeguardError, match=r"^--set steps\[0\]\.D: secrets given inline would be stored") as refused:
        preflight(load_release(config, overrides), overrides, None)
    assert "8" not in str(refused.value).replace("[0]", "")
    assert not (config.parent / "out").exists()


def test_a_secret_by_reference_passes_the_same_preflight(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_PREFLIGHT_V", "4")
    overrides = {"steps[0].V": {"env": "TEST_PREFLIGHT_V"}}
    preflight(load_release(config, overrides), overrides, "r1", given_as="overrides")  # raises nothing
