"""The flexible table service: an HTTP API with an OpenAPI description, and the page that uses it.

``GET /api/release`` and ``/api/variables`` say what may be asked, ``/api/cubes`` the published cubes
that may be opened as they are; ``GET`` or ``POST /api/table`` answers a query as JSON-stat 2.0, CSV,
SDMX-CSV or XLSX (encoded once per table while cached), or refuses it (HTTP 422) naming the rule and what to
change. Every query is read and checked before any work (:mod:`cubeguard.tables.request`): an
unknown, empty, repeated, malformed or oversized parameter is refused as a rule is, with
``{refused, rule, parameter, message}`` (HTTP 422; 414 or 413 for a query string or body over its
cap), and no input answers 500 (an unexpected error answers a generic 500 JSON, never a traceback
or the input). Every query is logged in the release's internal audit store (client, query, time,
outcome; strings cut); each client may ask ``tables.rate_limit_per_minute`` queries a minute
(HTTP 429 beyond), counted in one database for every worker of the service. The client is the
socket's peer, or behind a proxy named in ``tables.trusted_proxies`` the address it forwarded.
``POST /admin/reload`` (bearer token from the environment variable that ``tables.admin_token_env``
names) switches every worker to the newest published release, or the one named
(:mod:`service.release_choice`). While no query can be logged or the release cannot be read,
table queries answer 503. The service reads the key store read-only and never returns an unprotected count.
"""

from __future__ import annotations

import hmac
import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Header, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.requests import ClientDisconnect

from cubeguard.audit.errors import AuditStoreError
from cubeguard.audit.queries import Outcome, QueryLog
from cubeguard.errors import CubeguardError
from cubeguard.logs import json_requested, log_json
from cubeguard.pipeline.auditing import audit_url_of
from cubeguard.tables.describe import describe_cubes, describe_release, describe_variables
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.formats import MEDIA, encode
from cubeguard.tables.query import QueryTooLarge, TableQuery, TableRefused
from cubeguard.tables.request import (
    MAX_BODY_BYTES,
    MAX_QUERY_BYTES,
    check_size,
    format_of,
    from_json,
    from_params,
    no_params,
)
from cubeguard.tables.rules import check_form
from cubeguard.tables.served import open_served
from service.clients import client_of, networks
from service.docs import GET_CUBES, GET_TABLE, POST_TABLE
from service.limits import RateLimit
from service.memory import settle
from service.metrics import CONTENT_TYPE as METRICS_TYPE
from service.metrics import Metrics
from service.release_choice import FOLLOW_SECONDS, ReleaseChoice, choice_file, chosen_release

PAGE = Path(__file__).with_name("page.html")
EXTENSIONS = {"csv": ".csv", "sdmx-csv": ".sdmx.csv", "xlsx": ".xlsx"}  # a download's file name
CACHED_BYTES = 256 * 2**20  # encoded answers kept for repeated queries
RETRY_AFTER = 30  # seconds a client is told to wait while nothing can be answered (HTTP 503)
#: Tables computed at once (new tables are GIL-bound Python and numpy; on 2 cores, 600 new 4-way
#: tables for 20 clients took 5.9-7.0 s with 2 at once against 7.1-8.2 s with every request's thread).
COMPUTE_THREADS = os.cpu_count() or 2
#: Parses what a client sent into a query and a format, or raises TableRefused.
Parse = Callable[[], tuple[TableQuery, str]]
log = logging.getLogger(__name__)


