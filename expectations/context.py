"""An ephemeral Great Expectations context for one gate run: nothing written but the Data Docs.

Stores are in memory (no ``gx/`` project folder), analytics and progress bars are off (STACK.md),
and when a docs folder is given one local Data Docs site is configured there, without GX's
"how to" buttons and call-to-action footer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import great_expectations as gx
from great_expectations.data_context import EphemeralDataContext
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)

from cubeguard.errors import CubeguardError

DOCS_SITE = "release_gates"
_SITE_LOGGER = "great_expectations.render.renderer.site_builder"


def ephemeral_context(docs_dir: Path | None) -> EphemeralDataContext:
    """A fresh in-memory context; with ``docs_dir``, a Data Docs site writing there."""
    sites = {}
    if docs_dir is not None:
        sites[DOCS_SITE] = {
            "class_name": "SiteBuilder",
            "show_how_to_buttons": False,
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder", "show_cta_footer": False},
        }
    config = DataContextConfig(
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        data_docs_sites=sites,
    )
    context = gx.get_context(mode="ephemeral", project_config=config)
    assert isinstance(context, EphemeralDataContext)
    return context


def build_docs(context: EphemeralDataContext, docs_dir: Path) -> None:
    """Render the Data Docs site; a page GX could not write fails the gate step (GX only logs it).

    Raises:
        CubeguardError: a page could not be written (a full disk, a read-only folder), naming the folder.
    """
    with _captured(_SITE_LOGGER) as errors:
        context.build_data_docs(site_names=[DOCS_SITE])
    if errors:
        detail = errors[0].getMessage().split("Detailed information follows:")[-1].split("Traceback")[0]
        detail = detail.strip(' .:"\n')
        raise CubeguardError(
            f"the gates' Data Docs could not be written to {docs_dir} ({detail}); "
            "free space there or set output.folder to a writable disk"
        )


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _captured(name: str) -> Iterator[list[logging.LogRecord]]:
    """Collect ``name``'s error records instead of printing them (GX prints whole tracebacks)."""
    logger = logging.getLogger(name)
    handler, propagate = _Collect(), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
