"""Every command's help says what the command does: flags without a value, one default per option."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from cli.main import app

COMMANDS = ["", "release", "tables", "ptable", "tau", "export", "sweep", "serve", "server", "synth", "validate", "inspect",
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
