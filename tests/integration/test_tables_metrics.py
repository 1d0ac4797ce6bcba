"""The table service's Prometheus metrics move under load and hold no query content (issue 38)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from service.app import create_app
from tests.tables_release import RELEASE_ID, publish


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    return TestClient(create_app(publish(tmp_path_factory.mktemp("metrics")), precompute=False))


def _samples(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    scraped = client.get("/metrics")
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    found = {}
    for family in text_string_to_metric_families(scraped.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_a_scrape_under_load_shows_the_counters_moving(client: TestClient) -> None:
    before = _samples(client)
    for breakdowns in ("GEO.2,SEX", "GEO.2,SEX", "AGE.L", "SEX,AGE.L,AGE.M"):  # a repeat; a refusal
        client.get("/api/table", params={"breakdowns": breakdowns})
    after = _samples(client)

    def moved(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert moved("cubeguard_table_queries_total", outcome="answered") == 3
    assert moved("cubeguard_table_queries_total", outcome="refused") == 1
    assert moved("cubeguard_table_refusals_total", rule="one_level_per_variable") == 1
    assert moved("cubeguard_table_cache_total", result="hit") == 1
    assert moved("cubeguard_table_cache_total", result="miss") == 2
    assert moved("cubeguard_table_seconds_count", outcome="answered") == 3
    assert after[("cubeguard_release_info", (("release_id", RELEASE_ID),))] == 1
    assert ("cubeguard_crossings_planned", ()) in after


def test_the_metrics_name_no_query_nor_value(client: TestClient) -> None:
    client.get("/api/table", params={"breakdowns": "GEO.2,SEX"})
    text = client.get("/metrics").text
    assert "GEO.2" not in text and "SEX" not in text


def test_the_metrics_route_is_not_part_of_the_api_description(client: TestClient) -> None:
    assert "/metrics" not in client.get("/openapi.json").json()["paths"]
