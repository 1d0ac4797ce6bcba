"""Bad input found once the release runs (validation, an empty population, a full disk): exit 2, one
sentence, no traceback, and never a protected store beyond what the case allows or a published release.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cubeguard.testing.bad_inputs import CASES, NOTHING, Case
from tests.integration.test_bad_input_cli import check_case

pytestmark = pytest.mark.prefect


@pytest.mark.parametrize("case", [c for c in CASES if c.written != NOTHING], ids=lambda c: c.name)
def test_bad_input_found_in_the_run_exits_2_and_publishes_nothing(
    case: Case, tiny_release: Path, tmp_path: Path
) -> None:
    check_case(case, tiny_release, tmp_path)


def test_the_catalogue_holds_at_least_forty_kinds_with_distinct_names() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)) >= 40
