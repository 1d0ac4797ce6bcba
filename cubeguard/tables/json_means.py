"""A table's published means as a JSON array, written by a compiled loop byte for byte as orjson writes it.

orjson writes a float as the shortest decimal that reads back as the same double, with at least one
decimal (``2.0``), and NaN as ``null``. A published mean is rounded to at most 6 decimals
(:mod:`.means`), so ``k = rint(mean * 10**d)`` is whole and ``k / 10**d`` is the mean again. When
``k`` has at most 15 digits, that decimal with its trailing zeros cut (one kept) is the shortest one
(a double tells every 15-digit decimal apart), so it is what orjson writes. A value outside that
(``|k| >= 10**15``, below ``1e-4``, where orjson switches to ``1e-6`` notation, ``-0.0``, or not
rounded to ``d`` decimals) leaves the whole array to orjson.

orjson took 0.92-0.93 ms for 52,000 means of one decimal (the size of a median 4-way table),
holding the GIL; this loop 0.59-0.60 ms without it. (Counts stay with orjson: its integers were
faster than such a loop, 0.26 against 0.51 ms.)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

_LIMIT = 1e15  # |k| below it: at most 15 digits
_SMALLEST = 1e-4  # orjson writes 1e-6 as "1e-6" but 0.00001 in full; kept well inside


@njit(nogil=True, cache=True)
def _write(values: np.ndarray, decimals: int, out: np.ndarray) -> int:  # pragma: no cover - compiled
    """The JSON array of ``values`` in ``out``: its length, or -1 at the first value orjson must write."""
    unit = 1
    for _ in range(decimals):
        unit *= 10
    scale = float(unit)
    at = 0
    out[at] = 91  # [
    at += 1
    for i in range(values.size):
        if i:
            out[at] = 44  # ,
            at += 1
        v = values[i]
        if v != v:  # NaN
            out[at], out[at + 1], out[at + 2], out[at + 3] = 110, 117, 108, 108  # null
            at += 4
            continue
        if v == 0.0:
            if np.signbit(v):
                return -1
            out[at], out[at + 1], out[at + 2] = 48, 46, 48  # 0.0
            at += 3
            continue
        k = np.rint(v * scale)
        if not (abs(v) >= _SMALLEST and abs(k) < _LIMIT and k / scale == v):
            return -1
        if v < 0:
            out[at] = 45  # -
            at += 1
        whole = np.int64(abs(k))
        integer = whole // unit
        n, rest = 1, integer // 10  # written here, not by a helper: a call passing an array costs atomics
        while rest > 0:
            n += 1
            rest //= 10
        for j in range(at + n - 1, at - 1, -1):
            out[j] = 48 + integer % 10
            integer //= 10
        at += n
        out[at] = 46  # .
        at += 1
        fraction, width = whole % unit, max(decimals, 1)
        while width > 1 and fraction % 10 == 0:  # trailing zeros cut, one digit kept
            fraction //= 10
            width -= 1
        for j in range(at + width - 1, at - 1, -1):
            out[j] = 48 + fraction % 10
            fraction //= 10
        at += width
    out[at] = 93  # ]
    return at + 1


def means_json(values: npt.NDArray[np.float64], decimals: int) -> bytes | None:
    """``orjson.dumps(values, option=OPT_SERIALIZE_NUMPY)`` for means rounded to ``decimals``, or None where orjson must write them.

    A value that is not rounded to ``decimals`` gives None too, never other bytes.
    """
    if not 0 <= decimals <= 6:
        raise ValueError(f"decimals must be 0 to 6, not {decimals}")
    flat = np.ascontiguousarray(values, dtype=np.float64).ravel()
    out = np.empty(2 + 24 * max(flat.size, 1), dtype=np.uint8)  # sign, 15 digits, point, comma: 18 at most
    end = _write(flat, decimals, out)
    return None if end < 0 else out[:end].tobytes()
