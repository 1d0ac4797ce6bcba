"""One total code for every variable: ``output.total_code`` renames each classification's root.

Classifications come with their own total codes (``0`` in the EU programme's files, ``_T`` in
SDMX code lists, ``Total`` from tau-ARGUS hierarchies); a publication wants one (issue 17: one
clean code per category). The root is renamed when the config loads, with the parents that name
it and the breakdowns that list it, so the stores, every export, the table service and the
report hold the same code.
"""

from __future__ import annotations

from collections.abc import Callable

from cubeguard.config.models import ReleaseConfig
from cubeguard.config.yamlmap import KeyPath
from cubeguard.cubes.spec import BreakdownSpec, CodeSpec, VariableSpec

__all__ = ["rename_totals"]

Add = Callable[[KeyPath, str], None]
Locate = Callable[[KeyPath], str]


def rename_totals(cfg: ReleaseConfig, add: Add, locate: Locate) -> ReleaseConfig:
    """``cfg`` with every variable's root code renamed to ``output.total_code`` (if set).

    A variable that already has a code other than its root spelled as the total code cannot be
    renamed: that is a problem at ``output.total_code`` naming the code's key. A variable with
    no root or several is left as it is (the classification check reports it).
    """
    total = cfg.output.total_code
    if total is None:
        return cfg
    if total != "".join(total.split()):
        add(("output", "total_code"), f"the total code {total!r} holds blanks; write it without them (e.g. _T)")
        return cfg
    variables = dict(cfg.variables)
    for name, spec in cfg.variables.items():
        roots = [c.code for c in spec.codes if c.parent is None]
        if len(roots) != 1 or roots[0] == total:
            continue
        clash = next((k for k, c in enumerate(spec.codes) if c.code == total), None)
        if clash is not None:
            add(
                ("output", "total_code"),
                f"{total!r} is already a code of variable {name}, at {locate(('variables', name, 'codes', clash))}; "
                "choose a total code no variable uses, or rename that code",
            )
            continue
        variables[name] = _renamed(spec, roots[0], total)
    return cfg.model_copy(update={"variables": variables})


def _renamed(spec: VariableSpec, old: str, new: str) -> VariableSpec:
    def code(c: CodeSpec) -> CodeSpec:
        update = {"code": new} if c.code == old else {"parent": new} if c.parent == old else {}
        return c.model_copy(update=update) if update else c

    def breakdown(b: BreakdownSpec) -> BreakdownSpec:
        if b.codes is None:
            return b
        return b.model_copy(update={"codes": [new if c == old else c for c in b.codes]})

    return spec.model_copy(
        update={
            "codes": [code(c) for c in spec.codes],
            "breakdowns": {bid: breakdown(b) for bid, b in spec.breakdowns.items()},
        }
    )
