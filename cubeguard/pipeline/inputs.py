"""Make sure a release has its microdata: generate the synthetic census when asked and absent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cubeguard.config.load import Release
from cubeguard.errors import CubeguardError
from cubeguard.microdata.read import count_records


def ensure_microdata(release: Release, progress: Callable[[str, int], None] | None = None) -> dict[str, Any]:
    """Return a summary of the input, generating it first if ``input.synthetic`` says so."""
    spec = release.config.input
    if spec.microdata.exists():
        return {"path": str(spec.microdata), "generated": False, "records": count_records(spec)}
    if spec.synthetic is None:
        raise CubeguardError(
            f"microdata file {spec.microdata} does not exist; fix input.microdata or add input.synthetic to generate one"
        )
    from cubeguard.synth import generate

    syn = spec.synthetic
    summary = generate(
        syn.persons,
        syn.seed,
        spec.microdata.parent,
        geography=syn.geography,
        progress=(lambda n: progress("synth", n)) if progress else None,
    )
    produced = spec.microdata.parent / "persons.parquet"
    if produced != spec.microdata:
        produced.rename(spec.microdata)
    return {"path": str(spec.microdata), "generated": True, "records": count_records(spec), "synth": str(summary)}
