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
names) switches to the newest published release. The service reads the key store read-only and never returns an unprotected count.
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

from cubeguard.audit.queries import Outcome, QueryLog
from cubeguard.errors import CubeguardError
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
from service.metrics import CONTENT_TYPE as METRICS_TYPE
from service.metrics import Metrics

PAGE = Path(__file__).with_name("page.html")
EXTENSIONS = {"csv": ".csv", "sdmx-csv": ".sdmx.csv", "xlsx": ".xlsx"}  # a download's file name
CACHED_BYTES = 256 * 2**20  # encoded answers kept for repeated queries
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
    ) -> None:
        self.config = config
        self.overrides = overrides
        self.engine: TableEngine = open_served(config, release_id, overrides)
        if precompute:
            _build_crossings(self.engine)
        spec = self.engine.spec
        if limits is None:  # a service of its own (tests, one process): a scratch database, gone with it
            self._scratch = tempfile.TemporaryDirectory(prefix="cubeguard-limits-")
            limits = Path(self._scratch.name) / "limits.sqlite"
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

    def reload(self, release_id: str | None) -> str:
        """Serve ``release_id`` (default: the newest published one); the old engine serves until then."""
        with self._reload:
            engine = open_served(self.config, release_id, self.overrides)
            _build_crossings(engine)
            self.engine = engine
        return self.engine.release_id

    def client(self, request: Request) -> str:
        """The client: the socket's peer, or what a trusted proxy forwarded (``tables.trusted_proxies``)."""
        peer = request.client.host if request.client is not None else None
        return client_of(peer, request.headers.getlist("x-forwarded-for"), self.trusted)

    def table(self, client: str, parse: Parse, raw: dict[str, Any], names: dict[str, str]) -> Response:
        """Count, read and check, then answer or refuse; log either (``raw`` until the query is read).

        ``names`` maps the query's field names to the parameter names the client used (``filters``
        is ``filter`` in a URL), for the refusal's ``parameter``.
        """
        engine = self.engine
        started = time.perf_counter()
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
        except Exception:
            self._log(client, engine, logged, "failed", None, None)
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


def _build_crossings(engine: TableEngine) -> None:
    """Tabulate the engine's finest crossings in the background; tables are answered meanwhile."""
    threading.Thread(target=engine.build_crossings, name="crossings", daemon=True).start()


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
) -> FastAPI:
    """The app serving ``config``'s release ``release_id`` (default: the newest published one).

    ``overrides`` change config keys (e.g. ``output.folder``) as ``cubeguard tables --set`` does;
    ``precompute`` starts tabulating the finest crossings in the background (the served app's job);
    ``limits`` is the rate limit's database, shared by every worker of a service (default: one of
    this app's own, removed with it).
    """
    service = Service(config, release_id, overrides, precompute, limits)
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
        return PAGE.read_text(encoding="utf-8")

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(service.metrics.scrape(), media_type=METRICS_TYPE)

    @app.get("/api/release", summary="The served release, its populations, means and rules")
    def release() -> dict[str, Any]:
        return describe_release(service.engine)

    @app.get("/api/variables", summary="Variables and the levels (breakdowns) that may be crossed or filtered on")
    def variables() -> list[dict[str, Any]]:
        return describe_variables(service.engine)

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
        return JSONResponse(describe_cubes(service.engine))

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
