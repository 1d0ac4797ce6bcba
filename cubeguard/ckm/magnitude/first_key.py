"""The first component key of a cell in compiled code, bit for bit as :func:`.keys.scramble_keys`.

With one component (the additive types ``mean`` and ``sum``) cellKey 1.0.2's ``.scramble_ckeys``
keys the component with the cell key itself (``same_key``) or with ``as.numeric`` of
``as.character(ck)`` whose first decimal is moved to the end (:mod:`.keys`; Handbook on SDC v2,
5.4). numba has no long double, so both of R's conversions are done exactly in doubles:

* ``as.character`` (15 significant digits, correctly rounded, ties to even): ``ck * 10^q`` is
  split into an exact sum of two doubles (Dekker 1971, "A floating-point technique for extending
  the available precision", Numer. Math. 18; Veltkamp's split) and rounded to an integer from it.
* ``R_strtod`` reads the rotated digits exactly into a long double ``N`` and divides once by
  ``10^n``: the quotient is rounded to 64 bits, then to the 53 of a double (x87 double rounding).
  After cancelling a trailing zero both ``N`` and ``10^n`` are exact doubles (``N < 10^15``,
  ``n <= 17``), so ``y = N / 10^n`` in doubles is the correctly rounded quotient, and the exact
  remainder ``N - y 10^n`` (a double: Boldo and Daumas 2003, "Representable correcting terms for
  possibly underflowing floating point operations", ARITH 16) says whether the quotient lies within
  half a 64-bit unit of the midpoint between ``y`` and its neighbour. Only there does the double
  rounding differ: the 64-bit rounding gives the midpoint, and the tie goes to the even one.

Keys R writes otherwise take the reference (``exact`` is False): below 1e-4 (scientific notation,
whose rotation R reads with a long-double loop), one-decimal keys, and keys that round up to 1.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from numba import njit

from cubeguard.ckm.magnitude.keys import scramble_keys_reference

_POW10 = np.array([10.0**n for n in range(19)])  # 10^n is an exact double up to 10^22
_IPOW10 = np.array([10**n for n in range(19)], dtype=np.int64)
_SPLIT = 134217729.0  # 2^27 + 1, Veltkamp's constant for doubles
_LOWEST = 1e-4  # R writes keys below it in scientific notation (15 digits)


@njit(nogil=True, cache=True, inline="always")
def _two_product(a: float, b: float) -> tuple[float, float]:  # pragma: no cover - compiled
    """``a * b = p + e`` exactly (Dekker's product; no fused multiply-add needed)."""
    t = _SPLIT * a
    a_hi = t - (t - a)
    a_lo = a - a_hi
    t = _SPLIT * b
    b_hi = t - (t - b)
    b_lo = b - b_hi
    p = a * b
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


@njit(nogil=True, cache=True, inline="always")
def _significant(ck: float) -> tuple[np.int64, int]:  # pragma: no cover - compiled
    """``as.character(ck)`` for ``1e-4 <= ck < 1``: 15 significant digits (ties to even) and the decimal exponent.

    The exponent is guessed from doubles above the powers of ten (never too high); a guess one too
    low shows as 10^15 digits and is corrected.
    """
    exponent = -1 if ck >= 0.1 else (-2 if ck >= 0.01 else (-3 if ck >= 0.001 else -4))
    hi, lo = _two_product(ck, _POW10[14 - exponent])  # below 10^15 + 1: the fraction is exact
    whole = math.floor(hi)
    above_half = (hi - whole) - 0.5  # exact; the rest of ck * 10^q is lo
    digits = np.int64(whole)
    # rounded up above the half, and at the half to even (arithmetic: the comparison is a coin toss)
    digits += np.int64(above_half > -lo) | (np.int64(above_half == -lo) & digits)
    if digits == 10**15:
        return np.int64(10**14), exponent + 1
    return digits, exponent


@njit(nogil=True, cache=True, inline="always")
def _strtod(n: np.int64, power: int) -> float:  # pragma: no cover - compiled
    """``n / 10^power`` (``n < 2^53``, ``power <= 22``) rounded to 64 bits then to 53, as x87 ``R_strtod``.

    The double rounding differs from ``y`` only when the 64-bit rounding gives the midpoint and
    ``y`` is odd (the tie goes to the even one): then it is the neighbour on the quotient's side.
    """
    den = _POW10[power]
    y = n / den  # correctly rounded: both are exact doubles
    p, e = _two_product(y, den)
    rest = (n - p) - e  # n - y * den, exact
    bits = np.float64(y).view(np.uint64)
    ulp = np.uint64(((bits >> np.uint64(52)) - np.uint64(52)) << np.uint64(52)).view(np.float64)  # y is normal
    half = den * ulp * 0.5  # |quotient - y| * den at the midpoint
    slack = half * 2.0**-11  # half a 64-bit unit, times den; half -/+ slack are exact (den = 5^power 2^power)
    tie = np.uint64(half - slack <= abs(rest)) & np.uint64(abs(rest) <= half + slack) & bits  # odd y at a midpoint
    step = tie if rest > 0.0 else np.uint64(0) - tie  # no branch: y is odd half of the time
    return np.uint64(bits + step).view(np.float64)


@njit(nogil=True, cache=True, inline="always")
def first_key(ck: float, same_key: bool) -> tuple[float, bool]:  # pragma: no cover - compiled
    """The first component key of cell key ``ck`` and whether it is exact here (else: the reference)."""
    if same_key or ck == 0.0:
        return ck, True
    if not ck >= _LOWEST or not ck < 1.0:
        return np.nan, False
    digits, exponent = _significant(ck)
    if exponent >= 0:
        return np.nan, False
    significant = 15
    while significant > 1 and digits % 10 == 0:
        digits //= 10
        significant -= 1
    decimals = significant - exponent - 1
    scientific = (significant + 1 if significant > 1 else 1) + 4  # "d.ddde-0k"
    if 2 + decimals > scientific or decimals < 2:
        return np.nan, False
    if exponent < -1:  # "0.0ddd" -> "0.ddd0": the digits over 10^(decimals - 1)
        return _strtod(digits, decimals - 1), True
    head = _IPOW10[decimals - 1]
    lead = np.int64(digits / head)  # the first decimal (the quotient is >= 1e-14 below the next integer)
    return _strtod((digits - lead * head) * 10 + lead, decimals), True


@njit(nogil=True, cache=True)
def _first_keys(cell_keys: np.ndarray, same_key: bool, out: np.ndarray, exact: np.ndarray) -> None:  # pragma: no cover
    for n in range(cell_keys.size):
        out[n], exact[n] = first_key(cell_keys[n], same_key)


def first_keys(cell_keys: npt.ArrayLike, same_key: bool) -> npt.NDArray[np.float64]:
    """:func:`first_key` of every cell key, the rest from the reference: ``scramble_keys(keys, 1, same_key)[:, 0]``."""
    keys = np.ascontiguousarray(cell_keys, dtype=np.float64).ravel()
    out = np.empty(keys.size)
    exact = np.empty(keys.size, dtype=np.bool_)
    _first_keys(keys, same_key, out, exact)
    if not exact.all():
        out[~exact] = scramble_keys_reference(keys[~exact], 1, same_key)[:, 0]
    return out
