"""No unprotected release: every cube needs a protection step and the release a disclosure gate.

A cube is protected when a pre-tabular step (swapping changes the microdata every cube is
tabulated from) or a post-tabular step of a protecting method applies to it; the identity step
protects nothing. A disclosure gate is a bound on published small values: ``gates.forbidden_values``
or ``gates.max_small_cells_unchanged``. A config that must publish otherwise says why in
``allow_unprotected``, which the manifest and the audit record carry.

The problems are found when the config loads (located by key and line) and kept on the release;
:func:`require_protection` refuses a release that has any, before any data is read, and the publish
step calls it again.
"""

from __future__ import annotations

from collections.abc import Callable

from cubeguard.config.models import ReleaseConfig
from cubeguard.errors import ConfigError
from cubeguard.methods.base import CubeMethod
from cubeguard.methods.registry import CUBE_METHODS, CubeStepSpec, method_of

KeyPath = tuple[str | int, ...]
_HOW = 'or set allow_unprotected: "<reason>" at the top level'


def protection_problems(cfg: ReleaseConfig, add: Callable[[KeyPath, str], None]) -> None:
    """Report, through ``add``, each cube without a protection step and a missing disclosure gate."""
    if cfg.allow_unprotected:
        return
    for i, cube in enumerate(cfg.hypercubes):
        if not cfg.pre_tabular and last_protection(cfg, cube.id) is None:
            add(
                ("hypercubes", i),
                f"cube '{cube.id}' would be published unprotected: no protection step applies to it; "
                f"add one to steps (e.g. cell_key) {_HOW}",
            )
    gates = cfg.gates
    for i, pre in enumerate(cfg.pre_tabular):
        promised = getattr(method_of(pre), "forbids", ())
        if missing := sorted(set(promised) - set(gates.forbidden_values)):
            add(
                ("pre_tabular", i),
                f"step {pre.name!r} promises that no table holds a count of {', '.join(map(str, promised))}; "
                f"add {missing} to gates.forbidden_values so the gate blocks a release that breaks the promise",
            )
    if not gates.forbidden_values and gates.max_small_cells_unchanged is None and gates.max_recovered_by_attack is None:
        add(
            ("gates",),
            "no disclosure gate is configured; set gates.max_recovered_by_attack (e.g. 0), gates.forbidden_values "
            f"(e.g. [1, 2]) or gates.max_small_cells_unchanged {_HOW}",
        )


def require_protection(release: object) -> None:
    """Refuse a release whose config leaves a cube unprotected or ungated (exit 2, nothing read or written).

    Raises:
        ConfigError: listing every such problem, located in the config.
    """
    unprotected = list(getattr(release, "unprotected", ()))
    if unprotected:
        raise ConfigError(getattr(release, "path"), unprotected)  # noqa: B009


def last_protection(cfg: ReleaseConfig, cube_id: str) -> CubeStepSpec | None:
    """The last post-tabular step that protects cube ``cube_id`` (the identity step does not), or None."""
    found = [s for _, s in cfg.steps_for(cube_id) if CUBE_METHODS[s.method].protects]
    return found[-1] if found else None


def additive_cubes(cfg: ReleaseConfig) -> frozenset[str]:
    """The cubes published additive, on which the additivity gate blocks.

    A cube that no protecting post-tabular step changes publishes the counts tabulated from the
    (perhaps changed) microdata, so it is additive; otherwise its last protecting step decides
    (a later identity step changes nothing).
    """
    out = set()
    for cube in cfg.hypercubes:
        last = last_protection(cfg, cube.id)
        if last is None or _publishes_additive(last):
            out.add(cube.id)
    return frozenset(out)


def _publishes_additive(step: object) -> bool:
    method = method_of(step)
    return isinstance(method, CubeMethod) and method.additive(step)
