"""The grid of a parameter sweep: one post-tabular step method and the parameter sets to try.

A grid file (YAML) names the step ``method`` (any method of the release config's ``steps:``),
``base`` parameters shared by every set and either ``vary`` (parameter -> values, expanded as a
cartesian product: keys in file order, the last key changing fastest) or an explicit list of
``sets`` (each merged over ``base``). ``cubes`` picks a subset of the release's cubes (default:
all); ``risk`` and ``utility`` name the measures drawn on the R-U map, as measures-table keys
``<key>@<scope>`` of :mod:`cubeguard.measures.table` (``small_origin_risk@cube``, the default,
``hellinger@interior``, ``rad@GEO.M*SEX``; a key alone means its interior scope, or the cube for
the cube-only keys).

Every set is validated up front by building the real step model (e.g.
:class:`~cubeguard.config.models.CellKeyStep`); every problem of the file is reported at once as
``<key path> (<file> line N): <what to change>``, as for release configs. Messages name sets by
their place in the file (``vary.D[1]``), never by their values: D and V are secret ("generally not published", Wilak et al. 2024).

Example::

    method: cell_key
    base: {js: 2}
    vary: {D: [4, 8], V: [3, 5]}     # 4 sets: (4, 3), (4, 5), (8, 3), (8, 5)
    risk: small_origin_risk@cube     # the default (how sure a published value hides a 1 or 2)
    utility: hellinger@interior
"""

from __future__ import annotations

import difflib
import itertools
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cubeguard.config.load import Problems  # the release config's wording
from cubeguard.config.yamlmap import KeyPath, LocatedYaml, load_yaml
from cubeguard.errors import ConfigError
from cubeguard.gates.attack import RECOVERED_COLUMN
from cubeguard.measures.table import DEFAULT_MEASURES, MEASURE_KEYS, MeasureSpec
from cubeguard.methods.registry import CUBE_METHODS, UNION_TAGS
from cubeguard.methods.validation import explain, meant_errors

#: Step models by method name: every registered post-tabular method.
STEP_MODELS: dict[str, type[BaseModel]] = {name: m.model for name, m in CUBE_METHODS.items()}
#: Keys of a step that are not parameters of a set.
_RESERVED = {
    "method": "give the method once, as the grid's top-level 'method'",
    "name": "sets are named by their parameters; remove 'name'",
    "cubes": "choose cubes with the grid's top-level 'cubes'; a set applies to all of them",
}
#: The risk an attack measures (small cells recovered with certainty, :mod:`cubeguard.attack`), as ``risk:``.
ATTACK_KEY = RECOVERED_COLUMN.partition("@")[0]
DEFAULT_RISK = "small_origin_risk@cube"  # small_cells_unchanged is 0 by design for js = 2 and rounding
DEFAULT_UTILITY = "hellinger@interior"


class SweepGridError(ConfigError):
    """A grid file (or its parameter sets) with one or more problems; ``problems`` lists them all."""


def measure_column(text: str) -> str:
    """The measures-table column ``text`` names (``key`` alone: its interior, or cube-only keys' cube).

    Raises:
        ValueError: with what to change, if the key is unknown or does not exist on the scope.
    """
    key, at, scope = text.strip().partition("@")
    if key == ATTACK_KEY and scope in ("", "cube"):
        return RECOVERED_COLUMN
    if key not in MEASURE_KEYS:
        close = difflib.get_close_matches(key, list(MEASURE_KEYS), n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(MEASURE_KEYS)}"
        raise ValueError(f"unknown measure {key!r}; {hint}")
    where = MEASURE_KEYS[key][1]
    if not at:
        scope = "cube" if where == "cube" else "interior"
    parts = scope.split("*")
    if not scope or any(not p.strip() for p in parts):
        raise ValueError(f"scope {scope!r} is empty; write <measure>@interior, @cube or @DIM1*DIM2")
    if where == "cube" and scope != "cube":
        raise ValueError(f"{key!r} exists only on the whole cube; write {key}@cube")
    if where == "table" and scope == "cube":
        raise ValueError(f"{key!r} is not computed on the whole cube; use @interior or a margin")
    if where == "two-way" and scope == "cube":
        raise ValueError(f"{key!r} needs two dimensions; use a margin @DIM1*DIM2 (or @interior of a two-way cube)")
    if where == "two-way" and scope != "interior" and len(parts) != 2:
        raise ValueError(f"{key!r} needs a two-way margin; name two dimensions, @DIM1*DIM2")
    return f"{key}@{scope}"


