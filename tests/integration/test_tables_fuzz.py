"""Fuzzing the table API: whatever a client sends, an answer or a JSON refusal naming a parameter, never a 500.

Hypothesis sends raw query strings (known and unknown keys, repeated keys, random unicode and
control characters, percent-encoded bytes that are no UTF-8, values far over the caps), query
models built from the offered breakdowns with junk mixed in (GET and POST) and JSON bodies of
any shape, as well as bytes that are no JSON. The real server's part (a ``--workers 2`` server
that keeps serving after malformed raw requests) is in ``test_tables_workers.py``.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.app import create_app
from tests.tables_release import TABLES, publish

OFFERED = ["GEO.1", "GEO.2", "SEX", "AGE.L", "AGE.M"]
CODES = ["0", "A", "A1", "B", "1", "2", "Y15-29"]
KEYS = ["breakdowns", "population", "filter", "filters", "mean", "format"]
EXAMPLES = {"raw": 150, "model": 100, "json": 100}


def fuzz(examples: int) -> settings:
    """Settings for ``examples`` examples, no deadline (a new table takes a few ms), no example database."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


junk = st.text(min_size=0, max_size=40) | st.text(alphabet=st.characters(codec="utf-8"), min_size=60, max_size=5000)
known = st.sampled_from(OFFERED + CODES + ["total", "households", "age", "json", "csv", "sdmx-csv", ""])
word = st.one_of(known, known, known, junk)  # mostly names the service knows, so some queries are answered


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    rules = TABLES + "  rate_limit_per_minute: 1000000\n"  # the fuzzing client asks far more than 120 a minute
    app = create_app(publish(tmp_path_factory.mktemp("fuzz"), tables=rules), precompute=False)
    return TestClient(app, raise_server_exceptions=False)


def answered_or_refused(answer: Any) -> str:
    """``answered`` or ``refused``; fails on a 500, a body that is not JSON, or a refusal naming no parameter."""
    assert answer.status_code != 500, answer.text[:300]
    if answer.status_code == 200:
        if answer.headers["content-type"].startswith("application/json"):
            assert answer.json()["class"] == "dataset"
        else:
            assert answer.text.count("\n") >= 2  # CSV or SDMX-CSV: a header and rows
        return "answered"
    body = answer.json()
    assert 400 <= answer.status_code < 500 and body["refused"] is True, body
    assert body["rule"] and body["parameter"] and body["message"], body
    assert len(answer.content) < 1000  # a refusal never carries the input whole
    return "refused"


def raw_pair(key: str, value: str, garbage: bytes) -> str:
    return f"{quote(key)}={quote(value)}{''.join(f'%{b:02X}' for b in garbage)}"


@st.composite
def raw_queries(draw: st.DrawFn) -> str:
    """A query string of 0 to 12 pairs: known or random keys (repeated at will), random values and bytes."""
    pairs = draw(
        st.lists(
            st.tuples(st.sampled_from(KEYS) | junk, word | st.builds(",".join, st.lists(word, max_size=20)), st.binary(max_size=4)),
            max_size=12,
        )
    )  # fmt: skip
    text = "&".join(raw_pair(*p) for p in pairs)
    return text + draw(st.sampled_from(["", "&", "&&=", "=", "&breakdowns", "%", "%zz", "&filter=:"]))


@st.composite
def query_models(draw: st.DrawFn) -> dict[str, Any]:
    """A query of mostly offered names, with some junk, repeats and oversized parts."""
    offered = st.lists(st.sampled_from(OFFERED), min_size=1, max_size=3, unique=True)
    query: dict[str, Any] = {"breakdowns": draw(offered | st.lists(word, max_size=3) | st.lists(word, max_size=20))}
    if draw(st.booleans()):
        query["population"] = draw(word)
    if draw(st.booleans()):
        query["filters"] = draw(st.dictionaries(word, word, max_size=2) | st.dictionaries(word, word, max_size=18))
    if draw(st.booleans()):
        query["mean"] = draw(st.none() | word)
    return query


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=100),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=10), inner, max_size=5),
    max_leaves=30,
)  # fmt: skip


def test_raw_query_strings_are_answered_or_refused(client: TestClient) -> None:
    seen: dict[str, int] = {"answered": 0, "refused": 0}
    t0 = time.perf_counter()

    @fuzz(EXAMPLES["raw"])
    @given(raw_queries())
    def check(query: str) -> None:
        seen[answered_or_refused(client.get(f"/api/table?{query}"))] += 1

    check()
    print(f"raw query strings: {seen} in {time.perf_counter() - t0:.1f} s")
    assert sum(seen.values()) >= EXAMPLES["raw"]


def test_query_models_by_get_and_post_are_answered_or_refused(client: TestClient) -> None:
    seen: dict[str, int] = {"answered": 0, "refused": 0}
    t0 = time.perf_counter()

    @fuzz(EXAMPLES["model"])
    @given(query_models(), st.sampled_from(["json", "csv", "sdmx-csv", "xml"]))
    def check(query: dict[str, Any], fmt: str) -> None:
        params: list[tuple[str, str]] = [("breakdowns", b) for b in query["breakdowns"]]
        params += [("filter", f"{b}:{c}") for b, c in query.get("filters", {}).items()]
        params += [(k, query[k]) for k in ("population", "mean") if query.get(k) is not None]
        pairs = "&".join(raw_pair(k, v, b"") for k, v in [*params, ("format", fmt)])
        seen[answered_or_refused(client.get(f"/api/table?{pairs}"))] += 1
        seen[answered_or_refused(client.post("/api/table", params={"format": fmt}, json=query))] += 1

    check()
    print(f"query models, GET and POST: {seen} in {time.perf_counter() - t0:.1f} s")
    assert sum(seen.values()) >= 2 * EXAMPLES["model"] and seen["answered"] > 0  # some are well formed


def test_any_json_body_or_bytes_are_answered_or_refused(client: TestClient) -> None:
    seen: dict[str, int] = {"answered": 0, "refused": 0}
    t0 = time.perf_counter()

    @fuzz(EXAMPLES["json"])
    @given(json_values.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=300))
    def check(body: bytes) -> None:
        seen[answered_or_refused(client.post("/api/table", content=body))] += 1

    check()
    print(f"JSON bodies and bytes: {seen} in {time.perf_counter() - t0:.1f} s")
    assert sum(seen.values()) >= EXAMPLES["json"]
