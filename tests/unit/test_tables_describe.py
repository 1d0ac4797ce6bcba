"""What /api/release says of a served release's protection names the release's own method."""

from __future__ import annotations

from cubeguard.methods.cell_key.model import CellKeyStep
from cubeguard.methods.random_rounding.model import RandomRoundingStep
from cubeguard.tables.describe import protection_text


def test_a_random_rounding_release_is_not_described_as_the_cell_key_method() -> None:
    step = RandomRoundingStep.model_validate({"method": "random_rounding", "base": 5, "margins": "independent"})
    text = protection_text(step, means=False)
    assert text.startswith("random rounding to base 5") and "cell key method" not in text and "means" not in text


def test_a_cell_key_release_says_how_its_means_are_made() -> None:
    step = CellKeyStep.model_validate({"method": "cell_key", "D": 4, "V": 2, "js": 2})
    assert protection_text(step, means=True) == (
        "cell key method (the release's p-table and record keys); means as perturbed sum / perturbed count"
    )