class Service:
    """The engine being served (swapped whole on reload), its query log and rate limit."""

    def __init__(
        self,
        config: Path,
        release_id: str | None = None,
        overrides: dict[str, Any] | None = None,
        precompute: bool = True,
        limits: Path | None = None,
        freeze: bool = False,
    ) -> None:
        self.config = config
        self._freeze = freeze
        self.overrides = overrides
        chosen = chosen_release(choice_file(limits)) if limits is not None else None
        # a worker started after a reload serves the release chosen then
        self._generation, release_id = chosen if chosen is not None else (0, release_id)
        self._next_look = 0.0
        self.engine: TableEngine = open_served(config, release_id, overrides)
        if precompute:
            _build_crossings(self.engine)
        if limits is None:  # a service of its own (tests, one process): scratch databases, gone with it
            self._scratch = tempfile.TemporaryDirectory(prefix="cubeguard-limits-")
            limits = Path(self._scratch.name) / "limits.sqlite"
        self.choice = ReleaseChoice(choice_file(limits))
        spec = self.engine.spec
        self.limit = RateLimit(spec.rate_limit_per_minute, limits)
        self.trusted = networks(spec.trusted_proxies)
        self.token = os.environ.get(spec.admin_token_env) if spec.admin_token_env else None
        self.log = QueryLog(audit_url_of(self.engine.release))
        self._reload = threading.Lock()
        self._lock = threading.Lock()
        self._computing = threading.BoundedSemaphore(COMPUTE_THREADS)
        self._bytes: OrderedDict[tuple[object, ...], tuple[int, bytes]] = OrderedDict()
        self._size = 0
        self.metrics = Metrics(lambda: self.engine)
        self._settle()

    def _settle(self) -> None:
        """Keep the served objects out of the garbage collector's full collections (a served app only)."""
        if self._freeze:
            settle()

    def reload(self, release_id: str | None) -> str:
        """Serve ``release_id`` (default: the newest published one); the old engine serves until then.

        The release is recorded as every worker's choice: the others switch to it within a second of
        their next request (:mod:`service.release_choice`).
        """
        with self._reload:
            engine = _opened(open_served(self.config, release_id, self.overrides))
            self._generation = self.choice.choose(engine.release_id)
            self.engine = engine
            self._settle()
        log.info("serving release %s", engine.release_id, extra={"release_id": engine.release_id})
        return engine.release_id

    def served(self) -> TableEngine:
        """The engine to answer with; first, at most once a second, look for a release another worker chose."""
        now = time.monotonic()
        if now >= self._next_look:
            self._next_look = now + FOLLOW_SECONDS
            chosen = self.choice.current()
            if chosen is not None and chosen[0] > self._generation:
                threading.Thread(target=self._switch, args=chosen, name="reload", daemon=True).start()
        return self.engine

    def _switch(self, generation: int, release_id: str) -> None:
        """Open the release another worker chose (this worker's old engine answers until it is open)."""
        if not self._reload.acquire(blocking=False):  # a switch is under way: the next look starts another
            return
        try:
            if generation > self._generation:
                self.engine = _opened(open_served(self.config, release_id, self.overrides))
                self._settle()
                log.info("serving release %s (chosen by another worker)", release_id, extra={"release_id": release_id})
        except CubeguardError as exc:  # this worker keeps its release; the log says why
            log.error("cannot switch to release %s chosen by another worker: %s", release_id, exc)
        finally:
            self._generation = max(self._generation, generation)
            self._reload.release()

    def client(self, request: Request) -> str:
        """The client: the socket's peer, or what a trusted proxy forwarded (``tables.trusted_proxies``)."""
        peer = request.client.host if request.client is not None else None
        return client_of(peer, request.headers.getlist("x-forwarded-for"), self.trusted)

    def table(self, client: str, parse: Parse, raw: dict[str, Any], names: dict[str, str]) -> Response:
        """Count, read and check, then answer or refuse; log either (``raw`` until the query is read).

        ``names`` maps the query's field names to the parameter names the client used (``filters``
        is ``filter`` in a URL), for the refusal's ``parameter``. While no query can be logged (the
        audit store is down or full) or the release's files cannot be read, every table query
        answers 503: nothing is answered unlogged, and the service answers again once they are back.
        """
        started = time.perf_counter()
        try:
            return self._table(self.served(), started, client, parse, raw, names)
        except (AuditStoreError, OSError) as exc:
            log.error("no table answered: %s", exc if isinstance(exc, AuditStoreError) else type(exc).__name__)
            self.metrics.query("unavailable", None, time.perf_counter() - started)
            what = "queries cannot be logged" if isinstance(exc, AuditStoreError) else "the release cannot be read"
            body = {"refused": False, "error": "unavailable", "message": f"no table can be answered just now "
                    f"({what}); ask again in a minute"}  # fmt: skip
            return JSONResponse(body, status_code=503, headers={"Retry-After": str(RETRY_AFTER)})

    def _table(self, engine: TableEngine, started: float, client: str, parse: Parse, raw: dict[str, Any],
               names: dict[str, str]) -> Response:  # fmt: skip
        if not self.limit.allow(client):
            self._log(client, engine, raw, "limited", "rate_limit", None)
            self.metrics.query("limited", "rate_limit", time.perf_counter() - started)
            per = engine.spec.rate_limit_per_minute
            return _refusal(429, "rate_limit", f"more than {per} queries in a minute; wait a moment and ask again")
        logged = raw
        try:
            query, fmt = parse()
            logged = query.model_dump()
            check_form(query, engine.spec, engine.offered)  # before any work (the engine checks again)
            cells, body = self._encoded(engine, query, fmt)
        except TableRefused as refused:
            self._log(client, engine, logged, "refused", refused.rule, None)
            self.metrics.query("refused", refused.rule, time.perf_counter() - started)
            status = (414 if refused.parameter == "query" else 413) if isinstance(refused, QueryTooLarge) else 422
            parameter = names.get(refused.parameter or "", refused.parameter)
            return _refusal(status, refused.rule, str(refused), parameter)
        except Exception as exc:
            self._log(client, engine, logged, "failed", None, None)
            if not isinstance(exc, OSError):  # an unreadable release is counted as unavailable (503)
                self.metrics.query("failed", None, time.perf_counter() - started)
            raise
        self._log(client, engine, logged, "answered", None, cells)
        self.metrics.query("answered", None, time.perf_counter() - started)
        if fmt == "json":
            return Response(body, media_type=MEDIA[fmt])
        name = "-".join(query.breakdowns).replace(".", "_") + EXTENSIONS[fmt]
        headers = {"Content-Disposition": f'attachment; filename="{name}"'}
        return Response(body, media_type=MEDIA[fmt], headers=headers)

    def _encoded(self, engine: TableEngine, query: TableQuery, fmt: str) -> tuple[int, bytes]:
        """(cells, bytes) of the answer in ``fmt``, encoded once per table and format while cached."""
        key = (engine.release_id, query.key(), fmt)
        with self._lock:
            found = self._bytes.get(key)
            if found is not None:
                self._bytes.move_to_end(key)
                self.metrics.cache.labels("hit").inc()
                return found
        self.metrics.cache.labels("miss").inc()
        with self._computing:  # one table per core at a time: more threads only wait for the GIL
            answer = engine.answer(query)
            found = (int(answer.count.size), encode(answer, fmt, engine.release.config.sdmx))
        with self._lock:
            if key not in self._bytes:
                self._bytes[key] = found
                self._size += len(found[1])
                while self._size > CACHED_BYTES and len(self._bytes) > 1:
                    _, (_, old) = self._bytes.popitem(last=False)
                    self._size -= len(old)
        return found

    def _log(self, client: str, engine: TableEngine, query: dict[str, Any], outcome: Outcome, rule: str | None, cells: int | None) -> None:  # fmt: skip
        self.log.append(client, engine.release_id, query, outcome, rule, cells)


