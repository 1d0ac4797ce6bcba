"""Every malformed query is refused before any work, naming the parameter; nothing answers 500 or echoes it whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cubeguard.audit.queries import MAX_LOGGED, QueryLog
from cubeguard.config import load_release
from cubeguard.errors import ConfigError
from cubeguard.pipeline.auditing import audit_url_of
from cubeguard.tables.query import MAX_BREAKDOWNS, MAX_ID
from cubeguard.tables.request import MAX_BODY_BYTES, MAX_QUERY_BYTES, SHOWN
from service.app import create_app
from tests.tables_release import TABLES, publish

HUGE = "Z" * 1_000_000
RULES = TABLES + "  rate_limit_per_minute: 100000\n  trusted_proxies: [10.0.0.0/8, '::1']\n"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    return create_app(publish(tmp_path_factory.mktemp("queries"), tables=RULES), precompute=False)


@pytest.fixture(scope="module")
def client(app: FastAPI) -> TestClient:
    return TestClient(app, raise_server_exceptions=False)


def log_of(app: FastAPI) -> QueryLog:
    return QueryLog(audit_url_of(app.state.service.engine.release))


def refusal(answer: Any, status: int, rule: str, parameter: str | None) -> str:
    """The refusal's message, once its status, shape, rule and parameter are checked."""
    assert answer.status_code == status, answer.text[:300]
    body = answer.json()
    assert set(body) == {"refused", "rule", "parameter", "message"} and body["refused"] is True
    assert (body["rule"], body["parameter"]) == (rule, parameter)
    assert len(answer.text) < 600  # never the input whole
    return str(body["message"])


# One test per message: (URL parameters, rule, parameter, message).
GET_REFUSALS = [
    (
        [("breakdowns", "")],
        "empty_parameter",
        "breakdowns",
        "breakdowns is empty; separate breakdown ids by single commas",
    ),
    ([("breakdowns", ",")], "malformed_parameter", "breakdowns", "breakdowns ',' has an empty part; separate"),
    ([("breakdowns", "SEX,")], "malformed_parameter", "breakdowns", "breakdowns 'SEX,' has an empty part"),
    ([("population", "total")], "empty_parameter", "breakdowns", "breakdowns is missing; give breakdown ids"),
    (
        [("breakdowns", "SEX"), ("filter", "SEX")],
        "malformed_parameter",
        "filter",
        "filter 'SEX' has no colon; write it as BREAKDOWN:CODE, e.g. SEX:1",
    ),
    (
        [("breakdowns", "AGE.L"), ("filter", "SEX:1"), ("filter", "SEX:2")],
        "repeated_parameter",
        "filter",
        "breakdown 'SEX' is filtered twice; restrict it to one code (ask one table per code)",
    ),
    ([("breakdowns", "AGE.L"), ("filter", ":1")], "empty_parameter", "filter", "filter has an empty id or code"),
    ([("breakdowns", "SEX,SEX")], "repeated_parameter", "breakdowns", "breakdown 'SEX' is given twice; cross it once"),
    (
        [("breakdowns", "SEX"), ("breakdowns", "SEX")],
        "repeated_parameter",
        "breakdowns",
        "breakdown 'SEX' is given twice",
    ),
    (
        [("breakdowns", "SEX"), ("population", "total"), ("population", "households")],
        "repeated_parameter",
        "population",
        "population is given 2 times; give it once",
    ),
    ([("breakdowns", "SEX"), ("mean", "")], "empty_parameter", "mean", "mean is empty; give an id or leave mean out"),
    (
        [("breakdowns", "SEX"), ("format", "xls")],
        "malformed_parameter",
        "format",
        "format 'xls' is not known; use json, csv, sdmx-csv, xlsx",
    ),
    (
        [("breakdowns", "SEX"), ("per_area", "yes")],
        "malformed_parameter",
        "per_area",
        "per_area must be true or false, not 'yes'",
    ),
    (
        [("breakdowns", "SEX"), ("per_area", "true"), ("per_area", "false")],
        "repeated_parameter",
        "per_area",
        "per_area is given 2 times; give it once",
    ),
    (
        [("breakdowns", "SEX"), ("colour", "red")],
        "unknown_parameter",
        "colour",
        "parameter 'colour' is not known; use breakdowns, population, filter, mean, per_area, format",
    ),
    (
        [("breakdowns", "SEX"), ("", "")],
        "malformed_parameter",
        "query",
        "the query has a parameter without a name (a stray '=' or \"\"); remove it",
    ),
    (
        [("breakdowns", ",".join(f"B{i}" for i in range(MAX_BREAKDOWNS + 1)))],
        "too_many_values",
        "breakdowns",
        f"breakdowns has {MAX_BREAKDOWNS + 1} values but at most {MAX_BREAKDOWNS} are read; give fewer",
    ),
    (
        [("breakdowns", "S" * (MAX_ID + 1))],
        "parameter_too_long",
        "breakdowns",
        f"breakdowns has an id of {MAX_ID + 1} characters, starting '{'S' * SHOWN}'; at most {MAX_ID} are read",
    ),
    (
        [("breakdowns", "SEX\x00")],
        "malformed_parameter",
        "breakdowns",
        "breakdowns has an id with a control character ('SEX\\x00'); remove it",
    ),
    (
        [("breakdowns", "SEX"), ("filter", "GEO.2:A1"), ("filter", "GEO.9:A")],
        "offered_breakdowns",
        "filter",
        "breakdown 'GEO.9' is not offered; choose one of GEO.1, GEO.2, SEX, AGE.L, AGE.M",
    ),
]


