"""Forbidden-values gate: no published count takes a value the release promises never to publish.

A p-table with ``js > 0`` (cell key method, Handbook on SDC v2, 5.4) never publishes the counts
``1..js``; a release that promises "no published 1s and 2s" lists them in
``GateSpec.forbidden_values``. The expectation is GX's ``ExpectColumnValuesToNotBeInSet`` with a
business name, the ``published`` column as default and a Data Docs description saying what is
promised (the GX docs' "Customize an Expectation Class").
"""

from __future__ import annotations

from typing import Any

from great_expectations.compatibility import pydantic
from great_expectations.expectations import ExpectColumnValuesToNotBeInSet

from expectations.flatten import PUBLISHED


class ExpectPublishedCountsOutsideForbiddenSet(ExpectColumnValuesToNotBeInSet):
    """Expect no published count to lie in the forbidden set (e.g. no published 1s and 2s).

    The result's ``unexpected_count`` is the number of offending cells.
    """

    column: str = PUBLISHED
    description: str | None = None

    @pydantic.root_validator(skip_on_failure=True)
    def _describe(cls, values: dict[str, Any]) -> dict[str, Any]:
        if not values.get("description"):
            shown = ", ".join(str(v) for v in values["value_set"])
            values["description"] = (
                f"Forbidden values: no {values['column']} count is in {{{shown}}}, as the release promises."
            )
        return values
