"""Protection steps of a release config, turned into functions from cube to protected cube.

Each step is declared in the config (``steps:``); secret parameters are resolved here, at run
time, and never leave this module except inside the built p-table (whose repr hides them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import xarray as xr

from cubeguard.ckm.perturb import perturb_cube
from cubeguard.ckm.ptable import PTable, PTableParams, create_cnt_ptable
from cubeguard.ckm.ptable_io import read_ptable
from cubeguard.config.models import CellKeyStep, IdentityStep, StepSpec
from cubeguard.config.secrets import SecretReader, resolve_number
from cubeguard.errors import InternalError

CubeStep = Callable[[xr.Dataset], xr.Dataset]


def build_step(spec: StepSpec, where: str, prefect_reader: SecretReader | None = None) -> CubeStep:
    """The cube function of one configured step; ``where`` names it in errors (e.g. ``steps[0]``)."""
    if isinstance(spec, IdentityStep):
        return _identity
    if isinstance(spec, CellKeyStep):
        return _cell_key(spec, where, prefect_reader)
    raise InternalError(f"no implementation for step method {spec.method!r}")


def _identity(cube: xr.Dataset) -> xr.Dataset:
    """Publish counts unchanged (the noise-free path, which must be exact)."""
    return cube.assign(noise=cube["count"] * 0)


@functools.lru_cache(maxsize=16)
def _ptable(params: PTableParams) -> PTable:
    """The p-table of ``params``, built once per process (cubes protected one by one reuse it)."""
    return create_cnt_ptable(params)


def _cell_key(spec: CellKeyStep, where: str, reader: SecretReader | None) -> CubeStep:
    if spec.ptable_file is not None:
        ptable = read_ptable(spec.ptable_file)
    else:
        assert spec.D is not None and spec.V is not None  # guaranteed by the model validator
        params = PTableParams(
            D=int(resolve_number(spec.D, f"{where}.D", reader)),
            V=float(resolve_number(spec.V, f"{where}.V", reader)),
            js=spec.js,
            pstay=None if spec.pstay is None else float(resolve_number(spec.pstay, f"{where}.pstay", reader)),
            optim=spec.optim,
            mono=spec.mono,
        )
        ptable = _ptable(params)

    def step(cube: xr.Dataset) -> xr.Dataset:
        return perturb_cube(cube, ptable)

    return step
