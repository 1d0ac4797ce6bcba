"""One valid step of every registered method, its distinctive secrets, and the bad values its model must refuse.

The contracts in ``test_method_contracts.py`` run every method through these; a method added to
the registry without an entry here fails ``test_every_registered_method_has_a_sample_and_a_distinctive_value_for_each_secret``.
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from typing import Any

import annotated_types as at
import numpy as np
import xarray as xr
from pydantic import BaseModel, Strict
from pydantic.fields import FieldInfo

from cubeguard.methods.base import CubeMethod, Method
from cubeguard.methods.models import secret_fields
from cubeguard.methods.registry import BY_NAME
from cubeguard.testing.cubes import build_cube, flat_tree, two_level_tree
from cubeguard.testing.tiny import CELL_KEY_STEP, TINY_CONFIG

#: A valid step of each method as its YAML mapping (without ``method``), loadable in TINY_CONFIG and,
#: for a cube method, runnable on :func:`hierarchical_cube`. A second sample of a method sets other
#: flags (random rounding with summed margins is additive and not cellwise).
SAMPLES: dict[str, list[dict[str, Any]]] = {
    "identity": [{}],
    "cell_key": [{"D": 5, "V": 3, "js": 2}],
    "conventional_rounding": [{"base": 5}],
    "controlled_rounding": [{"base": 3, "steps": 2}],  # a three-way table may have no 1-step rounding
    "random_rounding": [{"base": 3}, {"base": 3, "margins": "summed"}],
    "semi_controlled_rounding": [{"base": 3}],
    "small_cell_adjustment": [{"base": 3}],
    "barnardisation": [{"p": 0.3}],
    "stochastic_perturbation": [{"diagonal": 0.6, "band": 2}],
    "targeted_swap": [{"hierarchy": ["region"], "similar": [["sex"]], "seed": 1}],
    "random_swap": [{"swap_columns": ["region"], "swap_rate": 0.1, "seed": 2}],
    "ons_household_swap": [
        {
            "hierarchy": ["region"],
            "household_size": "hsize",
            "risk_variables": ["sex", "age"],
            "risk_thresholds": [0.1],
            "seed": 3,
        },
    ],
    "ons_communal_swap": [
        {
            "rate_a": 0.05,
            "rate_b": 0.1,
            "rate_c": 0.2,
            "family_rate": 0.1,
            "risk_variables": ["sex"],
            "hierarchy": ["region"],
            "score_area": "region",
            "unique_area": "region",
            "family_area": "region",
            "delivery_group": "dg",
            "seed": 4,
        },
    ],
    "safe": [{"seed": 3}],
}

#: Values of every secret field no repr or manifest may show: long digit strings that no other
#: field, default or name holds, each valid for its field (rates in [0, 1], ordered where the
#: model orders them).
DISTINCTIVE: dict[str, dict[str, Any]] = {
    "identity": {},
    "cell_key": {"D": 918273, "V": 4.0918273, "pstay": 0.0918273},
    "conventional_rounding": {},
    "controlled_rounding": {},
    "random_rounding": {"seed": 918273645},
    "semi_controlled_rounding": {"seed": 918273645},
    "small_cell_adjustment": {"seed": 918273645},
    "barnardisation": {"p": 0.0918273, "seed": 918273645},
    "stochastic_perturbation": {"diagonal": 0.0918273, "band": 87, "seed": 918273645},
    "targeted_swap": {"swap_rate": 0.0918273, "k_anonymity": 918273, "seed": 918273645},
    "random_swap": {"swap_rate": 0.0918273, "seed": 918273645},
    "ons_household_swap": {"swap_rate": 0.0918273, "risk_thresholds": [0.0456789], "seed": 918273645},
    "ons_communal_swap": {
        "rate_a": 0.0123457,
        "rate_b": 0.0234568,
        "rate_c": 0.0345679,
        "family_rate": 0.0456789,
        "seed": 918273645,
    },
    "safe": {"seed": 918273645},
}


@dataclass(frozen=True)
class Sample:
    """One sample step of a method: the method, its YAML mapping and the test id."""

    method: Method
    mapping: dict[str, Any]
    id: str

    def step(self, **changes: Any) -> Any:
        """The validated step model (``changes`` override the sample's values)."""
        return self.method.model.model_validate({"method": self.method.name} | self.mapping | changes)


def samples(cube_only: bool = False) -> list[Sample]:
    """Every sample, in registry order; ids are method names (``name/key=value`` for a second sample)."""
    out = []
    for name, mappings in SAMPLES.items():
        method = BY_NAME[name]
        if cube_only and not isinstance(method, CubeMethod):
            continue
        for k, mapping in enumerate(mappings):
            extra = {key: v for key, v in mapping.items() if key not in mappings[0]}
            label = name if k == 0 else name + "/" + ",".join(f"{key}={v}" for key, v in extra.items())
            out.append(Sample(method, mapping, label))
    return out


# --- config texts ---------------------------------------------------------------------------------


def section(method: Method) -> str:
    """The config key a method's steps are listed under."""
    return "steps" if isinstance(method, CubeMethod) else "pre_tabular"


def release_text(method: Method, mapping: dict[str, Any]) -> tuple[str, int]:
    """TINY_CONFIG with one step of ``method`` (block style, one key a line) instead of its cell key step.

    Returns the text and the line of the step's ``method:`` key; its ``i``-th key is on the ``i``-th
    line after it. A step that protects nothing (identity) is followed by the cell key step, so
    every cube is protected; a pre-tabular step replaces the post-tabular steps.
    """
    block = f"  - method: {method.name}\n" + "".join(f"    {k}: {json.dumps(v)}\n" for k, v in mapping.items())
    if not isinstance(method, CubeMethod):
        text = TINY_CONFIG.replace("steps:\n" + CELL_KEY_STEP, "pre_tabular:\n" + block)
    else:
        text = TINY_CONFIG.replace(CELL_KEY_STEP, block + ("" if method.protects else CELL_KEY_STEP))
    assert text != TINY_CONFIG
    return text, text[: text.index(block)].count("\n") + 1


# --- what a model must refuse ---------------------------------------------------------------------

_SKIPPED = {"method", "name", "cubes", "report_cubes"}


def _plain(v: Any) -> str:
    """A bound as pydantic's message prints it (0.0 as 0, 1e9 as 1000000000)."""
    return str(int(v)) if float(v).is_integer() else str(v)


def _numeric(info: FieldInfo) -> tuple[type, list[Any]] | None:
    """The number type of a scalar field and its bounds, looking inside a union with references or None."""
    if info.annotation in (int, float):
        return info.annotation, list(info.metadata)
    for arg in typing.get_args(info.annotation):
        if arg in (int, float) and any(isinstance(m, at.Ge | at.Gt | at.Le | at.Lt) for m in info.metadata):
            return arg, list(info.metadata)
        if typing.get_origin(arg) is typing.Annotated:
            base, *meta = typing.get_args(arg)
            if base in (int, float):
                return base, [m for f in meta for m in (f.metadata if isinstance(f, FieldInfo) else [f])]
    return None


def _choices(values: tuple[Any, ...]) -> str:
    shown = [repr(v) for v in values]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


#: A reference where a public number belongs.
PUBLIC_REF = {"env": "PUBLIC"}


def refusals(model: type[BaseModel]) -> dict[str, list[tuple[Any, str]]]:
    """For each scalar field: values its declared constraints refuse, each with the problem it must give.

    Read from the model (and pinned in :data:`REFUSED`, so a constraint added, loosened or dropped
    shows as a failing test): a bound below and above (``ge``, ``gt``, ``le``, ``lt``), YAML's ``true`` for a strict integer
    (it must not pass as 1), a reference for a public number (only secrets may be read from one),
    and a value outside a ``Literal``.
    """
    out: dict[str, list[tuple[Any, str]]] = {}
    secrets = secret_fields(model)
    for key, info in model.model_fields.items():
        if key in _SKIPPED:
            continue
        bad: list[tuple[Any, str]] = []
        if typing.get_origin(info.annotation) is typing.Literal:
            bad.append(("no-such-option", f"input should be {_choices(typing.get_args(info.annotation))}"))
        if (numeric := _numeric(info)) is not None:
            kind, meta = numeric
            step = 1 if kind is int else 0.5
            for m in meta:
                if isinstance(m, at.Ge):
                    bad.append((m.ge - step, f"input should be greater than or equal to {_plain(m.ge)}"))
                elif isinstance(m, at.Gt):
                    bad.append((m.gt, f"input should be greater than {_plain(m.gt)}"))
            for m in meta:
                if isinstance(m, at.Le):
                    bad.append((m.le + step, f"input should be less than or equal to {_plain(m.le)}"))
                elif isinstance(m, at.Lt):
                    bad.append((m.lt, f"input should be less than {_plain(m.lt)}"))
            if kind is int and any(isinstance(m, Strict) and m.strict for m in meta):
                bad.append((True, "input should be a valid integer"))
            if key not in secrets:  # a public number is never read from a reference
                bad.append((PUBLIC_REF, "input should be a valid " + ("integer" if kind is int else "number")))
        if bad:
            out[key] = [(v, msg + "; change the value") for v, msg in bad]
    return out


#: What each method's model must refuse, pinned: :func:`refusals` reads it from the model, and the
#: contract compares the two, so a bound loosened or dropped fails a test (``REF``: a reference
#: where a public number belongs).
REF = PUBLIC_REF
REFUSED: dict[str, dict[str, list[Any]]] = {
    "identity": {},
    "cell_key": {"D": [-1], "V": [0.0], "js": [-1, REF], "pstay": [0.0, 1.0], "optim": ["no-such-option"]},
    "conventional_rounding": {"base": [0, 1_000_000_001, True, REF]},
    "controlled_rounding": {
        "base": [1, 1_000_000_001, True, REF],
        "steps": [0, 101, True, REF],
        "stop": ["no-such-option"],
        "time_limit_s": [0, 86400.5, REF],
        "partition_above_cells": [-1, 1_000_000_001, True, REF],
        "block_cells": [9, 10_000_001, True, REF],
        "fallback": ["no-such-option"],
    },
    "random_rounding": {"base": [0, 1_000_000_001, True, REF], "margins": ["no-such-option"], "seed": [-1]},
    "semi_controlled_rounding": {"base": [0, 1_000_000_001, True, REF], "control_depth": [-1, True, REF], "seed": [-1]},
    "small_cell_adjustment": {"base": [1, 1_000_000_001, True, REF], "seed": [-1]},
    "barnardisation": {"p": [0.0, 1.0], "seed": [-1]},
    "stochastic_perturbation": {
        "cap": [0, 101, True, REF],
        "diagonal": [0.0, 1.0],
        "band": [0, 101],
        "control_depth": [-1, True, REF],
        "rounding": ["no-such-option"],
        "tolerance": [0.0, REF],
        "cycles": [0, 100_001, True, REF],
        "seed": [-1],
    },
    "targeted_swap": {"swap_rate": [-0.5, 1.5], "k_anonymity": [-1], "risk_threshold": [-0.5, REF]},
    "random_swap": {"unit": ["no-such-option"], "swap_rate": [-0.5, 1.0]},
    "ons_household_swap": {"swap_rate": [-0.5, 1.5], "high_risk_weight": [0.5, REF], "max_area_share": [0.0, 1.5, REF]},
    "ons_communal_swap": {
        "rate_a": [-0.5, 1.5],
        "rate_b": [-0.5, 1.5],
        "rate_c": [-0.5, 1.5],
        "family_rate": [-0.5, 1.5],
        "child_age": [-1, 151, REF],
        "staff_round_up_score": [0, REF],
        "family_rounding": ["no-such-option"],
    },
    "safe": {
        "correction_steps": [-1, 19, True, REF],
        "window": [0, 65, True, REF],
        "time_limit": [0, 86400.5, REF],
        "max_tightenings": [-1, 100_001, True, REF],
    },
}


# --- cubes ----------------------------------------------------------------------------------------

#: The key scale tabulation stamps on a cube whose record-key sums are binary keys.
KEY_SCALE = "2^64"
#: The hierarchies of :func:`hierarchical_cube`.
DIMS = {"GEO": two_level_tree("G", 2, 3), "SEX": flat_tree("S", "M", "F"), "AGE": two_level_tree("A", 2, 2)}


def hierarchical_cube(seed: int = 5) -> xr.Dataset:
    """A small cube with a two-level GEO, a two-level AGE and SEX: small counts (many below any base), zeros, keys."""
    rng = np.random.default_rng(seed)
    shape = (6, 2, 4)
    counts = rng.integers(0, 8, shape) * (rng.random(shape) > 0.2)
    keys = rng.integers(0, 2**64, shape, dtype=np.uint64)
    return build_cube(DIMS, counts, keys).assign_attrs(key_scale=KEY_SCALE, cube_id="contract")
