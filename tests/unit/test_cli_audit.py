"""``cubeguard audit show`` prints a record without any of its secrets or seeds."""

from __future__ import annotations

import json
import random
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from cubeguard.audit import AuditStore
from tests.unit.test_audit_store import make_record


def test_audit_show_withholds_every_secret_and_seed(tmp_path: Path) -> None:
    draw = random.SystemRandom()
    secret = {name: draw.randrange(10**8, 10**9) for name in ("D", "record_key", "swap", "synth", "hidden")}
    record = make_record(
        config_text=f"input: {{record_key: {{generate_seed: {secret['record_key']}}}}}\n",
        secrets={"steps[0].D": secret["D"], "pre_tabular[0].seed": secret["swap"]},
        seeds={
            "input.record_key.generate_seed": secret["record_key"],
            "pre_tabular[0].seed": secret["swap"],
            "pre_tabular[1].seed": secret["hidden"],
            "input.synthetic.seed": secret["synth"],
        },
    )
    url = f"sqlite:///{tmp_path / 'audit.sqlite'}"
    with AuditStore(url) as store:
        store.append(record)
    shown = CliRunner().invoke(app, ["audit", "show", "1", "--url", url])
    assert shown.exit_code == 0, shown.output
    for value in secret.values():
        assert str(value) not in shown.output
    data = json.loads(shown.output)
    assert data["seeds"] == dict.fromkeys(record.seeds, "<withheld>")
    assert data["secrets"] == dict.fromkeys(record.secrets, "<withheld>")
    assert data["run_id"] == record.run_id  # the rest of the record is shown


def test_audit_commands_take_the_config_first_as_every_command_does(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'audit.sqlite'}"
    with AuditStore(url) as store:
        store.append(make_record())
    config = tmp_path / "c.yaml"
    config.write_text("not: a release\n")
    shown = CliRunner().invoke(app, ["audit", "show", str(config), "1", "--url", url])
    assert shown.exit_code == 0, shown.output  # --url names the store; the config is then not read
    assert json.loads(shown.output)["seq"] == 1


def test_a_record_id_without_its_config_says_to_give_the_config_first() -> None:
    shown = CliRunner().invoke(app, ["audit", "show", "3"])
    assert shown.exit_code == 2
    assert "give the release config before the record id: CONFIG 3 (or --url URL)" in " ".join(shown.output.split())


def test_more_than_a_config_and_an_id_is_refused() -> None:
    shown = CliRunner().invoke(app, ["audit", "show", "a.yaml", "3", "4"])
    assert shown.exit_code == 2
    assert "give the release config and one record id, not 3 values: CONFIG ID" in " ".join(shown.output.split())