def _opened(engine: TableEngine) -> TableEngine:
    """``engine``, its crossings being tabulated in the background."""
    _build_crossings(engine)
    return engine


def _build_crossings(engine: TableEngine) -> None:
    """Tabulate the engine's finest crossings in the background; tables are answered meanwhile.

    A build that stops says so in the service's log (tables are then tabulated per query, slower;
    ``/metrics`` shows the crossings ready below those planned).
    """

    def build() -> None:
        try:
            engine.build_crossings()
        except Exception as exc:  # a thread's exception would otherwise go to stderr unexplained
            log.error("the crossings of release %s stopped (%s); tables are tabulated per query",
                      engine.release_id, type(exc).__name__)  # fmt: skip

    threading.Thread(target=build, name="crossings", daemon=True).start()


def _refusal(status: int, rule: str, message: str, parameter: str | None = None) -> JSONResponse:
    body = {"refused": True, "rule": rule, "parameter": parameter, "message": message}
    return JSONResponse(body, status_code=status)


async def _body(request: Request, cap: int) -> bytes | None:
    """The request's body, or None once it is longer than ``cap`` bytes (the rest is never read)."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > cap:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _raw(text: bytes) -> dict[str, Any]:
    """What a client sent, for the log until it is read as a query (cut by the log)."""
    return {"raw": text[: 4 * 200].decode("utf-8", "replace")}


def create_app(
    config: Path,
    release_id: str | None = None,
    overrides: dict[str, Any] | None = None,
    precompute: bool = True,
    limits: Path | None = None,
    freeze: bool = False,
) -> FastAPI:
    """The app serving ``config``'s release ``release_id`` (default: the newest published one).

    ``overrides`` change config keys (e.g. ``output.folder``) as ``cubeguard tables --set`` does;
    ``precompute`` starts tabulating the finest crossings in the background (the served app's job);
    ``limits`` is the rate limit's database, shared by every worker of a service (default: one of
    this app's own, removed with it); ``freeze`` keeps the opened release's objects out of the
    garbage collector's full collections (:func:`service.memory.settle`; the served process only).
    """
    if json_requested():  # CUBEGUARD_LOG_FORMAT=json (cubeguard tables --log-json)
        log_json(logging.getLogger("service"))
    service = Service(config, release_id, overrides, precompute, limits, freeze)
    app = FastAPI(
        title="cubeguard flexible tables",
        description="Census tables on demand, protected on the fly with the release's cell key method.",
        docs_url=None,  # the interactive docs load scripts from the internet; /openapi.json describes the API
        redoc_url=None,
    )
    app.state.service = service
    _handle_errors(app)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        # The page with what /api/release, /api/variables and /api/cubes answer written in, so a
        # browser needs no round trip before the table (issue 39); built once per served engine.
        from json import dumps

        engine = service.served()  # a new engine (a reload) builds its own page
        built: tuple[TableEngine, str] | None = getattr(app.state, "page", None)
        if built is None or built[0] is not engine:
            release = {k: v for k, v in describe_release(engine).items() if k != "precomputed"}  # changes; API only
            meta = {"release": release, "variables": describe_variables(engine), "cubes": describe_cubes(engine)}
            data = dumps(meta, separators=(",", ":")).replace("<", "\\u003c")  # no "</script>" in the script
            marker = '<script id="meta" type="application/json">null</script>'
            text = PAGE.read_text(encoding="utf-8").replace(marker, marker.replace("null", data), 1)
            built = (engine, text)
            app.state.page = built
        return built[1]

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(service.metrics.scrape(), media_type=METRICS_TYPE)

    @app.get("/api/release", summary="The served release, its populations, means and rules")
    def release() -> dict[str, Any]:
        return describe_release(service.served())

    @app.get("/api/variables", summary="Variables and the levels (breakdowns) that may be crossed or filtered on")
    def variables() -> list[dict[str, Any]]:
        return describe_variables(service.served())

    @app.get(
        "/api/cubes",
        summary="Published cubes that may be opened as they are (population and breakdowns offered)",
        openapi_extra=GET_CUBES,
    )
    def cubes(request: Request) -> Response:
        try:
            check_size(len(request.scope["query_string"]), MAX_QUERY_BYTES, "query")
            no_params(request.query_params.multi_items(), "/api/cubes")
        except TableRefused as refused:
            status = 414 if isinstance(refused, QueryTooLarge) else 422
            return _refusal(status, refused.rule, str(refused), refused.parameter)
        return JSONResponse(describe_cubes(service.served()))

    @app.get("/api/table", summary="A protected table (query in the URL)", openapi_extra=GET_TABLE)
    def table_get(request: Request) -> Response:
        raw = request.scope["query_string"]

        def parse() -> tuple[TableQuery, str]:
            check_size(len(raw), MAX_QUERY_BYTES, "query")
            return from_params(request.query_params.multi_items())

        return service.table(service.client(request), parse, _raw(raw), {"filters": "filter"})

    @app.post("/api/table", summary="A protected table (query as JSON)", openapi_extra=POST_TABLE)
    async def table_post(request: Request) -> Response:
        raw = request.scope["query_string"]
        try:
            body = await _body(request, MAX_BODY_BYTES)
        except ClientDisconnect:  # gone before its body was whole: nobody reads the answer
            return _refusal(400, "malformed_parameter", "the body ended before its Content-Length", "body")

        def parse() -> tuple[TableQuery, str]:
            check_size(len(raw), MAX_QUERY_BYTES, "query")
            fmt = format_of(request.query_params.multi_items())
            if body is None:
                raise QueryTooLarge(
                    "query_too_large", f"the body has more than {MAX_BODY_BYTES:,} bytes, the most that is read; "
                    "ask for fewer breakdowns or filters", "body",
                )  # fmt: skip
            return from_json(body), fmt

        logged = _raw(b"" if body is None else body)
        return await run_in_threadpool(service.table, service.client(request), parse, logged, {})

    @app.post("/admin/reload", summary="Serve the newest published release, or the one named (bearer token)")
    def reload(authorization: Annotated[str | None, Header()] = None, release_id: str | None = None) -> Response:
        expected = service.token
        given = (authorization or "").removeprefix("Bearer ").strip()
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            return _refusal(401, "admin_token", "a valid bearer token is needed for admin endpoints")
        try:
            return JSONResponse({"release_id": service.reload(release_id)})
        except CubeguardError as exc:
            return _refusal(409, "reload", str(exc))

    return app


def _handle_errors(app: FastAPI) -> None:
    """Refusals for requests FastAPI itself rejects, and a generic 500 that shows nothing of the error."""

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        parameter = str(first.get("loc", ("", "request"))[-1])[:24]
        return _refusal(
            422, "malformed_parameter", f"parameter {parameter!r} is malformed; see /openapi.json", parameter
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected %s answering %s", type(exc).__name__, request.url.path)  # never the query
        message = "an unexpected error stopped this answer; this is a bug in cubeguard (the service's log has its kind)"
        return JSONResponse({"refused": False, "error": "internal", "message": message}, status_code=500)