def column_scope(column: str) -> str | tuple[str, ...]:
    """The :class:`MeasureSpec` scope of a measures-table column (``"interior"``, ``"cube"`` or dims)."""
    scope = column.partition("@")[2]
    return scope if scope in ("interior", "cube") else tuple(scope.split("*"))


class SweepGrid(BaseModel):
    """A grid file as written: the step method, base parameters, what varies, cubes and R-U axes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    base: dict[str, Any] = Field(default_factory=dict)
    vary: dict[str, list[Any]] | None = None
    sets: list[dict[str, Any]] | None = Field(default=None, min_length=1)
    cubes: list[str] | None = Field(default=None, min_length=1)
    risk: str = DEFAULT_RISK
    utility: str = DEFAULT_UTILITY

    @field_validator("method")
    @classmethod
    def _known_method(cls, value: str) -> str:
        if value not in STEP_MODELS:
            close = difflib.get_close_matches(value, list(STEP_MODELS), n=2)
            hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(STEP_MODELS)}"
            raise ValueError(f"unknown step method {value!r}; {hint}")
        return value

    @field_validator("vary")
    @classmethod
    def _values_given(cls, value: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
        for key, values in (value or {}).items():
            if not values:
                raise ValueError(f"vary.{key} lists no value; give at least one")
            seen = [_canonical(v) for v in values]
            again = [i for i, s in enumerate(seen) if s in seen[:i]]
            if again:
                first = seen.index(seen[again[0]])
                raise ValueError(f"vary.{key}[{first}] and vary.{key}[{again[0]}] are equal; list each value once")
        return value

    @field_validator("cubes")
    @classmethod
    def _distinct_cubes(cls, value: list[str] | None) -> list[str] | None:
        twice = [c for i, c in enumerate(value or []) if c in (value or [])[:i]]
        if twice:
            raise ValueError(f"cube {twice[0]!r} is listed twice; list each cube once")
        return value

    @field_validator("risk", "utility")
    @classmethod
    def _measure(cls, value: str) -> str:
        return measure_column(value)

    @model_validator(mode="after")
    def _vary_or_sets(self) -> SweepGrid:
        if self.vary is not None and self.sets is not None:
            raise ValueError("give either 'vary' (a cartesian product) or 'sets' (an explicit list), not both")
        both = sorted(set(self.base) & set(self.vary or {}))
        if both:
            raise ValueError(f"parameter {both[0]!r} is both in 'base' and 'vary'; keep it in one of them")
        return self


@dataclass(frozen=True)
class ParameterSet:
    """One parameter set of a grid, validated as its step model.

    Attributes:
        number: 1-based position in the grid's (deterministic) order.
        name: the parameters that differ between sets, e.g. ``D=4 V=3`` (holds secrets: internal only).
        where: where the set comes from in the grid file, e.g. ``vary.D[0], vary.V[1]`` (no values).
        home: the key path its problems are reported at (``vary``, ``sets[i]`` or ``base``).
        params: the set's parameters as written, base merged in (may hold secret references).
        step: the validated step model (e.g. :class:`~cubeguard.config.models.CellKeyStep`).
    """

    number: int
    name: str = field(repr=False)
    where: str
    home: KeyPath
    params: Mapping[str, Any] = field(repr=False)
    step: BaseModel = field(repr=False)


@dataclass(frozen=True)
class Grid:
    """A validated grid: the file's model and its expanded parameter sets."""

    spec: SweepGrid
    sets: tuple[ParameterSet, ...]
    source: LocatedYaml

    @property
    def file(self) -> Path:
        """The grid file (for messages)."""
        return self.source.file

    def measure_spec(self) -> MeasureSpec:
        """The measures computed per set and cube: the defaults and the R-U axes, interior and cube scopes."""
        axes = [c for c in (self.spec.risk, self.spec.utility) if c != RECOVERED_COLUMN]
        wanted = (MEASURE_KEYS[c.partition("@")[0]][0] for c in axes)
        measures = tuple(dict.fromkeys((*DEFAULT_MEASURES, *wanted)))
        scopes = tuple(dict.fromkeys(("interior", "cube", *(column_scope(c) for c in axes))))
        return MeasureSpec(measures=measures, scopes=scopes)  # type: ignore[arg-type]  # scopes come from column_scope

    def error(self, items: list[tuple[KeyPath, str]]) -> SweepGridError:
        """One error listing ``(key path, message)`` problems, located in the grid file."""
        found = Problems(self.source)
        for path, message in items:
            found.add(path, message)
        return SweepGridError(self.file, found.items)


