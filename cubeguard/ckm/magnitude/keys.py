"""Cell keys of the noise components: cellKey 1.0.2's ``.scramble_ckeys``.

Every component j = 1..top_k of a magnitude cell needs its own key (Handbook on SDC v2, 5.4;
Gießing 2016). cellKey derives them from the cell key's decimal string ``s = as.character(ck)``
(15 significant digits): with ``same_key`` the first key is ``as.numeric(s)`` (the cell key
rounded to 15 digits; with ``top_k = 1`` the cell key itself), otherwise ``"0." + s[4..L] + s[3]``
(the first decimal digit moved to the end; ``"0"`` if nothing follows it); each further key
rotates the previous one the same way, keeping at most L = nchar(s) characters. The strings are
read back with R's ``R_strtod``, which is not always correctly rounded (:mod:`._rnum`).
A key of 0 (a cell without contributors) stays 0. A cell key below 1e-4 is written in scientific
notation (``"1.23e-06"``) and cellKey rotates that string too (``"1.3e-062"``, then ``"1.e-0623"``,
i.e. 1.3e-62 and 0): reproduced as is, since those are the keys cellKey looks up. A third
rotation (``"1.-0623e"``) is NA in R and cellKey stops; here it is NaN and the component is
skipped (:mod:`.lookup`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from cubeguard.ckm.magnitude._rnum import r_as_character, r_pow10, r_strtod

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def scramble_key(ck: float, top_k: int, same_key: bool) -> list[float]:
    """The ``top_k`` component keys of one cell key, as cellKey's ``.scramble_ckeys``.

    >>> scramble_key(0.2906835649628192, 3, same_key=False)
    [0.906835649628192, 0.068356496281929, 0.68356496281929]
    >>> scramble_key(0.2906835649628192, 2, same_key=True)
    [0.290683564962819, 0.906835649628192]
    """
    if same_key and top_k == 1:
        return [ck]
    s = r_as_character(ck)
    length = len(s)
    if same_key:
        first = s
    else:
        rest = s[3:length]
        first = s[:2] + (rest if rest else "0") + s[2:3]
    strings = [first]
    for _ in range(1, top_k):
        prev = strings[-1]
        strings.append(s[:2] + prev[3:length] + prev[2:3])
    return [r_strtod(t) for t in strings]


def scramble_keys(cell_keys: npt.ArrayLike, top_k: int, same_key: bool) -> npt.NDArray[np.float64]:
    """Component keys of every cell, shape ``(cells, top_k)``, bit for bit as :func:`scramble_key`.

    Vectorised (:func:`_fixed_digits`, :func:`_rotated_keys`): a key written by ``as.character``
    in fixed notation with at least two decimals is a digit rotation, read back as R does. The
    rest - keys in scientific notation (below 1e-4), one-decimal keys, and the few whose 15th
    digit is too close to a tie for the long-double test - take :func:`scramble_keys_reference`;
    a key of 0 stays 0 in every component.
    ``same_key`` with ``top_k = 1`` returns the keys unchanged.
    """
    keys = np.asarray(cell_keys, dtype=np.float64).ravel()
    if same_key and top_k == 1:
        return keys.reshape(-1, 1).copy()
    digits, decimals, fast = _fixed_digits(keys)
    out = np.empty((keys.size, top_k), dtype=np.float64)
    out[fast] = _rotated_keys(digits[fast], decimals[fast], top_k, 0 if same_key else 1)
    zero = keys == 0.0  # "0" rotates to "00": 0 (most cells of a large table are empty)
    out[zero] = 0.0
    slow = ~fast & ~zero
    if slow.any():
        out[slow] = scramble_keys_reference(keys[slow], top_k, same_key)
    return out


def scramble_keys_reference(cell_keys: npt.ArrayLike, top_k: int, same_key: bool) -> npt.NDArray[np.float64]:
    """:func:`scramble_key` for every cell, one at a time (the reference of :func:`scramble_keys`)."""
    keys = np.asarray(cell_keys, dtype=np.float64).ravel()
    out = np.empty((keys.size, top_k), dtype=np.float64)
    cache: dict[float, list[float]] = {}
    for n, ck in enumerate(keys.tolist()):
        found = cache.get(ck)
        if found is None:
            found = cache[ck] = scramble_key(ck, top_k, same_key)
        out[n] = found
    return out


_SIGNIFICANT = 15  # as.character writes 15 significant digits (R 4.2)
_TIE_MARGIN = 2e-4  # x * 10^q (< 10^15) in long double is within half an ulp, 3.1e-5, of the exact product
_POW10 = np.array([r_pow10(n) for n in range(_SIGNIFICANT + 4)])  # exact in long double


def _fixed_digits(keys: FloatArray) -> tuple[IntArray, IntArray, BoolArray]:
    """``as.character`` of keys in fixed notation ``"0.ddd"`` as ``(ddd, len(ddd), usable)``.

    The 15 significant digits are ``round(x * 10^q)``, formed in long double; where the product
    lies within ``_TIE_MARGIN`` of a half the correctly rounded digits are not certain, and
    ``usable`` is False. Trailing zeros are dropped as R drops them. ``usable`` is also False
    where R writes the key otherwise (0, 1e-4 and less, scientific notation being shorter) or
    where a rotation would change the string's length (one decimal).
    """
    positive = (keys >= 1e-4) & (keys < 1.0)
    x = np.where(positive, keys, 0.5)
    exponent = np.floor(np.log10(x)).astype(np.int64)  # -4 .. -1
    scaled = x.astype(np.longdouble) * _POW10[_SIGNIFICANT - 1 - exponent]
    whole = scaled.astype(np.int64)  # positive and below 10**15: truncation is the floor, exactly
    fraction = scaled - whole  # exact in long double
    tie = np.abs(fraction - 0.5) < _TIE_MARGIN
    digits = whole + (fraction > 0.5)  # rounded to nearest (a tie takes the reference path)
    in_range = (digits >= 10 ** (_SIGNIFICANT - 1)) & (digits < 10**_SIGNIFICANT)  # log10 was right
    significant = np.full(keys.size, _SIGNIFICANT, dtype=np.int64)
    _strip_zeros(digits, significant)
    decimals = significant - exponent - 1
    fixed_len = 2 + decimals
    sci_len = np.where(significant > 1, significant + 1, 1) + 4  # "d.ddde-0k"
    usable = positive & ~tie & in_range & (fixed_len <= sci_len) & (decimals >= 2)
    return digits, decimals, usable


@njit(nogil=True, cache=True)
def _strip_zeros(digits: IntArray, significant: IntArray) -> None:  # pragma: no cover - compiled
    """Drop trailing zeros in place, as R drops them (at least one digit stays)."""
    for n in range(digits.size):
        while significant[n] > 1 and digits[n] % 10 == 0:
            digits[n] //= 10
            significant[n] -= 1


def _rotated_keys(digits: IntArray, decimals: IntArray, top_k: int, first: int) -> FloatArray:
    """Keys ``"0." + rotate(ddd, r)`` for ``r = first .. first + top_k - 1``, read as ``R_strtod`` reads them.

    ``R_strtod`` accumulates the digits exactly in long double and divides once by ``10^n``.
    """
    out = np.empty((digits.size, top_k), dtype=np.float64)
    power = _POW10[decimals]
    for column in range(top_k):
        shift = (first + column) % decimals
        head = 10 ** (decimals - shift)  # the digits after the first ``shift`` ones
        rotated = (digits % head) * 10**shift + digits // head
        out[:, column] = (rotated.astype(np.longdouble) / power).astype(np.float64)
    return out
