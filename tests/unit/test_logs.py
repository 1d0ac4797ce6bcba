"""JSON logs on request: one object per line, the named fields only, the kind of an error but never its text."""

from __future__ import annotations

import io
import json
import logging

import pytest

from cubeguard.logs import ENV, json_requested, log_json


def test_a_record_is_one_json_line_with_its_named_fields_only(monkeypatch: pytest.MonkeyPatch) -> None:
    logger, stream = logging.getLogger("cubeguard.test.logs"), io.StringIO()
    log_json(logger, stream)
    log_json(logger, stream)  # once per logger: no line twice
    logger.info("gate: done in %s s", 1.5, extra={"step": "gate", "event": "done", "seconds": 1.5, "verdict": "passed",
                                                  "secret_d": 5})  # fmt: skip
    try:
        raise ValueError("D = 5 is wrong")
    except ValueError:
        logger.exception("the release stopped")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first.pop("time").endswith("+00:00")
    assert first == {"level": "info", "logger": "cubeguard.test.logs", "message": "gate: done in 1.5 s",
                     "step": "gate", "event": "done", "seconds": 1.5, "verdict": "passed"}  # fmt: skip
    assert second["error"] == "ValueError" and "D = 5" not in json.dumps(second)
    monkeypatch.setenv(ENV, " JSON ")
    assert json_requested()
    monkeypatch.setenv(ENV, "text")
    assert not json_requested()
