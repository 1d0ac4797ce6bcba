"""Rich progress bars fed by ``(stage, amount)`` updates from the pipeline."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

_LABELS = {
    "synth": "Generating synthetic census",
    "validate": "Validating microdata",
    "tabulate": "Tabulating hypercubes",
    "keystore": "Writing the table key store",
    "write": "Writing cubes to Zarr",
    "protect": "Protecting cubes",
    "swap": "Writing swapped microdata",
    "publish": "Publishing",
    "attack": "Attacking published cubes",
    "attack (unprotected)": "Self-test on unprotected",
    "build": "Building parameter sets",
    "sweep": "Protecting and measuring",
}


class StageBars:
    """One bar per stage, created on its first update; totals given up front where known."""

    def __init__(self, totals: dict[str, int | None]) -> None:
        self.totals = totals
        self.progress = Progress(
            TextColumn("{task.description:<30}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> StageBars:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)  # type: ignore[arg-type]

    def update(self, stage: str, amount: int) -> None:
        """Advance the bar of ``stage`` by ``amount`` (creating it on first use)."""
        if stage not in self.tasks:
            self.tasks[stage] = self.progress.add_task(_LABELS.get(stage, stage), total=self.totals.get(stage))
        self.progress.advance(self.tasks[stage], amount)
