"""Structured logs on request: one JSON object per line on stderr, for a log shipper.

``CUBEGUARD_LOG_FORMAT=json`` in the environment (``--log-json`` on ``cubeguard release``,
``serve`` and ``tables`` sets it) adds a handler to the loggers a run or service writes to: the
release run's log (the lines its Prefect Logs tab shows) and the table service's. Each line holds
the time (UTC, ISO 8601), level, logger and message, and the fields the line carries (a release
step's name, event, seconds and the gates' verdict; the flow run's id and name). Only those named
fields are written, never a record's other attributes, so nothing reaches the JSON that the
plain message does not say: the messages name steps, seconds and verdicts, never a secret.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import IO

ENV = "CUBEGUARD_LOG_FORMAT"
#: Fields of a log record written beside its message when present.
FIELDS = ("step", "event", "seconds", "verdict", "release_id", "flow_run_id", "flow_run_name")


class JsonLines(logging.Formatter):
    """A record as one line of JSON: time, level, logger, message and the :data:`FIELDS` it has."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON object on one line."""
        out: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                out[name] = value if isinstance(value, int | float | bool) else str(value)
        if record.exc_info and record.exc_info[0] is not None:
            out["error"] = record.exc_info[0].__name__  # the kind only: a traceback may quote values
        return json.dumps(out, ensure_ascii=False)


def json_requested() -> bool:
    """Whether the environment asks for JSON logs (``CUBEGUARD_LOG_FORMAT=json``)."""
    return os.environ.get(ENV, "").strip().lower() == "json"


def log_json(logger: logging.Logger, stream: IO[str] | None = None) -> None:
    """Write ``logger``'s records (INFO and up) as JSON lines to ``stream`` (default stderr), once per logger."""
    if any(isinstance(h.formatter, JsonLines) for h in logger.handlers):
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLines())
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
