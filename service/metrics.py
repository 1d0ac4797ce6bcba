"""What an operator watches on the table service: Prometheus metrics at ``GET /metrics``.

Counters of table queries by outcome (answered, refused, limited, failed, unavailable) and of refusals by rule,
a histogram of the seconds a table query takes (by outcome), hits and misses of the encoded-answer
cache, and, read when scraped, the served release and how many of its planned crossings are ready.
No query's content and no cell value: a metric says how much and how fast, never what.

Each app has its own registry, so each worker process of ``cubeguard tables --workers N`` counts its
own requests; a scrape shows the worker that answered it (scrape each, or sum behind the proxy).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from cubeguard.tables.engine import TableEngine

CONTENT_TYPE = CONTENT_TYPE_LATEST
#: Upper bounds of the latency buckets, in seconds (new 4-way tables take tens to hundreds of ms).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The service's metrics, in a registry of its own; ``engine`` gives the release being served."""

    def __init__(self, engine: Callable[[], TableEngine]) -> None:
        self.registry = CollectorRegistry()
        self.queries = Counter(
            "cubeguard_table_queries", "Table queries by outcome.", ["outcome"], registry=self.registry
        )
        self.refusals = Counter(
            "cubeguard_table_refusals", "Table queries refused, by the rule that refused them.", ["rule"],
            registry=self.registry,
        )  # fmt: skip
        self.seconds = Histogram(
            "cubeguard_table_seconds", "Seconds to answer or refuse a table query.", ["outcome"],
            buckets=BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.cache = Counter(
            "cubeguard_table_cache", "Encoded answers found in the cache (hit) or computed (miss).", ["result"],
            registry=self.registry,
        )  # fmt: skip
        ready = Gauge("cubeguard_crossings_ready", "Finest crossings tabulated and ready.", registry=self.registry)
        planned = Gauge("cubeguard_crossings_planned", "Finest crossings planned.", registry=self.registry)
        ready.set_function(lambda: engine().crossings.ready)
        planned.set_function(lambda: len(engine().crossings.planned))
        self._release = Gauge(
            "cubeguard_release_info", "The release being served (value 1).", ["release_id"], registry=self.registry
        )
        self._served: str | None = None
        self._engine = engine

    def query(self, outcome: str, rule: str | None, seconds: float) -> None:
        """Count one table query and its time."""
        self.queries.labels(outcome).inc()
        if rule is not None:
            self.refusals.labels(rule).inc()
        self.seconds.labels(outcome).observe(seconds)

    def scrape(self) -> bytes:
        """The metrics in Prometheus's text format."""
        served = self._engine().release_id
        if served != self._served:  # after a reload, only the release now served is 1
            if self._served is not None:
                self._release.remove(self._served)
            self._release.labels(served).set(1)
            self._served = served
        return generate_latest(self.registry)
