"""The app each worker of ``cubeguard tables --workers N`` runs, configured through the environment it sets."""

from __future__ import annotations

import json
import os
from pathlib import Path

from service.app import create_app
from service.memory import reuse_freed_memory

reuse_freed_memory()  # each worker process, before its threads start
app = create_app(
    Path(os.environ["CUBEGUARD_TABLES_CONFIG"]),
    os.environ.get("CUBEGUARD_TABLES_RELEASE") or None,
    json.loads(os.environ.get("CUBEGUARD_TABLES_OVERRIDES") or "{}"),
    limits=Path(os.environ["CUBEGUARD_TABLES_LIMITS"]),  # the rate limit every worker shares
    freeze=True,
)
