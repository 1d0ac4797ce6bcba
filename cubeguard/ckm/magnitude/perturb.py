"""Perturbation of magnitude cells, bit for bit as R cellKey 1.0.2 (``.perturb_cell_flex``/``_simple``).

Each cell's noise is the sum of ``top_k`` components (Gießing 2016, PSD 2016; Handbook on SDC v2,
5.4 and 5.7). Component j scales its magnitude ``x_j`` to ``x_delta``: 1 below the separation
point ``zs`` (then the ``small_cells`` table), ``x_j * p_small`` below the flex point (cellKey
applies no epsilon there, Q3), else ``x_j * m(|x_j|) * epsilon_j``; simple parameters use
``x_j * p * epsilon_j``. If ``|x_delta|`` exceeds the running value ``xo``, ``x_delta := xo``
("rescaling"), and if the rescaled magnitude falls below ``zs`` the component is skipped
(``zero_pert``; flex: from the second component on; simple: always). The noise ``v`` is looked up
with ``a = |xo / x_delta|`` (:mod:`.lookup`), and ``x_hat = sign(xo) |x_delta| sign(v) (mu + |v|)``
never takes a value across 0. The published value is ``sum + R sum(x_hat)`` (long double).

Where cellKey stops with "missing value where TRUE/FALSE needed" because ``a = 0/0`` (Q6: simple
parameters, a non-zero key and a sum of 0; Q7: a component after one that clamped the value to
0 with ``zs = 0``) cubeguard skips the component (``x_hat = 0``, mode ``undefined``), as cellKey
does itself for a component after a clamp when ``zs > 0``: the value stays where it is.
A cell whose key is exactly 0 is left unperturbed; cellKey publishes 0 for it even if its sum is
not 0 (possible only when the record keys sum to an integer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numba import njit

from cubeguard.ckm.magnitude._rnum import r_sum_rows
from cubeguard.ckm.magnitude.cells import MagnitudeCells
from cubeguard.ckm.magnitude.keys import scramble_keys
from cubeguard.ckm.magnitude.lookup import UNDEFINED, KernelTable, kernel_table, lookup_v
from cubeguard.ckm.magnitude.params import FlexParams, MagnitudeParams
from cubeguard.ckm.magnitude.ptable import TYPES, NumPTable, Separation, separation
from cubeguard.ckm.magnitude.topk import stored_counts
from cubeguard.errors import CubeguardError

BRANCHES = ("zero_cell", "small_cells", "below_fp", "flex", "simple")
_SMALL = TYPES.index("small_cells")
_STEP_FIELDS = (
    "x_delta",
    "a",
    "a_capped",
    "v",
    "row_low",
    "row_up",
    "lam",
    "v_low",
    "v_up",
    "x_hat",
    "xo_before",
    "xo_after",
)


class MagnitudeInputError(CubeguardError):
    """Cell arrays that do not fit together or do not fit the parameters."""


@dataclass(frozen=True, eq=False)
class MagnitudeResult:
    """Perturbed sums and what every component did (arrays of (cells,) or (cells, top_k)).

    Attributes:
        perturbed: published sums (cellKey's ``pws``).
        pert: ``perturbed`` minus the sum, as cellKey's ``pert``: R ``sum`` of ``x_hat``.
        n_used: components per cell (cellKey's ``length(x)``, also for cells returned early).
        returned_early: cells left unperturbed without a lookup (key 0; flex: also sum 0). cellKey
            publishes 0 for them; cubeguard publishes the sum, which is the same unless a cell
            with a non-zero sum has a key of exactly 0 (deviation, so that an identity p-table
            gives every sum back).
        n_stored: contributions stored per cell (cellKey 1.0.2's fewer with ``topk: cellkey_1_0_2``).
        keys: the component keys (cellKey's ``ckey``).
        x: magnitude of each component before rescaling (NaN beyond ``n_used``).
        branch: how ``x_delta`` was formed, index into :data:`BRANCHES`.
        first_lookup: the table type before separation (``all``, ``even`` or ``odd``).
        lookup: the table type used, index into ``TYPES``.
        rescaled: ``|xo| < |x_delta|``, so ``x_delta := xo``.
        zero_pert: the component was skipped (below ``zs`` after rescaling).
        mode: lookup mode, index into ``lookup.MODES`` (``undefined`` = cellKey's 0/0 stop).
        steps: per-component ``x_delta``, ``a``, ``a_capped``, ``v``, ``row_low``/``row_up``
            (0-based file rows, -1 if none), ``lam``, ``v_low``, ``v_up``, ``x_hat``,
            ``xo_before``, ``xo_after``.
        mu: the ``mu_c`` applied (0 if the cell is not sensitive).
        separation: the separation point used.
    """

    perturbed: npt.NDArray[np.float64]
    pert: npt.NDArray[np.float64]
    n_used: npt.NDArray[np.int64]
    returned_early: npt.NDArray[np.bool_]
    n_stored: npt.NDArray[np.int64]
    keys: npt.NDArray[np.float64]
    x: npt.NDArray[np.float64]
    branch: npt.NDArray[np.int8]
    first_lookup: npt.NDArray[np.int8]
    lookup: npt.NDArray[np.int8]
    rescaled: npt.NDArray[np.bool_]
    zero_pert: npt.NDArray[np.bool_]
    mode: npt.NDArray[np.int8]
    steps: dict[str, npt.NDArray[np.float64]]
    mu: npt.NDArray[np.float64]
    separation: Separation


def perturb_magnitudes(
    cells: MagnitudeCells,
    params: MagnitudeParams,
    ptable: NumPTable,
    sensitive: npt.ArrayLike | None = None,
) -> MagnitudeResult:
    """Perturb the sums of ``cells`` with the cell key method for magnitudes (cellKey 1.0.2).

    Args:
        cells: the tabulated cells (:func:`~cubeguard.ckm.magnitude.cells.tabulate_magnitudes`);
            in cellKey's cell order if ``params.topk`` is ``cellkey_1_0_2``.
        params: the parameters (``ck_params_nums``).
        ptable: the numeric p-table with its ``all`` or ``even``/``odd`` rows and optional
            ``small_cells`` rows.
        sensitive: cells that get ``mu_c`` (cellKey's ``special_protection``); default none.

    Raises:
        MagnitudeInputError: the arrays have different lengths.
        NumPTableError: even/odd tables with ``top_k > 1``.
    """
    inputs = _Inputs.of(cells, params, ptable, sensitive)
    n = cells.sums.size
    out = _Buffers.empty(n, params.top_k)
    inputs.run(cells.sums, out.ints, out.floats, out.floats[_STEP_FIELDS.index("x_hat")], True)
    x_hat = np.nan_to_num(out.floats[_STEP_FIELDS.index("x_hat")], nan=0.0)
    pert = r_sum_rows(x_hat)
    early = out.ints[0, :, 0] == 0
    return MagnitudeResult(
        perturbed=cells.sums + pert,  # pert is 0 where the loop returned early
        pert=pert,
        n_used=inputs.n_used,
        returned_early=early,
        n_stored=inputs.n_stored,
        keys=inputs.keys,
        x=inputs.x,
        branch=out.ints[0].astype(np.int8),
        first_lookup=inputs.first.astype(np.int8),
        lookup=out.ints[1].astype(np.int8),
        rescaled=out.ints[2] == 1,
        zero_pert=out.ints[3] == 1,
        mode=out.ints[4].astype(np.int8),
        steps=dict(zip(_STEP_FIELDS, out.floats, strict=True)),
        mu=inputs.mu,
        separation=inputs.sep,
    )


def perturbed_sums(
    cells: MagnitudeCells, params: MagnitudeParams, ptable: NumPTable, sensitive: npt.ArrayLike | None = None
) -> npt.NDArray[np.float64]:
    """:attr:`MagnitudeResult.perturbed` of :func:`perturb_magnitudes`, bit for bit, without the intermediate values.

    For serving: writing every intermediate value of every cell cost more than the perturbation.
    """
    inputs = _Inputs.of(cells, params, ptable, sensitive)
    x_hat = np.full((cells.sums.size, params.top_k), np.nan)
    none = np.empty((1, 1, 1), dtype=np.int64)
    inputs.run(cells.sums, none, none.astype(np.float64), x_hat, False)
    return cells.sums + r_sum_rows(np.nan_to_num(x_hat, nan=0.0))


@dataclass(frozen=True, eq=False)
class _Inputs:
    """What the per-cell loop reads, from the cells and the parameters."""

    sep: Separation
    n_stored: npt.NDArray[np.int64]
    x: npt.NDArray[np.float64]
    n_used: npt.NDArray[np.int64]
    keys: npt.NDArray[np.float64]
    first: npt.NDArray[np.int64]
    mu: npt.NDArray[np.float64]
    params: MagnitudeParams
    table: KernelTable

    @classmethod
    def of(
        cls, cells: MagnitudeCells, params: MagnitudeParams, ptable: NumPTable, sensitive: npt.ArrayLike | None
    ) -> _Inputs:
        sep = separation(params, ptable)
        n = cells.sums.size
        flags = np.zeros(n, dtype=bool) if sensitive is None else np.asarray(sensitive, dtype=bool)
        _check_lengths(cells, flags)
        n_stored = stored_counts(cells.counts, params.topk)
        x, n_used = _magnitudes(cells, params, n_stored)
        keys = scramble_keys(cells.keys if params.use_zero_rkeys else cells.keys_nz, params.top_k, params.same_key)
        parity = "all" not in ptable.types()
        first = np.where(cells.counts % 2 == 0, TYPES.index("even"), TYPES.index("odd")) if parity else np.zeros(n)
        mu = np.where(flags, params.mu_c, 0.0)
        return cls(sep, n_stored, x, n_used, keys, first.astype(np.int64), mu, params, kernel_table(ptable))

    def run(
        self,
        sums: npt.NDArray[np.float64],
        ints: npt.NDArray[np.int64],
        floats: npt.NDArray[np.float64],
        x_hat: npt.NDArray[np.float64],
        record: bool,
    ) -> None:
        """The per-cell loop: ``x_hat`` per component, and with ``record`` every intermediate value."""
        mult = self.params.mult
        flex = isinstance(mult, FlexParams)
        coefficients = np.array(
            [mult.fp, mult.p_small, mult.p_large, mult.q]
            if isinstance(mult, FlexParams)
            else [np.inf, mult.p, mult.p, 1.0]
        )
        _kernel(
            sums, self.x, self.n_used, self.keys, self.first, self.mu, flex, coefficients,
            np.asarray(mult.epsilon, dtype=np.float64), self.sep.zs, self.table, ints, floats, x_hat, record,
        )  # fmt: skip


def mean_before_sum(perturbed: npt.ArrayLike, sums: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Means before sums, cellKey's ``numtab(mean_before_sum = TRUE)``: ``p * (p / sum)``; NaN where the sum is 0."""
    p = np.asarray(perturbed, dtype=np.float64)
    s = np.asarray(sums, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s == 0.0, np.nan, p * (p / s))


def _check_lengths(cells: MagnitudeCells, sensitive: npt.NDArray[np.bool_]) -> None:
    n = cells.sums.size
    arrays = {
        "counts": cells.counts, "top": cells.top, "n_top": cells.n_top, "means": cells.means,
        "spreads": cells.spreads, "keys": cells.keys, "keys_nz": cells.keys_nz, "sensitive": sensitive,
    }  # fmt: skip
    wrong = [name for name, a in arrays.items() if a.shape[:1] != (n,)]
    if wrong:
        raise MagnitudeInputError(f"{', '.join(wrong)} must have one entry per cell ({n} sums); check the tabulation.")


def _magnitudes(
    cells: MagnitudeCells, params: MagnitudeParams, n_stored: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """``x`` per cell and component (cellKey's ``w_vals``, ``w_mean``, ``w_sum`` or ``w_spread``)."""
    k = params.top_k
    n = cells.sums.size
    if params.type == "top_contr":
        used = np.maximum(np.minimum(n_stored, k), 1)
        x = np.where(np.arange(k) < used[:, None], cells.top[:, :k], np.nan)
        return np.where(np.isnan(x) & (np.arange(k) < used[:, None]), 0.0, x), used
    column = {"mean": cells.means, "sum": cells.sums, "range": cells.spreads}[params.type]
    return column.reshape(n, 1).astype(np.float64), np.ones(n, dtype=np.int64)


@dataclass(frozen=True)
class _Buffers:
    ints: npt.NDArray[np.int64]  # branch, lookup, rescaled, zero_pert, mode
    floats: npt.NDArray[np.float64]  # _STEP_FIELDS

    @classmethod
    def empty(cls, n: int, k: int) -> _Buffers:
        ints = np.full((5, n, k), -1, dtype=np.int64)
        return cls(ints, np.full((len(_STEP_FIELDS), n, k), np.nan))


@njit(nogil=True, cache=True, error_model="numpy")
def _para_m(x: float, p_sm: float, p_lg: float, fp: float, q: float) -> float:  # pragma: no cover - compiled
    """The flex function, cellKey's ``.para_m``, in R's order of operations (R's ``^`` is ``x * x`` for q = 2)."""
    f1 = ((p_sm * x) - (p_lg * fp)) / (p_lg * fp)
    base = (2.0 * fp) / (fp + x)
    f2 = base * base if q == 2.0 else base**q
    return p_lg * (1.0 + (f1 * f2))


@njit(nogil=True, cache=True, error_model="numpy")
def _kernel(
    sums: np.ndarray,  # (n,)
    x: np.ndarray,  # (n, k)
    n_used: np.ndarray,  # (n,)
    keys: np.ndarray,  # (n, k)
    first: np.ndarray,  # (n,) table type before separation
    mu: np.ndarray,  # (n,)
    flex: bool,
    c: np.ndarray,  # fp, p_small (p), p_large (p), q
    eps: np.ndarray,  # (k,)
    zs: float,
    table: KernelTable,
    ints: np.ndarray,  # (5, n, k), written only with ``record``
    floats: np.ndarray,  # (len(_STEP_FIELDS), n, k), written only with ``record``
    xhat: np.ndarray,  # (n, k) each component's x_hat
    record: bool,
) -> None:  # pragma: no cover - compiled
    """The per-cell loop of ``.perturb_cell_flex`` / ``.perturb_cell_simple``."""
    found = np.empty(7)
    for cell in range(sums.shape[0]):
        cv = sums[cell]
        if keys[cell, 0] == 0.0 or (flex and cv == 0.0):
            xhat[cell, 0] = 0.0
            if record:
                ints[0, cell, 0] = 0
                ints[1, cell, 0] = first[cell]
                floats[0, cell, 0] = 1.0
                floats[10, cell, 0] = cv
                floats[11, cell, 0] = cv
            continue
        xo = cv
        for j in range(n_used[cell]):
            x_hat = _component(
                cell, j, xo, x[cell, j], keys[cell, j], first[cell], mu[cell], flex, c, eps[j], zs, table, found,
                ints, floats, record,
            )  # fmt: skip
            xhat[cell, j] = x_hat
            xo = xo + x_hat


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _component(
    cell: int,
    j: int,
    xo: float,
    xj: float,
    ck: float,
    kind: int,
    mu: float,
    flex: bool,
    c: np.ndarray,
    eps: float,
    zs: float,
    table: KernelTable,
    found: np.ndarray,
    ints: np.ndarray,
    floats: np.ndarray,
    record: bool,
) -> float:  # pragma: no cover - compiled
    """One noise component: x_delta, rescaling, lookup; returns x_hat (golden README 5.6-5.7).

    With ``record`` every intermediate value is written to ``ints`` and ``floats``.
    """
    x_delta, kind, branch, rescaled, zero_pert = x_delta_of(xo, xj, kind, flex, c[0], c[1], c[2], c[3], eps, zs, j > 0)
    mode = -1
    x_hat = 0.0
    if not zero_pert:
        mode = lookup_v(kind, ck, abs(xo / x_delta), table, found)
        if mode != UNDEFINED:
            x_hat = x_hat_of(xo, x_delta, found[1], mu)
        if record:
            floats[1, cell, j] = abs(xo / x_delta)
            for f in range(7):
                floats[2 + f, cell, j] = found[f]
    if record:
        ints[0, cell, j], ints[1, cell, j], ints[2, cell, j], ints[3, cell, j], ints[4, cell, j] = (
            branch, kind, rescaled, zero_pert, mode,
        )  # fmt: skip
        floats[0, cell, j] = x_delta
        floats[10, cell, j] = xo
        floats[11, cell, j] = xo + x_hat
    return x_hat


# The component's arithmetic on scalars only: a compiled loop that calls ``lookup_v`` itself (the
# serving path, :mod:`.additive`) shares it without passing arrays through a nested inlined call,
# which cost it four times the work of the lookup.


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def x_delta_of(
    xo: float,
    xj: float,
    kind: int,
    flex: bool,
    fp: float,
    p_small: float,
    p_large: float,
    q: float,
    eps: float,
    zs: float,
    later: bool,
) -> tuple[float, int, int, bool, bool]:  # pragma: no cover - compiled
    """``x_delta``, the table type, the branch, ``rescaled`` and ``zero_pert`` of a component (``later``: not the first).

    Simple parameters come as ``fp = inf``, ``p_small = p_large = p``, ``q = 1``.
    """
    if abs(xj) < zs:
        x_delta, kind, branch = 1.0, _SMALL, 1
    elif not flex:
        x_delta, branch = xj * p_small * eps, 4
    elif abs(xj) < fp:
        x_delta, branch = xj * p_small, 2
    else:
        x_delta, branch = xj * _para_m(abs(xj), p_small, p_large, fp, q) * eps, 3
    rescaled = abs(xo) < abs(x_delta)
    zero_pert = False
    if rescaled:
        x_delta = xo
        if abs(xo / (p_small * eps)) < zs:
            x_delta, kind = 1.0, _SMALL
            zero_pert = later or not flex
    return x_delta, kind, branch, rescaled, zero_pert


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def x_hat_of(xo: float, x_delta: float, v: float, mu: float) -> float:  # pragma: no cover - compiled
    """``x_hat = sign(xo) |x_delta| sign(v) (mu + |v|)``, never across 0."""
    sign_xo = 1.0 if xo >= 0.0 else -1.0
    sign_v = 1.0 if v >= 0.0 else -1.0
    x_hat = sign_xo * abs(x_delta) * (sign_v * (mu + abs(v)))
    if sign_v == -1.0:
        x_hat = min(x_hat, -xo) if sign_xo == -1.0 else max(x_hat, -xo)
    return x_hat
