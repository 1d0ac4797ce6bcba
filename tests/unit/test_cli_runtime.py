"""The local Prefect server: found where the user configured one, started otherwise, and its failures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cli.runtime import LocalServer, configured_api_url, launch_ephemeral_server
from cubeguard.errors import InternalError

PROFILES = """active = "office"

[profiles.office]
PREFECT_API_URL = "http://prefect.office:4200/api"

[profiles.laptop]
PREFECT_LOGGING_LEVEL = "INFO"
"""


@pytest.fixture
def prefect_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("PREFECT_API_URL", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    return tmp_path


def test_the_environment_names_the_server_first(prefect_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (prefect_home / "profiles.toml").write_text(PROFILES)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    assert configured_api_url() == "http://127.0.0.1:4200/api"


def test_the_active_profile_names_the_server(prefect_home: Path) -> None:
    (prefect_home / "profiles.toml").write_text(PROFILES)
    assert configured_api_url() == "http://prefect.office:4200/api"


def test_a_profile_chosen_by_prefect_profile_without_a_url_means_none(
    prefect_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (prefect_home / "profiles.toml").write_text(PROFILES)
    monkeypatch.setenv("PREFECT_PROFILE", "laptop")
    assert configured_api_url() is None


def test_no_profiles_file_or_a_broken_one_means_none(prefect_home: Path) -> None:
    assert configured_api_url() is None
    (prefect_home / "profiles.toml").write_text("active = [")
    assert configured_api_url() is None


def test_no_server_is_started_when_one_is_configured(prefect_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    assert launch_ephemeral_server() is None


def test_a_server_that_ends_before_answering_is_reported_with_its_exit_code() -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(4)"])
    process.wait()
    with pytest.raises(InternalError, match="ended with exit code 4 before it answered"):
        LocalServer(process, "http://127.0.0.1:9/api").wait_ready(timeout=5)


def test_a_server_that_never_answers_times_out() -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(InternalError, match="did not answer within 1 s"):
            LocalServer(process, "http://127.0.0.1:9/api").wait_ready(timeout=1)
    finally:
        LocalServer(process, "").stop()
    assert process.returncode is not None
