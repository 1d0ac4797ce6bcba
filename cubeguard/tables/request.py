"""Read a flexible-table query from what a client sent, refusing anything malformed before any work.

A query comes as URL parameters (``breakdowns``, ``population``, ``filter``, ``mean``, ``per_area``, ``format``)
or as a JSON body (the fields of :class:`~cubeguard.tables.query.TableQuery`). Everything a client
may get wrong is refused here with :class:`~cubeguard.tables.query.TableRefused`, naming the rule,
the parameter and what to change: a parameter that is unknown, empty, repeated, malformed (a filter
without a colon, an empty part, a non-string JSON value, a control character) or over its cap (id
and code lengths, the number of breakdowns and filters, the size of the query string or body). A
message shows at most :data:`SHOWN` characters of what was sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from cubeguard.tables.query import (
    MAX_BREAKDOWNS,
    MAX_CODE,
    MAX_FILTERS,
    MAX_ID,
    QueryTooLarge,
    TableQuery,
    TableRefused,
)

MAX_QUERY_BYTES = 4096  # a URL's query string (16 breakdowns and 16 filters at full length fit in 2.5 KB)
MAX_BODY_BYTES = 16384  # a JSON body
SHOWN = 24  # characters of user input a message shows
FORMATS = ("json", "csv", "sdmx-csv", "xlsx")
PARAMETERS = ("breakdowns", "population", "filter", "mean", "per_area", "format")
FIELDS = ("breakdowns", "population", "filters", "mean", "per_area")


def shown(text: object) -> str:
    """``text`` quoted for a message, cut to its first :data:`SHOWN` characters (saying how long it was).

    >>> shown("SEX")
    "'SEX'"
    >>> shown("x" * 100)
    "'xxxxxxxxxxxxxxxxxxxxxxxx'... (100 characters)"
    """
    value = text if isinstance(text, str) else json.dumps(text, default=str)
    if len(value) <= SHOWN:
        return repr(value)
    return f"{value[:SHOWN]!r}... ({len(value):,} characters)"


def check_size(size: int, limit: int, what: str) -> None:
    """Refuse a query string or body of ``size`` bytes over ``limit`` before it is parsed.

    Raises:
        QueryTooLarge: naming ``what`` (``query`` or ``body``) and the cap.
    """
    if size > limit:
        raise QueryTooLarge(
            "query_too_large",
            f"the {what} has more than {limit:,} bytes, the most that is read; ask for fewer breakdowns or filters",
            what,
        )


def from_params(items: Sequence[tuple[str, str]]) -> tuple[TableQuery, str]:
    """The query and format given as URL parameters (``breakdowns`` comma-separated or repeated).

    Raises:
        TableRefused: an unknown, empty, repeated, malformed or oversized parameter.
    """
    given: dict[str, list[str]] = {}
    for name, value in items:
        _named(name, "query")
        if name not in PARAMETERS:
            raise TableRefused(
                "unknown_parameter",
                f"parameter {shown(name)} is not known; use {', '.join(PARAMETERS)}",
                name[:SHOWN],
            )
        given.setdefault(name, []).append(value)
    for name in ("population", "mean", "per_area", "format"):
        if len(given.get(name, [])) > 1:
            raise TableRefused("repeated_parameter", f"{name} is given {len(given[name])} times; give it once", name)
    fmt = _format(given.get("format", ["json"])[0])
    if "breakdowns" not in given:
        raise TableRefused(
            "empty_parameter", "breakdowns is missing; give breakdown ids, e.g. breakdowns=SEX,AGE.H", "breakdowns"
        )
    parts = [part for value in given["breakdowns"] for part in _split(value)]
    filters = _filters(given.get("filter", []))
    population = _one_id(given.get("population", ["total"])[0], "population")
    mean = _one_id(given["mean"][0], "mean") if "mean" in given else None
    per_area = _flag(given["per_area"][0], "per_area") if "per_area" in given else False
    return _query(parts, population, filters, mean, "breakdowns", per_area), fmt


def no_params(items: Sequence[tuple[str, str]], path: str) -> None:
    """Refuse any URL parameter of an endpoint that takes none (``path`` names it).

    Raises:
        TableRefused: the first parameter given.
    """
    for name, _ in items:
        _named(name, "query")
        raise TableRefused(
            "unknown_parameter", f"parameter {shown(name)} is not known; {path} takes no parameters", name[:SHOWN]
        )


def format_of(items: Sequence[tuple[str, str]]) -> str:
    """The format of a query whose fields come in the body: ``format`` is the one URL parameter.

    Raises:
        TableRefused: another parameter, or ``format`` repeated or unknown.
    """
    for name, _ in items:
        if name != "format":
            raise TableRefused(
                "unknown_parameter",
                f"parameter {shown(name)} is not known here; send the query's fields in the JSON body",
                name[:SHOWN],
            )
    formats = [value for _, value in items]
    if len(formats) > 1:
        raise TableRefused("repeated_parameter", f"format is given {len(formats)} times; give it once", "format")
    return _format(formats[0]) if formats else "json"


def from_json(body: bytes) -> TableQuery:
    """The query given as a JSON object (duplicate keys refused, not silently overwritten).

    Raises:
        TableRefused: the body is not a JSON object of the query's fields, or a field is wrong.
    """
    try:
        data = json.loads(body.decode("utf-8"), object_pairs_hook=_unique_pairs)
    except _DuplicateKey as twice:
        raise TableRefused(
            "repeated_parameter",
            f"key {shown(twice.key)} is given twice in a JSON object; give each key once",
            twice.key if twice.key in FIELDS else "filters",
        ) from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise TableRefused(
            "malformed_parameter",
            'the body is not JSON; send an object such as {"breakdowns": ["SEX", "AGE.H"]}',
            "body",
        ) from None
    if not isinstance(data, dict):
        raise TableRefused(
            "malformed_parameter", 'the body must be a JSON object such as {"breakdowns": ["SEX"]}', "body"
        )
    for key in data:
        _named(key, "body")
    unknown = [key for key in data if key not in FIELDS]
    if unknown:
        raise TableRefused(
            "unknown_parameter",
            f"field {shown(unknown[0])} is not known; use {', '.join(FIELDS)}",
            unknown[0][:SHOWN],
        )
    breakdowns = data.get("breakdowns")
    if not isinstance(breakdowns, list) or not all(isinstance(b, str) for b in breakdowns):
        raise TableRefused(
            "malformed_parameter",
            'breakdowns must be a list of breakdown ids (strings), e.g. ["SEX", "AGE.H"]',
            "breakdowns",
        )
    filters = {} if data.get("filters") is None else data["filters"]
    if not isinstance(filters, dict) or not all(isinstance(c, str) for c in filters.values()):
        raise TableRefused(
            "malformed_parameter", 'filters must be an object of breakdown id to code (strings), e.g. {"SEX": "1"}',
            "filters",
        )  # fmt: skip
    checked = {_id(bid, "filters"): _code(code, "filters") for bid, code in _capped(list(filters.items()), "filters")}
    population = _one_id(_string(data.get("population", "total"), "population"), "population")
    mean = data.get("mean")
    mean = None if mean is None else _one_id(_string(mean, "mean"), "mean")
    per_area = data.get("per_area", False)
    if not isinstance(per_area, bool):
        raise TableRefused("malformed_parameter", "per_area must be true or false", "per_area")
    return _query(breakdowns, population, checked, mean, "breakdowns", per_area)


def _flag(value: str, name: str) -> bool:
    """``true`` or ``false`` (as a URL parameter)."""
    if value not in ("true", "false"):
        raise TableRefused("malformed_parameter", f"{name} must be true or false, not {shown(value)}", name)
    return value == "true"


def _query(
    breakdowns: list[str], population: str, filters: dict[str, str], mean: str | None, name: str, per_area: bool = False
) -> TableQuery:
    """The checked query: breakdowns present, capped, each a well-formed id given once."""
    if not breakdowns:
        raise TableRefused("empty_parameter", "breakdowns is empty; give at least one breakdown id, e.g. SEX", name)
    ids = [_id(b, name) for b in _capped(breakdowns, name)]
    twice = next((b for i, b in enumerate(ids) if b in ids[:i]), None)
    if twice is not None:
        raise TableRefused("repeated_parameter", f"breakdown {shown(twice)} is given twice; cross it once", name)
    return TableQuery(breakdowns=ids, population=population, filters=filters, mean=mean, per_area=per_area)


def _split(value: str) -> list[str]:
    """Comma-separated ids; an empty part (``A,,B``, a leading or trailing comma) is refused."""
    parts = value.split(",")
    if any(not p for p in parts):
        what = "is empty" if not value else f"{shown(value)} has an empty part"
        raise TableRefused(
            "empty_parameter" if not value else "malformed_parameter",
            f"breakdowns {what}; separate breakdown ids by single commas, e.g. SEX,AGE.H",
            "breakdowns",
        )
    return parts


def _filters(values: list[str]) -> dict[str, str]:
    """``BREAKDOWN:CODE`` filters, each breakdown once."""
    filters: dict[str, str] = {}
    for value in _capped(values, "filter"):
        bid, colon, code = value.partition(":")
        if not colon:
            raise TableRefused(
                "malformed_parameter", f"filter {shown(value)} has no colon; write it as BREAKDOWN:CODE, e.g. SEX:1",
                "filter",
            )  # fmt: skip
        bid, code = _id(bid, "filter"), _code(code, "filter")
        if bid in filters:
            raise TableRefused(
                "repeated_parameter",
                f"breakdown {shown(bid)} is filtered twice; restrict it to one code (ask one table per code)",
                "filter",
            )
        filters[bid] = code
    return filters


def _named(name: str, where: str) -> None:
    """Refuse a parameter or field without a name (a stray ``=``, ``&=`` or ``"": ...``)."""
    if not name:
        raise TableRefused(
            "malformed_parameter", f"the {where} has a parameter without a name (a stray '=' or \"\"); remove it", where
        )


def _format(value: str) -> str:
    if value not in FORMATS:
        raise TableRefused(
            "malformed_parameter", f"format {shown(value)} is not known; use {', '.join(FORMATS)}", "format"
        )
    return value


def _capped(values: list[Any], name: str) -> list[Any]:
    cap = MAX_BREAKDOWNS if name == "breakdowns" else MAX_FILTERS
    if len(values) > cap:
        raise TableRefused(
            "too_many_values", f"{name} has {len(values):,} values but at most {cap} are read; give fewer", name
        )
    return values


def _one_id(value: str, name: str) -> str:
    if not value:
        raise TableRefused("empty_parameter", f"{name} is empty; give an id or leave {name} out", name)
    return _id(value, name)


def _string(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise TableRefused("malformed_parameter", f"{name} must be a string id, not {type(value).__name__}", name)
    return value


def _id(value: str, name: str) -> str:
    return _text(value, name, "an id", MAX_ID)


def _code(value: str, name: str) -> str:
    return _text(value, name, "a code", MAX_CODE)


def _text(value: str, name: str, what: str, cap: int) -> str:
    """``value`` if it is a non-empty, printable string of at most ``cap`` characters."""
    if not value:
        raise TableRefused("empty_parameter", f"{name} has an empty id or code; give {what}", name)
    if len(value) > cap:
        raise TableRefused(
            "parameter_too_long",
            f"{name} has {what} of {len(value):,} characters, starting {value[:SHOWN]!r}; at most {cap} are read",
            name,
        )
    if not value.isprintable():
        raise TableRefused(
            "malformed_parameter", f"{name} has {what} with a control character ({shown(value)}); remove it", name
        )
    return value


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(key)


def _unique_pairs(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out