@pytest.mark.parametrize(("params", "rule", "parameter", "message"), GET_REFUSALS, ids=[g[1] for g in GET_REFUSALS])
def test_a_malformed_get_query_is_refused_naming_the_parameter(
    client: TestClient, params: list[tuple[str, str]], rule: str, parameter: str, message: str
) -> None:
    said = refusal(client.get("/api/table", params=params), 422, rule, parameter)
    assert said.startswith(message)


POST_REFUSALS = [
    (
        b"{",
        "malformed_parameter",
        "body",
        'the body is not JSON; send an object such as {"breakdowns": ["SEX", "AGE.H"]}',
    ),
    (b'["SEX"]', "malformed_parameter", "body", 'the body must be a JSON object such as {"breakdowns": ["SEX"]}'),
    (
        b'{"breakdowns": [1]}',
        "malformed_parameter",
        "breakdowns",
        'breakdowns must be a list of breakdown ids (strings), e.g. ["SEX", "AGE.H"]',
    ),
    (b'{"breakdowns": "SEX"}', "malformed_parameter", "breakdowns", "breakdowns must be a list of breakdown ids"),
    (b'{"breakdowns": []}', "empty_parameter", "breakdowns", "breakdowns is empty; give at least one breakdown id"),
    (
        b'{"breakdowns": ["AGE.L"], "filters": {"SEX": 1}}',
        "malformed_parameter",
        "filters",
        'filters must be an object of breakdown id to code (strings), e.g. {"SEX": "1"}',
    ),
    (
        b'{"breakdowns": ["AGE.L"], "filters": {"SEX": "1", "SEX": "2"}}',
        "repeated_parameter",
        "filters",
        "key 'SEX' is given twice in a JSON object; give each key once",
    ),
    (
        b'{"breakdowns": ["SEX"], "breakdowns": ["AGE.L"]}',
        "repeated_parameter",
        "breakdowns",
        "key 'breakdowns' is given twice",
    ),
    (
        b'{"breakdowns": ["SEX"], "": 1}',
        "malformed_parameter",
        "body",
        "the body has a parameter without a name (a stray '=' or \"\"); remove it",
    ),
    (b'{"breakdowns": ["SEX"], "rows": 1}', "unknown_parameter", "rows", "field 'rows' is not known; use breakdowns"),
    (
        b'{"breakdowns": ["SEX"], "population": 3}',
        "malformed_parameter",
        "population",
        "population must be a string id, not int",
    ),
]


@pytest.mark.parametrize(("body", "rule", "parameter", "message"), POST_REFUSALS, ids=[p[1] for p in POST_REFUSALS])
def test_a_malformed_post_body_is_refused_naming_the_field(
    client: TestClient, body: bytes, rule: str, parameter: str, message: str
) -> None:
    answer = client.post("/api/table", content=body, headers={"content-type": "application/json"})
    assert refusal(answer, 422, rule, parameter).startswith(message)


def test_post_takes_format_as_its_only_url_parameter(client: TestClient) -> None:
    answer = client.post("/api/table", params={"mean": "age"}, json={"breakdowns": ["SEX"]})
    said = refusal(answer, 422, "unknown_parameter", "mean")
    assert said == "parameter 'mean' is not known here; send the query's fields in the JSON body"
    twice = client.post("/api/table", params=[("format", "csv"), ("format", "json")], json={"breakdowns": ["SEX"]})
    assert refusal(twice, 422, "repeated_parameter", "format") == "format is given 2 times; give it once"
    assert client.post("/api/table", params={"format": "csv"}, json={"breakdowns": ["SEX"]}).status_code == 200