def load_grid(file: Path | str) -> Grid:
    """Read and validate a grid file; raise :class:`SweepGridError` listing every problem."""
    file = Path(file).resolve()
    return parse_grid(load_yaml(file))


def grid_from_mapping(data: Mapping[str, Any], name: str = "grid") -> Grid:
    """A grid from data already in memory (no line numbers in messages); ``name`` stands for the file."""
    return parse_grid(LocatedYaml(dict(data), Path(name)))


def parse_grid(source: LocatedYaml) -> Grid:
    """Validate located grid data: the file's keys, then every expanded set as its step model."""
    problems = Problems(source)
    if not isinstance(source.data, dict):
        raise SweepGridError(
            source.file, [f"(top level) ({source.file.name}): the grid must be a YAML mapping of keys"]
        )
    try:
        spec = SweepGrid.model_validate(source.data)
    except ValidationError as exc:
        for loc, err in meant_errors(exc, UNION_TAGS):
            problems.add(loc, _say(err))
        # Go on with the sets if only the other keys are wrong, so that every problem is reported.
        sets_only = {k: v for k, v in source.data.items() if k in ("method", "base", "vary", "sets")}
        try:
            spec = SweepGrid.model_validate(sets_only)
        except ValidationError:
            raise SweepGridError(source.file, problems.items) from None
    base_dir = source.file.parent
    sets: list[ParameterSet] = []
    seen: dict[str, str] = {}
    for number, (where, own) in enumerate(_expand(spec), start=1):
        label = ", ".join(_dotted(p) for p in where) or "base"
        home = _home(where)
        reserved: list[KeyPath] = [("base", k) for k in spec.base if k in _RESERVED]
        reserved += [(p[:2] if p[0] == "vary" else p) for k, p in own.items() if k in _RESERVED]
        for path in reserved:
            problems.add(path, _RESERVED[str(path[-1])])
        own = {k: p for k, p in own.items() if k not in _RESERVED}
        params = {k: v for k, v in spec.base.items() if k not in _RESERVED} | {
            k: _value(spec, p) for k, p in own.items()
        }
        step = _validate_set(spec.method, params, own, f"set {number} ({label})", home, problems, base_dir)
        key = _canonical(params)
        if key in seen:
            problems.add(home, f"set {number} ({label}) repeats set {seen[key]}; list each set once")
            continue
        seen[key] = f"{number} ({label})"
        if step is not None:
            sets.append(ParameterSet(number, "", label, home, params, step))
    if problems.items:
        raise SweepGridError(source.file, list(dict.fromkeys(problems.items)))
    return Grid(spec, _named(sets, spec), source)


