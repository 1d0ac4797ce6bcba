"""The means attack: published sums (hence means) beside published counts give the counts back.

A cell's sum ``m`` of a numeric column ``x`` over its ``n`` records lies in ``[n lo, n hi]`` when
every record's value lies in ``[lo, hi]``; a published sum ``m_hat`` within ``delta`` of ``m``
therefore bounds ``n``: ``n lo <= m_hat + delta`` and ``n hi >= m_hat - delta``. In a cell of
one single year of age (``lo = hi = a``) with an exact sum, ``n = m / a``: the leak of publishing a
mean as the exact sum over a perturbed count (Hundepool et al. 2024, Handbook on SDC v2, 5.7,
Tables 5.23 and 5.24: means must be computed from the sum "as it gets published", i.e. protected).
The attack intersects these intervals with the counts' published bounds and propagates them
through the cube's additivity as :mod:`~cubeguard.attack.feasibility` does, then scores the cube.

What the intruder knows of the sums (:class:`~cubeguard.attack.cells.SumView`):

* ``[lo, hi]`` per cell: the values the leaves of ``x``'s classification allow under the cell's
  code when the cube crosses ``x`` (a single year: ``lo = hi``; a band: its ends), else every value
  of the classification (the microdata schema admits no other); unbounded without a classification;
* ``delta`` per cell: :func:`noise_bound`, a bound on the perturbation of the cell key method for
  magnitudes (R cellKey's ``ck_params_nums``; Gießing 2016, "Computational issues in the design of
  transition probabilities and disclosure risk estimation for additive noise", PSD 2016, LNCS 9867)
  from its parameters, secret ones included, as the intruder is assumed to know them for the counts.

Only cubes that publish sums are attacked; a configuration check keeps a cube from summing a column
it crosses (:mod:`cubeguard.config.sums_check`), so in a release ``[lo, hi]`` is the column's whole
range and the attack tests that the perturbation leaves nothing certain.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from cubeguard.attack.cells import CubeView, SumView
from cubeguard.attack.intervals import UNBOUNDED, IntArray
from cubeguard.attack.score import AttackFacts, score
from cubeguard.attack.system import Bounder, Intervals, Limits, refine_targets, solve, start
from cubeguard.ckm.magnitude.params import FlexParams, MagnitudeParams

NAME = "means"
FloatArray = npt.NDArray[np.float64]
#: Relative slack on every quotient and bound, so floating point never narrows an interval past the truth.
SLACK = 1e-9


def attack(views: Sequence[CubeView], bounds: Mapping[str, Bounder | None], limits: Limits) -> list[AttackFacts]:
    """Each cube that publishes sums alone: its count bounds narrowed by its sums, propagated, then LPs."""
    deadline = time.monotonic() + limits.lp_seconds
    out: list[AttackFacts] = []
    for view in sorted((v for v in views if v.sums), key=lambda v: v.published.size):
        state = start([view], bounds)
        narrow(state, 0)
        solve(state, limits)
        refine_targets(state, limits, deadline)
        out.append(score(NAME, view, state.lo[0], state.hi[0]))
    return out


def narrow(state: Intervals, n: int) -> None:
    """Intersect the intervals of cube ``n`` of ``state`` with what each of its sums says of its counts."""
    for sums in state.views[n].sums:
        lo, hi = count_interval(sums)
        np.maximum(state.lo[n], lo, out=state.lo[n])
        np.minimum(state.hi[n], hi, out=state.hi[n])


def count_interval(sums: SumView) -> tuple[IntArray, IntArray]:
    """The counts ``n`` for which ``[n low, n high]`` meets ``[m_hat - delta, m_hat + delta]``, cell by cell.

    ``n low <= m_hat + delta`` bounds ``n`` above when ``low > 0`` (below when ``low < 0``);
    ``n high >= m_hat - delta`` bounds it below when ``high > 0`` (above when ``high < 0``). A sum
    that cannot be 0 needs a record. An empty cell (``n = 0``, sum 0) stays possible whenever
    ``0`` is within ``delta`` of the published sum. Bounds are rounded outwards with :data:`SLACK`.
    """
    low, high = np.broadcast_arrays(np.asarray(sums.low, dtype=np.float64), np.asarray(sums.high, dtype=np.float64))
    top = sums.published + sums.delta  # m <= top
    bottom = sums.published - sums.delta  # m >= bottom
    lo = np.zeros(sums.published.shape, dtype=np.float64)
    hi = np.full(sums.published.shape, float(UNBOUNDED))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lo = _raise(lo, high > 0, bottom / high)  # n >= bottom / high
        hi = _lower(hi, high < 0, bottom / high)  # n <= bottom / high
        hi = _lower(hi, low > 0, top / low)  # n <= top / low
        lo = _raise(lo, low < 0, top / low)  # n >= top / low
    lo = np.where((bottom > 0) | (top < 0), np.maximum(lo, 1.0), lo)  # a non-zero sum has a record
    return lo.astype(np.int64), np.minimum(hi, float(UNBOUNDED)).astype(np.int64)


def _raise(lo: FloatArray, where: npt.NDArray[np.bool_], bound: FloatArray) -> FloatArray:
    """``lo`` raised to ``ceil(bound)`` (less the slack) where ``where`` and ``bound`` is finite."""
    ok = where & np.isfinite(bound)
    value = np.ceil(bound - SLACK * np.maximum(1.0, np.abs(np.where(ok, bound, 0.0))))
    return np.where(ok, np.maximum(lo, value), lo)


def _lower(hi: FloatArray, where: npt.NDArray[np.bool_], bound: FloatArray) -> FloatArray:
    """``hi`` lowered to ``floor(bound)`` (plus the slack) where ``where`` and ``bound`` is finite."""
    ok = where & np.isfinite(bound)
    value = np.floor(bound + SLACK * np.maximum(1.0, np.abs(np.where(ok, bound, 0.0))))
    return np.where(ok, np.minimum(hi, np.maximum(value, 0.0)), hi)


def noise_bound(params: MagnitudeParams, vmax: float, unit: float, published: npt.ArrayLike, low: npt.ArrayLike,
                high: npt.ArrayLike, whole: tuple[float, float]) -> FloatArray:  # fmt: skip
    """A bound on ``|m - m_hat|`` per cell under the cell key method for magnitudes (:mod:`cubeguard.ckm.magnitude.perturb`).

    The noise is a sum of at most ``top_k`` components; component ``j`` is
    ``x_hat = sign(xo) |x_delta| sign(v) (mu + |v|)`` (clipped towards 0), with ``|v| <= vmax`` (the
    p-table's largest ``|v|``: interpolation takes a convex combination of two rows) and
    ``|x_delta| <= max(1, g_j(X))``: 1 in the small-cells branch (below the separation point, or a
    rescaled magnitude falling below it), else at most ``g_j(X)``, the largest percentage times
    magnitude over magnitudes up to ``X`` (:func:`_scaled`); rescaling only makes it smaller.
    ``X`` bounds the component's magnitude: ``max(|lo|, |hi|)`` of the cell for ``top_contr``
    (the column's whole range for ``topk: cellkey_1_0_2``, whose top values travel from cell to
    cell) and ``mean``, ``hi - lo`` for ``range``, and for ``sum`` the sum itself, bounded from
    ``m_hat`` by the linear bound of :func:`_linear`. Publishing to multiples of ``unit`` adds ``unit / 2``.

    Args:
        params: the magnitude parameters (``mu_c`` is added, though no cube cell is marked sensitive).
        vmax: the p-table's largest ``|v|``.
        unit: published sums are multiples of it.
        published: the published sums.
        low: each cell's smallest value of the column (broadcast against ``published``).
        high: each cell's largest value of the column.
        whole: the column's whole range.
    """
    m_hat = np.asarray(published, dtype=np.float64)
    lo, hi = (np.broadcast_to(np.asarray(a, dtype=np.float64), m_hat.shape) for a in (low, high))
    w = params.mu_c + vmax
    with np.errstate(invalid="ignore", over="ignore"):
        if params.type == "sum":
            k = w * _linear(params)
            x = (np.abs(m_hat) + unit / 2 + params.top_k * w) / (1.0 - k) if k < 1.0 else np.full(m_hat.shape, np.inf)
        elif params.type == "range":
            x = hi - lo
        elif params.type == "top_contr" and params.topk == "cellkey_1_0_2":
            x = np.full(m_hat.shape, max(abs(whole[0]), abs(whole[1])))
        else:
            x = np.maximum(np.abs(lo), np.abs(hi))
        x = np.where(np.isnan(x), np.inf, x)
        noise = sum((w * np.maximum(1.0, _scaled(params, j, x)) for j in range(params.top_k)), np.zeros(m_hat.shape))
    out = noise * (1.0 + SLACK) + unit / 2 + SLACK * np.abs(m_hat)
    return np.where(np.isnan(out), np.inf, out)  # e.g. p_large = 0 with an unbounded magnitude: no bound


def _scaled(params: MagnitudeParams, j: int, x: FloatArray) -> FloatArray:
    """``g_j(X)``: an upper bound of ``|x_delta|`` over every magnitude ``t <= X`` outside the small-cells branch.

    Simple parameters: ``X p epsilon_j``. Flex (cellKey applies no epsilon below the flex point):
    ``p_small min(X, fp)`` below ``fp``; above it ``t m(t) = p_large t + t (p_small t - p_large fp) / fp
    f2(t)`` with ``f2 = (2 fp / (fp + t))^q <= 1``, so ``t m(t) <= p_large t + h(t)`` with
    ``h(t) = p_small t^2 f2(t) / fp``, which rises up to ``t* = 2 fp / (q - 2)`` (for ``q > 2``; for
    ever when ``q <= 2``) and falls after: its largest value on ``[fp, X]`` is at
    ``min(X, max(t*, fp))``.
    """
    mult = params.mult
    eps = mult.epsilon[j]
    if not isinstance(mult, FlexParams):
        return x * mult.p * eps
    fp, ps, pl, q = mult.fp, mult.p_small, mult.p_large, mult.q
    below = ps * np.minimum(x, fp)
    peak = 2.0 * fp / (q - 2.0) if q > 2.0 else np.inf
    t = np.minimum(x, max(peak, fp))
    above = eps * (pl * x + ps * t * t / fp * (2.0 * fp / (fp + t)) ** q)
    return np.where(x >= fp, np.maximum(below, above), below)


def _linear(params: MagnitudeParams) -> float:
    """A percentage ``p`` with ``g_j(X) <= p X`` for every ``X`` and ``j`` (for magnitudes bounded by themselves).

    Flex: ``m(t) <= p_large + 2 p_small`` for ``t >= fp`` and ``q >= 1`` (``f1 f2 <= 2 p_small /
    p_large``), ``p_small`` below; simple: ``p``.
    """
    mult = params.mult
    if isinstance(mult, FlexParams):
        return mult.p_large + 2.0 * mult.p_small
    return mult.p
