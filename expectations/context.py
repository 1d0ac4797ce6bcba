"""An ephemeral Great Expectations context for one gate run: nothing written but the Data Docs.

Stores are in memory (no ``gx/`` project folder), analytics and progress bars are off (STACK.md),
and when a docs folder is given one local Data Docs site is configured there, without GX's
"how to" buttons and call-to-action footer.
"""

from __future__ import annotations

from pathlib import Path

import great_expectations as gx
from great_expectations.data_context import EphemeralDataContext
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)

DOCS_SITE = "release_gates"


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
