"""The flexible table service: an HTTP API with an OpenAPI description, and the page that uses it.

``GET /api/release`` and ``/api/variables`` say what may be asked; ``GET`` or ``POST /api/table``
answers a query as JSON-stat 2.0, CSV or SDMX-CSV (encoded once per table while cached), or refuses it (HTTP 422) naming the rule and what to
change. Every query is logged in the release's internal audit store (client, query, time,
outcome); each client may ask ``tables.rate_limit_per_minute`` queries a minute (HTTP 429 beyond).
``POST /admin/reload`` (bearer token from ``tables.admin_token``) switches to the newest published
release. The service reads the key store read-only and never returns an unprotected count.
"""

from __future__ import annotations

import hmac
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Annotated, Any

from fastapi import Body, FastAPI, Header, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from cubeguard.audit.queries import Outcome, QueryLog
from cubeguard.errors import CubeguardError
from cubeguard.pipeline.auditing import audit_url_of
from cubeguard.tables.describe import describe_release, describe_variables
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.formats import MEDIA, encode
from cubeguard.tables.query import TableQuery, TableRefused
from cubeguard.tables.served import open_served
from service.limits import RateLimit

PAGE = Path(__file__).with_name("page.html")
CACHED_BYTES = 256 * 2**20  # encoded answers kept for repeated queries
#: Tables computed at once (new tables are GIL-bound Python and numpy; on 2 cores, 600 new 4-way
#: tables for 20 clients took 5.9-7.0 s with 2 at once against 7.1-8.2 s with every request's thread).
COMPUTE_THREADS = os.cpu_count() or 2
Format = Annotated[str, Query(pattern="^(json|csv|sdmx-csv)$", description="json, csv or sdmx-csv")]


class Service:
    """The engine being served (swapped whole on reload), its query log and rate limit."""

    def __init__(
        self,
        config: Path,
        release_id: str | None = None,
        overrides: dict[str, Any] | None = None,
        precompute: bool = True,
    ) -> None:
        self.config = config
        self.overrides = overrides
        self.engine: TableEngine = open_served(config, release_id, overrides)
        if precompute:
            _build_crossings(self.engine)
        spec = self.engine.spec
        self.limit = RateLimit(spec.rate_limit_per_minute)
        self.token = os.environ.get(spec.admin_token_env) if spec.admin_token_env else None
        self.log = QueryLog(audit_url_of(self.engine.release))
        self._reload = threading.Lock()
        self._lock = threading.Lock()
        self._computing = threading.BoundedSemaphore(COMPUTE_THREADS)
        self._bytes: OrderedDict[tuple[object, ...], tuple[int, bytes]] = OrderedDict()
        self._size = 0

    def reload(self, release_id: str | None) -> str:
        """Serve ``release_id`` (default: the newest published one); the old engine serves until then."""
        with self._reload:
            engine = open_served(self.config, release_id, self.overrides)
            _build_crossings(engine)
            self.engine = engine
        return self.engine.release_id

    def query(self, client: str, query: TableQuery, fmt: str) -> Response:
        """Answer or refuse, logging either."""
        engine = self.engine
        logged = query.model_dump()
        if not self.limit.allow(client):
            self._log(client, engine, logged, "limited", "rate_limit", None)
            per = engine.spec.rate_limit_per_minute
            return _refusal(429, "rate_limit", f"more than {per} queries in a minute; wait a moment and ask again")
        try:
            cells, body = self._encoded(engine, query, fmt)
        except TableRefused as refused:
            self._log(client, engine, logged, "refused", refused.rule, None)
            return _refusal(422, refused.rule, str(refused))
        self._log(client, engine, logged, "answered", None, cells)
        if fmt == "json":
            return Response(body, media_type=MEDIA[fmt])
        name = "-".join(query.breakdowns).replace(".", "_") + (".sdmx.csv" if fmt == "sdmx-csv" else ".csv")
        headers = {"Content-Disposition": f'attachment; filename="{name}"'}
        return Response(body, media_type=MEDIA[fmt], headers=headers)

    def _encoded(self, engine: TableEngine, query: TableQuery, fmt: str) -> tuple[int, bytes]:
        """(cells, bytes) of the answer in ``fmt``, encoded once per table and format while cached."""
        key = (engine.release_id, query.key(), fmt)
        with self._lock:
            found = self._bytes.get(key)
            if found is not None:
                self._bytes.move_to_end(key)
                return found
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


def _refusal(status: int, rule: str, message: str) -> JSONResponse:
    return JSONResponse({"refused": True, "rule": rule, "message": message}, status_code=status)


def _client(request: Request) -> str:
    return request.client.host if request.client is not None else "unknown"


def create_app(
    config: Path, release_id: str | None = None, overrides: dict[str, Any] | None = None, precompute: bool = True
) -> FastAPI:
    """The app serving ``config``'s release ``release_id`` (default: the newest published one).

    ``overrides`` change config keys (e.g. ``output.folder``) as ``cubeguard tables --set`` does;
    ``precompute`` starts tabulating the finest crossings in the background (the served app's job).
    """
    service = Service(config, release_id, overrides, precompute)
    app = FastAPI(
        title="cubeguard flexible tables",
        description="Census tables on demand, protected on the fly with the release's cell key method.",
        docs_url=None,  # the interactive docs load scripts from the internet; /openapi.json describes the API
        redoc_url=None,
    )
    app.state.service = service

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return PAGE.read_text(encoding="utf-8")

    @app.get("/api/release", summary="The served release, its populations, means and rules")
    def release() -> dict[str, Any]:
        return describe_release(service.engine)

    @app.get("/api/variables", summary="Variables and the levels (breakdowns) that may be crossed or filtered on")
    def variables() -> list[dict[str, Any]]:
        return describe_variables(service.engine)

    @app.get("/api/table", summary="A protected table (query in the URL)")
    def table_get(
        request: Request,
        breakdowns: Annotated[
            list[str], Query(description="Breakdown ids, comma-separated (GEO.N,SEX,AGE.H) or repeated, in order")
        ],
        population: str = "total",
        filter: Annotated[list[str] | None, Query(description="BREAKDOWN:CODE, repeatable")] = None,
        mean: str | None = None,
        format: Format = "json",
    ) -> Response:
        filters = dict(f.split(":", 1) for f in filter or [] if ":" in f)
        ids = [b for given in breakdowns for b in given.split(",") if b]
        query = TableQuery(breakdowns=ids, population=population, filters=filters, mean=mean)
        return service.query(_client(request), query, format)

    @app.post("/api/table", summary="A protected table (query as JSON)")
    def table_post(request: Request, query: Annotated[TableQuery, Body()], format: Format = "json") -> Response:
        return service.query(_client(request), query, format)

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
