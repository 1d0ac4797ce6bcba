"""The run spec reaches each release task without Prefect walking into it (``tasks.release.Sealed``)."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

from prefect.utilities.collections import visit_collection

from tasks.release import Sealed


@dataclass(frozen=True)
class _Plan:
    cubes: tuple[dict[str, Any], ...]


def _visited(expr: Any) -> int:
    seen = 0

    def count(x: Any) -> Any:
        nonlocal seen
        seen += 1
        return x

    visit_collection(expr, visit_fn=count, return_data=False, max_depth=-1)
    return seen


def test_prefect_walks_a_plan_object_by_object_but_a_sealed_one_not_at_all() -> None:
    plan = _Plan(tuple({"name": f"cube{i}", "codes": list(range(50))} for i in range(119)))
    assert _visited(plan) > 119 * 50  # what every task run paid before, twice
    assert _visited(Sealed(plan)) == 1


def test_a_sealed_value_survives_pickling_as_a_dask_worker_receives_it() -> None:
    plan = _Plan(({"name": "cube0", "codes": [1, 2]},))
    back = pickle.loads(pickle.dumps(Sealed(plan)))
    assert isinstance(back, Sealed) and back.value == plan
