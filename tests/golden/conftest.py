"""The golden tests compare with R's outputs in ``../shared/golden`` beside the project root.

Each golden module names its folder in a module-level ``GOLDEN``. When that folder is missing the
module's tests skip on a developer's machine, but fail in CI (``CI`` set in the environment, as
``.ci/run`` does), naming the missing path: a CI run must not pass without the comparisons.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared_data import in_ci


@pytest.fixture(autouse=True, scope="module")
def _golden_data_present(request: pytest.FixtureRequest) -> None:
    # Module scope, so that it runs before the modules' own module-scoped fixtures read the files.
    path = getattr(request.module, "GOLDEN", None)
    if path is None or Path(path).is_dir():
        return
    message = f"golden data not found: {path} is missing (the shared golden folder beside the project root)"
    if in_ci():
        pytest.fail(f"{message}; CI must run the golden comparisons", pytrace=False)
    pytest.skip(message)
