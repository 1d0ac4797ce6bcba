"""Load a release config from YAML: validate everything, report every problem at once.

Each problem reads ``<key path> (<file> line N): <what to change>``; all are collected before one
:class:`ConfigError` is raised (Pandera-style lazy reporting), so a user fixes a config in one go.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cubeguard.config.hrc_codes import hrc_classification
from cubeguard.config.models import SCHEMA_VERSION, ReleaseConfig
from cubeguard.config.overrides import apply_overrides
from cubeguard.config.protection import protection_problems
from cubeguard.config.sdmx_check import check_sdmx
from cubeguard.config.sums_check import check_sums
from cubeguard.config.tables_check import check_tables
from cubeguard.config.total_code import rename_totals
from cubeguard.config.yamlmap import KeyPath, LocatedYaml, dotted, load_yaml
from cubeguard.cubes.hierarchy import Breakdown, build_classification, select_breakdown
from cubeguard.errors import ConfigError, CubeguardError  # ConfigError lives there so yamlmap can raise it
from cubeguard.methods.context import CheckContext, Numbers, Problem
from cubeguard.methods.models import MicrodataStep, StepModel
from cubeguard.methods.registry import UNION_TAGS, method_of
from cubeguard.methods.resolve import resolve
from cubeguard.methods.validation import explain
from cubeguard.methods.validation import problems as problems_of
from cubeguard.secrets import (
    EnvSecret,
    PrefectSecret,
    SecretInt,
    SecretNumber,
    SecretRef,
    SecretResolver,
    resolve_number,
)

_PATH_KEYS = (("input", "microdata"), ("input", "csv", "metadata"), ("output", "folder"), ("sdmx", "structure"))
# Stands in for codes that could not be read from a .hrc file: their problem is reported, and one
# root keeps validation from reporting the empty list at the same key a second time.
_UNREAD_CODES: tuple[dict[str, Any], ...] = ({"code": "Total"},)


@dataclass(frozen=True)
class Release:
    """A validated release config with its classifications resolved into breakdowns."""

    config: ReleaseConfig
    path: Path
    breakdowns: dict[str, Breakdown]
    config_hash: str
    #: The classification and ``.hrc`` files the config reads (their content is in ``config_hash``).
    sources: tuple[Path, ...] = ()
    #: Why the release may not be published as configured (cubes unprotected, no disclosure gate);
    #: :func:`cubeguard.config.protection.require_protection` refuses it.
    unprotected: tuple[str, ...] = ()
    #: For each variable whose codes come from a ``.hrc`` file: each code (but the total) with its
    #: spelling in the file, padding kept and no group prefix; ``cubeguard tau`` writes it back so.
    hrc_written: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)

    def cube(self, cube_id: str) -> Any:
        """The hypercube spec with this id."""
        return next(c for c in self.config.hypercubes if c.id == cube_id)


class Problems:
    """Problems found in a config, each located as ``key.path (file line N): message``."""

    def __init__(self, main: LocatedYaml) -> None:
        self.main = main
        self.files: dict[str, LocatedYaml] = {}  # variable name -> its classification file
        self.items: list[str] = []
        self.sources: list[Path] = []  # classification and .hrc files read
        self.written: dict[str, dict[str, str]] = {}  # variable name -> .hrc spelling of its codes
        self.overridden: list[str] = []  # keys set by overrides (--set): errors there name the override

    def add(self, path: KeyPath, message: str) -> None:
        """Record ``message`` at ``path``, located in the classification file when it came from one."""
        self.items.append(f"{self.locate(path)}: {message}")

    def locate(self, path: KeyPath) -> str:
        """``key.path (file line N)``, or ``key.path (--set key)`` for a key an override set."""
        name = dotted(path)
        for key in self.overridden:
            if name == key or name.startswith((f"{key}.", f"{key}[")):
                return f"{name} (--set {key})"
        doc, local = self.main, path
        if len(path) >= 2 and path[0] == "variables" and str(path[1]) in self.files:
            doc, local = self.files[str(path[1])], path[2:]
        line = doc.line_of(local)
        where = f"{doc.file.name} line {line}" if line else doc.file.name
        return f"{name} ({where})"


def load_release(
    file: Path | str, overrides: Mapping[str, Any] | None = None, resolver: SecretResolver | None = None
) -> Release:
    """Read, validate and resolve a release config; raise :class:`ConfigError` listing every problem.

    ``overrides`` set key paths (as errors print them, e.g. ``steps[0].js``) before validation.
    Every method's config-time check runs here, before any microdata is read; secrets given by
    reference are checked too where they resolve (environment variables, and secret blocks when
    ``resolver`` is given).
    """
    file = Path(file).resolve()
    main = load_yaml(file)
    problems = Problems(main)
    if not isinstance(main.data, dict):
        raise ConfigError(file, [f"(top level) ({file.name}): the config must be a YAML mapping of keys"])
    data = _inline_variable_files(main.data, file.parent, problems)
    if overrides:
        data, bad = apply_overrides(data, overrides)
        if bad:
            raise ConfigError(file, bad)
        problems.overridden = sorted(overrides, key=len, reverse=True)
    # The hash identifies the content (paths as written, relative to the config), not its location.
    digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()
    _resolve_paths(data, file.parent)
    _check_version(data, problems)
    cfg = _validate_models(data, problems)
    if cfg is None:
        raise ConfigError(file, problems.items)
    cfg = rename_totals(cfg, problems.add, problems.locate)
    breakdowns = _resolve_breakdowns(cfg, problems)
    _check_references(cfg, breakdowns, problems)
    _check_steps(cfg, breakdowns, problems, resolver)
    check_sums(cfg, breakdowns, problems.add)
    check_tables(cfg, breakdowns, problems.add)
    if not problems.items:  # SDMX names of cubes that are wrong already would repeat their problems
        check_sdmx(cfg, breakdowns, problems.add)
    if problems.items:
        raise ConfigError(file, problems.items)
    unprotected = Problems(main)
    unprotected.files = problems.files
    protection_problems(cfg, unprotected.add)
    return Release(cfg, file, breakdowns, digest, tuple(problems.sources), tuple(unprotected.items), problems.written)


def _inline_variable_files(data: dict[str, Any], base: Path, problems: Problems) -> dict[str, Any]:
    variables = data.get("variables")
    if not isinstance(variables, dict):
        return data
    out = dict(variables)
    for name, spec in variables.items():
        folder = base
        if isinstance(spec, dict) and set(spec) == {"file"}:
            path = (base / str(spec["file"])).resolve()
            try:
                sub = load_yaml(path, within=("variables", name))
            except ConfigError as exc:  # keys given twice, located in the classification file
                problems.items.extend(exc.problems)
                out.pop(name)
                continue
            except CubeguardError as exc:
                problems.add(("variables", name, "file"), f"{exc}")
                out.pop(name)
                continue
            problems.files[str(name)] = sub
            problems.sources.append(path)
            out[name] = spec = sub.data
            folder = path.parent
        if isinstance(spec, dict) and isinstance(spec.get("codes"), dict) and "hrc" in spec["codes"]:
            out[name] = {**spec, "codes": _hrc_codes(spec["codes"], folder, ("variables", name, "codes"), problems)}
    return {**data, "variables": out}


def _hrc_codes(ref: dict[str, Any], base: Path, where: KeyPath, problems: Problems) -> list[dict[str, Any]]:
    """Expand ``{hrc: file, total:, lead:, group_prefix:}`` into clean codes (:mod:`.hrc_codes`)."""
    try:
        read = hrc_classification(ref, base)
    except ValidationError as exc:  # a key of {hrc: ...}
        for loc, message in problems_of(exc, UNION_TAGS, _explain):
            problems.add((*where, *loc), message)
        return list(_UNREAD_CODES)
    except CubeguardError as exc:
        problems.add(where, f"{exc}".splitlines()[0])
        return list(_UNREAD_CODES)
    problems.sources.append(read.file)
    problems.written[str(where[1])] = read.written
    return read.codes


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    steps = data.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict) and isinstance(step.get("ptable_file"), str):
            step["ptable_file"] = str((base / step["ptable_file"]).resolve())
        magnitudes = step.get("magnitudes") if isinstance(step, dict) else None
        for spec in magnitudes.values() if isinstance(magnitudes, dict) else []:
            if isinstance(spec, dict) and isinstance(spec.get("ptable_file"), str):
                spec["ptable_file"] = str((base / spec["ptable_file"]).resolve())
    for keys in _PATH_KEYS:
        node: Any = data
        for k in keys[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(keys[-1]), str):
            node[keys[-1]] = str((base / node[keys[-1]]).resolve())


def _check_version(data: dict[str, Any], problems: Problems) -> None:
    v = data.get("schema_version")
    if v is not None and v != SCHEMA_VERSION:
        problems.add(
            ("schema_version",), f"this cubeguard reads schema_version {SCHEMA_VERSION}, not {v!r}; migrate the config"
        )


def _validate_models(data: dict[str, Any], problems: Problems) -> ReleaseConfig | None:
    try:
        return ReleaseConfig.model_validate(data)
    except ValidationError as exc:
        for loc, message in problems_of(exc, UNION_TAGS, _explain):
            problems.add(loc, message)
        return None


def _explain(err: Any) -> str:
    if err["type"] == "literal_error" and err["loc"] and err["loc"][-1] == "schema_version":
        return f"must be {SCHEMA_VERSION}"
    return explain(err)


def _resolve_breakdowns(cfg: ReleaseConfig, problems: Problems) -> dict[str, Breakdown]:
    out: dict[str, Breakdown] = {}
    owner: dict[str, str] = {}
    for name, spec in cfg.variables.items():
        cls, found = build_classification(name, spec)
        for path, msg in found:
            problems.add(("variables", name, *path), msg)
        if found:
            continue
        for bid, bspec in spec.breakdowns.items():
            if bid in owner:
                problems.add(
                    ("variables", name, "breakdowns", bid),
                    f"breakdown id {bid!r} is already defined by variable {owner[bid]}; rename one",
                )
                continue
            try:
                out[bid] = select_breakdown(bid, cls, bspec.depth, bspec.codes)
                owner[bid] = name
            except CubeguardError as exc:
                problems.add(("variables", name, "breakdowns", bid), str(exc))
    return out


def _check_references(cfg: ReleaseConfig, breakdowns: dict[str, Breakdown], problems: Problems) -> None:
    declared = {bid for spec in cfg.variables.values() for bid in spec.breakdowns}
    if cfg.input.household_ref is None:
        for name, pop in cfg.populations.items():
            if pop.unit == "households":  # without the flag every member would be counted: persons, not households
                problems.add(
                    ("populations", name, "unit"),
                    f"population {name!r} counts households, which needs the reference-person flag; name its "
                    "column in input.household_ref, or count persons",
                )
    ids: set[str] = set()
    for k, cube in enumerate(cfg.hypercubes):
        if cube.id in ids:
            problems.add(("hypercubes", k, "id"), f"hypercube id {cube.id!r} is used twice; ids must be unique")
        ids.add(cube.id)
        if cube.population not in cfg.populations:
            problems.add(("hypercubes", k, "population"), _unknown("population", cube.population, cfg.populations))
        columns = []
        for j, bid in enumerate(cube.breakdowns):
            if bid not in breakdowns:
                if bid not in declared:  # a declared but broken breakdown is reported at its variable
                    problems.add(("hypercubes", k, "breakdowns", j), _unknown("breakdown", bid, declared))
            else:
                columns.append(breakdowns[bid].column)
        dup = {c for c in columns if columns.count(c) > 1}
        if dup:
            problems.add(
                ("hypercubes", k, "breakdowns"),
                f"two breakdowns read column {sorted(dup)[0]!r}; a cube can use one level of a variable",
            )


def _check_steps(
    cfg: ReleaseConfig, breakdowns: Mapping[str, Breakdown], problems: Problems, resolver: SecretResolver | None
) -> None:
    """Each step's own checks (its method's ``check``), names and cube ids, before any data is read."""
    ids = frozenset(c.id for c in cfg.hypercubes)
    depths = {bid: max(b.depths) for bid, b in breakdowns.items()}
    for key, steps in (("pre_tabular", tuple(cfg.pre_tabular)), ("steps", tuple(cfg.steps))):
        names: dict[str, int] = {}
        for k, step in enumerate(steps):
            where: KeyPath = (key, k)
            if step.name in names:
                problems.add(
                    (*where, "name"),
                    f"name {step.name!r} is also used by {key}[{names[step.name]}]; "
                    "give each step its own name (it names the step's report)",
                )
            names.setdefault(step.name, k)
            for field in ("cubes", "report_cubes"):
                for j, cid in enumerate(getattr(step, field, None) or []):
                    if cid not in ids:
                        problems.add((*where, field, j), _unknown("hypercube", cid, ids))
            ctx = CheckContext(
                cube_ids=ids,
                steps=steps,
                index=k,
                number=_numbers(where, resolver, problems),
                household_id=cfg.input.household_id,
                person_id=cfg.input.person_id,
                breakdowns=frozenset(b for v in cfg.variables.values() for b in v.breakdowns),
                depths=depths,
            )
            for loc, message in _method_check(step, ctx):
                problems.add((*where, *loc), message)


def _method_check(step: StepModel, ctx: CheckContext) -> list[Problem]:
    """The method's checks on the step with every secret it can resolve now, then on its ids."""
    method = method_of(step)
    try:
        resolved = resolve(step, ctx.number)
        if isinstance(resolved, MicrodataStep):
            resolved = resolved.with_ids(ctx.household_id, ctx.person_id)
    except ValidationError as exc:
        return problems_of(exc, UNION_TAGS)
    found = method.check(resolved, ctx)
    seed = getattr(resolved, "seed", 0)
    if isinstance(resolved, MicrodataStep) and seed is None:
        found.append((("seed",), "this required key is missing; add it (a non-negative integer, secret)"))
    elif isinstance(seed, int | float) and (seed != int(seed) or seed < 0):
        found.append((("seed",), "the seed must be a non-negative integer; change the value"))
    return found


def _numbers(where: KeyPath, resolver: SecretResolver | None, problems: Problems) -> Numbers:
    """The secrets that resolve now: inline, set environment variables, secret blocks with a resolver.

    Other references stay as they are (a release resolves them all before it reads data, and each
    step checks them again when it runs); a reference that holds no number is a problem at its key.
    """

    def number(key: str, value: SecretNumber | SecretInt) -> float | SecretRef:
        if isinstance(value, PrefectSecret) and resolver is None:
            return value
        if isinstance(value, EnvSecret) and value.env not in os.environ:
            return value  # a release resolves every reference before it reads data
        try:
            return resolve_number(value, key, resolver)
        except CubeguardError as exc:
            problems.add((*where, key), str(exc).removeprefix(f"{key}: "))
            return value

    return number


def _unknown(what: str, name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, list(known), n=3)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(known)[:8])}"
    return f"unknown {what} {name!r}; {hint}"
