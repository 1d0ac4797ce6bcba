"""Release gates as Great Expectations 1.x suites defined in code (see :mod:`expectations.gates`).

This package may import the core (``cubeguard``), never ``tasks`` or ``flows``; the core never
imports Great Expectations.
"""

import warnings

with warnings.catch_warnings():
    # GX 1.24 imports the stdlib's deprecated ``sre_constants`` and ``sre_parse`` modules
    # (file_path_data_connector.py); not ours to fix, and pytest turns warnings into errors.
    # Only those two import-time warnings are silenced.
    warnings.filterwarnings(
        "ignore", message="module 'sre_(constants|parse)' is deprecated", category=DeprecationWarning
    )
    import great_expectations  # noqa: F401
