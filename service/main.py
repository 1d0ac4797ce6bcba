"""The app ``cubeguard tables`` runs under uvicorn, configured through the environment it sets."""

from __future__ import annotations

import json
import os
from pathlib import Path

from service.app import create_app

app = create_app(
    Path(os.environ["CUBEGUARD_TABLES_CONFIG"]),
    os.environ.get("CUBEGUARD_TABLES_RELEASE") or None,
    json.loads(os.environ.get("CUBEGUARD_TABLES_OVERRIDES") or "{}"),
)
