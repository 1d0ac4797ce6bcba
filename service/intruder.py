"""An intruder of the table service: every table of one and two variables it will answer, over HTTP.

What the public holds: ``/api/release`` (populations, rules), ``/api/variables`` (levels and
codes) and the tables ``/api/table`` answers. The intruder asks, for each population, each offered
level alone and each pair of levels of different variables, and keeps what is answered; a refusal
(4xx naming a rule) is counted, and the rate limit is waited out.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from cubeguard.errors import CubeguardError
from cubeguard.tables.query import TableQuery

RETRIES = 5  # waits for the rate limit before giving up on one table


@dataclass
class Asked:
    """The tables the service answered, the release it served them from, and what it refused."""

    release_id: str
    answers: list[tuple[TableQuery, dict[str, Any]]] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)


def ask_tables(url: str, most: int = 2000, progress: Callable[[int, int], None] | None = None,
               client: httpx.Client | None = None) -> Asked:  # fmt: skip
    """Every table of one or two levels of ``url``'s service, per population (at most ``most`` asked).

    ``client``: the HTTP client to ask with (a test's client of the app); by default one of ``url``.
    """
    given = contextlib.nullcontext(client) if client is not None else None
    with given or httpx.Client(base_url=url.rstrip("/"), timeout=120) as client:
        release = _get(client, "/api/release")
        levels = [(v["id"], level["id"]) for v in _get(client, "/api/variables") for level in v["levels"]]
        asked = Asked(str(release["release_id"]))
        queries = [
            TableQuery(breakdowns=[b for _, b in combo], population=p["id"])
            for p in release["populations"]
            for k in (1, 2)
            for combo in itertools.combinations(levels, k)
            if len({v for v, _ in combo}) == k
        ][:most]
        for done, query in enumerate(queries, 1):
            _ask(client, query, asked)
            if progress is not None:
                progress(done, len(queries))
    return asked


def _get(client: httpx.Client, path: str) -> Any:
    try:
        answer = client.get(path)
    except httpx.HTTPError as exc:
        raise CubeguardError(f"the table service at {client.base_url} does not answer ({exc}); start it with "
                             "cubeguard tables CONFIG, or give its address with --service") from None  # fmt: skip
    try:
        found = answer.json() if answer.status_code == 200 else None
    except ValueError:  # a web page, not the service's JSON
        found = None
    if found is None:
        raise CubeguardError(f"the server at {client.base_url} answered {path} with {answer.status_code} and no "
                             "table service's JSON; give the address of a cubeguard table service with --service")  # fmt: skip
    return found


def _ask(client: httpx.Client, query: TableQuery, asked: Asked) -> None:
    params = {"breakdowns": ",".join(query.breakdowns), "population": query.population}
    for _ in range(RETRIES):
        answer = client.get("/api/table", params=params)
        if answer.status_code == 429:  # the rate limit: wait as it asks
            time.sleep(float(answer.headers.get("retry-after", 5)))
            continue
        if answer.status_code == 200:
            asked.answers.append((query, answer.json()))
        else:
            asked.refused[_rule(answer)] = asked.refused.get(_rule(answer), 0) + 1
        return
    asked.refused["rate_limit"] = asked.refused.get("rate_limit", 0) + 1


def _rule(answer: httpx.Response) -> str:
    """The rule a refusal names, or its status code when its body is not the service's JSON."""
    try:
        body = answer.json()
    except ValueError:
        return str(answer.status_code)
    return str(body.get("rule", answer.status_code)) if isinstance(body, dict) else str(answer.status_code)