def test_an_oversized_query_string_or_body_is_refused_unread(client: TestClient, app: FastAPI) -> None:
    long_url = client.get("/api/table", params={"breakdowns": HUGE[:60_000]})  # httpx's longest URL part
    said = refusal(long_url, 414, "query_too_large", "query")
    assert said == f"the query has more than {MAX_QUERY_BYTES:,} bytes, the most that is read; ask for fewer breakdowns or filters"  # fmt: skip
    big = client.post("/api/table", content=json.dumps({"breakdowns": [HUGE]}).encode())
    said = refusal(big, 413, "query_too_large", "body")
    assert said == f"the body has more than {MAX_BODY_BYTES:,} bytes, the most that is read; ask for fewer breakdowns or filters"  # fmt: skip
    rows = log_of(app).rows()[-2:]
    assert [r.rule for r in rows] == ["query_too_large", "query_too_large"]
    assert all(len(json.dumps(r.query)) < 2 * MAX_LOGGED for r in rows)  # the 1 MB name is not logged whole


def test_a_long_name_is_cut_in_the_answer_and_the_log(client: TestClient, app: FastAPI) -> None:
    name = "GEO." + "9" * 60  # within the caps, so read, refused as not offered and logged
    said = refusal(client.post("/api/table", json={"breakdowns": [name]}), 422, "offered_breakdowns", "breakdowns")
    assert said.startswith(f"breakdown {name!r} is not offered")
    log = log_of(app)
    assert log.rows()[-1].query["breakdowns"] == [name]
    log.append("c" * 5000, "r", {"breakdowns": ["x" * 5000] * 100}, "refused", "r" * 5000, None)
    last = log.rows()[-1]
    assert len(last.client) <= MAX_LOGGED and last.client.endswith("...[cut: 5000 chars]")
    assert last.rule is not None and len(last.rule) <= MAX_LOGGED
    assert len(json.dumps(last.query)) < 10_000 and last.query["breakdowns"][-1] == "...[cut: 68 more items]"


def test_an_unexpected_error_answers_a_generic_500_without_the_input(
    client: TestClient, app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("secret internals SEX")

    monkeypatch.setattr(app.state.service, "_encoded", broken)
    answer = client.get("/api/table", params={"breakdowns": "AGE.M", "population": "households"})
    assert answer.status_code == 500
    assert answer.json() == {
        "refused": False,
        "error": "internal",
        "message": "an unexpected error stopped this answer; this is a bug in cubeguard (the service's log has its kind)",
    }
    assert log_of(app).rows()[-1].outcome == "failed"


def test_a_request_fastapi_rejects_is_a_refusal_without_its_input(app: FastAPI) -> None:
    @app.get("/test-only-int")
    def number(n: int) -> int:
        return n

    answer = TestClient(app).get("/test-only-int", params={"n": HUGE[:5000]})
    said = refusal(answer, 422, "malformed_parameter", "n")
    assert said == "parameter 'n' is malformed; see /openapi.json"


def test_the_client_is_the_peer_unless_a_trusted_proxy_forwarded_it(app: FastAPI) -> None:
    log = log_of(app)
    query = {"breakdowns": "SEX"}
    forged = {"X-Forwarded-For": "198.51.100.1, 203.0.113.5"}
    TestClient(app, client=("192.0.2.7", 4000)).get("/api/table", params=query, headers=forged)
    assert log.rows()[-1].client == "192.0.2.7"  # not a trusted proxy: the header is the client's own
    TestClient(app, client=("10.1.2.3", 4000)).get("/api/table", params=query, headers=forged)
    assert log.rows()[-1].client == "203.0.113.5"  # the rightmost address the proxy did not write itself
    chained = {"X-Forwarded-For": "198.51.100.1, 203.0.113.5, 10.9.9.9"}
    TestClient(app, client=("::1", 4000)).get("/api/table", params=query, headers=chained)
    assert log.rows()[-1].client == "203.0.113.5"  # two trusted proxies in a row


def test_trusted_proxies_must_be_addresses_or_networks(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    from tests.conftest import TINY_CONFIG

    config.write_text(TINY_CONFIG + TABLES + "  trusted_proxies: [10.0.0.0/8, proxy.example.org]\n")
    with pytest.raises(ConfigError) as bad:
        load_release(config)
    said = " ".join(str(bad.value).split())
    assert "tables.trusted_proxies" in said
    assert "'proxy.example.org' is not an IP address or CIDR network; write e.g. 10.0.0.5 or 10.0.0.0/8" in said