def _expand(spec: SweepGrid) -> list[tuple[list[KeyPath], dict[str, KeyPath]]]:
    """Per set: its source paths and, per own parameter, the path of its value (base not included)."""
    if spec.sets is not None:
        return [([("sets", i)], {k: ("sets", i, k) for k in s}) for i, s in enumerate(spec.sets)]
    if spec.vary:
        keys = list(spec.vary)
        out: list[tuple[list[KeyPath], dict[str, KeyPath]]] = []
        for combo in itertools.product(*(range(len(spec.vary[k])) for k in keys)):
            paths: dict[str, KeyPath] = {k: ("vary", k, i) for k, i in zip(keys, combo, strict=True)}
            out.append((list(paths.values()), paths))
        return out
    return [([], {})]


def _home(where: list[KeyPath]) -> KeyPath:
    """Where a whole set is reported: its ``sets[i]`` entry, ``vary`` for a product, else ``base``."""
    if not where:
        return ("base",)
    return where[0] if where[0][0] == "sets" else ("vary",)


def _value(spec: SweepGrid, path: KeyPath) -> Any:
    if path[0] == "sets":
        assert spec.sets is not None
        return spec.sets[int(path[1])][str(path[2])]
    assert spec.vary is not None
    return spec.vary[str(path[1])][int(path[2])]


def _validate_set(
    method: str,
    params: dict[str, Any],
    own: dict[str, KeyPath],
    label: str,
    home: KeyPath,
    problems: Problems,
    base_dir: Path,
) -> BaseModel | None:
    model = STEP_MODELS[method]
    data = {"method": method, **_resolve_paths(model, params, base_dir)}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        unions: set[KeyPath] = set()
        for loc, err in meant_errors(exc, UNION_TAGS):
            if loc != tuple(err["loc"]):  # a union (number or secret reference): its first branch says enough
                if loc in unions:
                    continue
                unions.add(loc)
            key = str(loc[0]) if loc else None
            if key is not None and key in own:
                path: KeyPath = (*own[key], *loc[1:])
            elif key is not None and key in params:
                path = ("base", *loc)
            else:
                path = home
            if err["type"] == "extra_forbidden" and key is not None:
                known = [f for f in model.model_fields if f not in _RESERVED]
                close = difflib.get_close_matches(key, known, n=2)
                hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(known) or '(none)'}"
                problems.add(path[:2] if path[0] == "vary" else path, f"unknown parameter {key!r} of {method}; {hint}")
            elif key is None or key not in params:
                problems.add(path, f"{label}: {_say(err)}")
            else:
                problems.add(path, _say(err))
        return None


def _resolve_paths(model: type[BaseModel], params: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """Path-typed parameters (e.g. ``ptable_file``) relative to the grid file, as in release configs."""
    out = dict(params)
    for key, value in params.items():
        info = model.model_fields.get(key)
        if info is not None and isinstance(value, str) and Path in (info.annotation, *typing.get_args(info.annotation)):
            out[key] = str((base_dir / value).resolve())
    return out


def _named(sets: list[ParameterSet], spec: SweepGrid) -> tuple[ParameterSet, ...]:
    """Give each set a readable, unique name from the parameters that sets set themselves."""
    keys = list(spec.vary or {}) if spec.sets is None else list(dict.fromkeys(k for s in spec.sets for k in s))
    named = []
    used: set[str] = set()
    for s in sets:
        name = " ".join(f"{k}={_show(s.params[k])}" for k in keys if k in s.params) or f"set {s.number}"
        if name in used:
            name = f"{name} #{s.number}"
        used.add(name)
        named.append(ParameterSet(s.number, name, s.where, s.home, s.params, s.step))
    return tuple(named)


def _show(value: Any) -> str:
    if isinstance(value, dict) and len(value) == 1:
        ((kind, ref),) = value.items()
        return f"{kind}:{ref}"
    return "null" if value is None else str(value)


def _say(err: Any) -> str:
    """The release config's wording of a validation error (no "change the value" after a question)."""
    text: str = explain(err)
    return text.removesuffix("; change the value") if str(err["msg"]).rstrip().endswith("?") else text


def _dotted(path: KeyPath) -> str:
    """``("vary", "D", 1)`` -> ``vary.D[1]`` (as the release config's messages name keys)."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
