"""Every command's help says what the command does: flags without a value, one default per option."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from cli.main import app

COMMANDS = ["", "release", "tables", "ptable", "tau", "export", "sweep", "deploy", "prefect-server", "synth", "validate", "inspect",
            "schema", "audit", "audit list", "audit show", "audit verify", "audit reproduce"]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_flags_as_flags_and_each_default_once(command: str) -> None:
    result = CliRunner().invoke(app, [*command.split(), "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output  # a flag takes no value
    for line in result.output.splitlines():  # an option whose text gives its default shows no other
        assert not ("(default" in line and "[default:" in line), line
    options = re.findall(r"^\s+(--[a-z-]+)", result.output, flags=re.M)
    assert "--help" in options


@pytest.mark.parametrize(("old", "new"), [("serve", "deploy"), ("server", "prefect-server")])
def test_a_command_called_by_its_old_name_still_runs_and_says_its_new_one(
    old: str, new: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    calls: list[list[str]] = []
    monkeypatch.setattr("subprocess.call", lambda cmd, env: calls.append(cmd) or 0)  # no Prefect server started
    result = CliRunner().invoke(app, [old, "configs/demo.yaml"] if old == "serve" else [old])
    assert f"'cubeguard {old}' is now 'cubeguard {new}'" in result.stderr
    if old == "serve":  # the same command: its one-sentence refusal without a Prefect server
        assert result.exit_code == 2 and "prefect-server" in result.output
    else:
        assert result.exit_code == 0 and calls and calls[0][-5:-4] == ["start"]
    listed = CliRunner().invoke(app, ["--help"], terminal_width=200).output
    assert not re.search(rf"^\s+{old}\s", listed, flags=re.M) and re.search(rf"^\s+{new}\s", listed, flags=re.M)
