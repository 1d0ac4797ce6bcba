"""Record keys in an exact, order-independent fixed-point representation.

The cell key method (Eurostat recommendation for the 2021 census; Wilak et al. 2024, Handbook on SDC v2 5.4)
needs the cell key ``ck = (sum of record keys) mod 1`` to be the same for the same set of records in
every cube, margin, chunk layout and Dask partitioning. Floating-point sums depend on summation order,
so cubeguard carries every record key as an unsigned 64-bit integer numerator over a fixed
denominator and sums those integers:

* ``binary`` keys (the default, and what R ``runif`` and numpy ``random`` produce): numerator
  ``key * 2**64``. Every double in ``[2**-11, 1)`` is a multiple of ``2**-64``, so the conversion is
  exact for all such keys; sums wrap modulo ``2**64`` in uint64 arithmetic, which *is* ``mod 1``.
* ``decimal`` keys with ``d`` digits (tau-ARGUS and cellKey's 8-digit keys): numerator
  ``round(key * 10**d)``; sums are exact while below ``2**64`` (at ``d = 8``: 1.8e11 records) and the
  cell key is ``(sum mod 10**d) / 10**d``, the correctly rounded double of the exact decimal value.

Integer addition is associative, so any order or chunking of the records gives bit-identical sums.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from numba import njit

_TWO64 = float(2**64)
_BELOW_ONE = float(np.nextafter(1.0, 0.0))


@dataclass(frozen=True)
class KeyScale:
    """How record keys are turned into uint64 numerators and back into cell keys.

    Attributes:
        kind: ``"binary"`` (denominator ``2**64``) or ``"decimal"`` (denominator ``10**digits``).
        digits: number of decimals for ``"decimal"`` keys; ignored for ``"binary"``.
    """

    kind: Literal["binary", "decimal"] = "binary"
    digits: int = 0

    def __post_init__(self) -> None:
        if self.kind == "decimal" and not 1 <= self.digits <= 18:
            raise ValueError("decimal record keys need 1 to 18 digits")

    @property
    def label(self) -> str:
        """A short, stable name stored with every cube (``"2^64"`` or ``"10^8"``)."""
        return "2^64" if self.kind == "binary" else f"10^{self.digits}"

    @classmethod
    def from_label(cls, label: str) -> KeyScale:
        """Inverse of :attr:`label`."""
        if label == "2^64":
            return cls()
        if label.startswith("10^"):
            return cls("decimal", int(label[3:]))
        raise ValueError(f"unknown key scale {label!r}; expected '2^64' or '10^d'")

    def to_fixed(self, keys: npt.ArrayLike) -> npt.NDArray[np.uint64]:
        """Convert record keys in [0, 1) to uint64 numerators, each by :func:`key_numerator`."""
        k = np.ascontiguousarray(keys, dtype=np.float64)
        out = np.empty(k.shape, dtype=np.uint64)
        _numerators(k.ravel(), *self.numerator_scale(), out.ravel())
        return out

    def numerator_scale(self) -> tuple[float, bool]:
        """The scale as :func:`key_numerator` reads it: the multiplier, and whether keys are decimal."""
        decimal = self.kind == "decimal"
        return (10.0**self.digits if decimal else _TWO64), decimal

    def cell_keys(self, key_sums: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Cell keys in [0, 1) from summed numerators: ``(sum mod denominator) / denominator``."""
        s = np.asarray(key_sums, dtype=np.uint64)
        if self.kind == "binary":
            out = np.empty(s.shape, dtype=np.float64)
            _binary_cell_keys(np.ascontiguousarray(s).ravel(), out.ravel())
            return out
        den = np.uint64(10**self.digits)
        return (s % den).astype(np.float64) / float(10**self.digits)

    def compiled(self) -> tuple[bool, np.uint64, float]:
        """The scale as :func:`cell_key` reads it: binary, and the decimal modulus and denominator."""
        digits = self.digits if self.kind == "decimal" else 0
        return self.kind == "binary", np.uint64(10**digits), float(10**digits)


@njit(nogil=True, cache=True, inline="always")
def key_numerator(key: float, scale: float, decimal: bool) -> np.uint64:  # pragma: no cover - compiled
    """One record key in [0, 1) as the integer numerator its cells sum: the one rule of cubes and tables.

    Binary keys: ``key * 2**64`` (exact, a power of two) truncated, i.e. the key's bits down to
    2**-64. Decimal keys: ``key * 10**d`` rounded to the nearest integer, halves to even, so a
    d-digit key whose product lands a hair off its integer gets that integer.
    """
    if decimal:
        return np.uint64(np.rint(key * scale))
    return np.uint64(key * scale)


@njit(nogil=True, cache=True)
def _numerators(keys: np.ndarray, scale: float, decimal: bool, out: np.ndarray) -> None:  # pragma: no cover
    for n in range(keys.shape[0]):
        out[n] = key_numerator(keys[n], scale, decimal)


@njit(nogil=True, cache=True)
def _binary_cell_keys(sums: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """:func:`binary_cell_key` of every sum."""
    for n in range(sums.shape[0]):
        out[n] = binary_cell_key(sums[n])


@njit(nogil=True, cache=True, inline="always")
def binary_cell_key(total: np.uint64) -> float:  # pragma: no cover - compiled
    """``total / 2**64`` rounded once: the two 32-bit halves are exact doubles, their sum rounds.

    Rounding to nearest can give exactly 1.0 for sums within 2**-54 of 1; those become the largest
    double below 1, so keys stay in [0, 1).
    """
    hi = np.float64(total >> np.uint64(32)) * 4294967296.0
    lo = np.float64(total & np.uint64(0xFFFFFFFF))
    ck = (hi + lo) / _TWO64
    return _BELOW_ONE if ck >= 1.0 else ck


@njit(nogil=True, cache=True, inline="always")
def cell_key(total: np.uint64, scale: tuple[bool, np.uint64, float]) -> float:  # pragma: no cover - compiled
    """:meth:`KeyScale.cell_keys` of one sum, for compiled loops (``scale`` from :meth:`KeyScale.compiled`)."""
    binary, modulus, denominator = scale
    if binary:
        return binary_cell_key(total)
    return np.float64(total % modulus) / denominator
