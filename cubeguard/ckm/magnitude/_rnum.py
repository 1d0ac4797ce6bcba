"""R's number handling that cellKey's results depend on, emulated bit for bit.

* ``sum`` of doubles accumulates in a long double (x87 80-bit on x86-64) and rounds once.
* ``as.character`` of a double writes at most 15 significant digits (R 4.2), without trailing
  zeros, in fixed notation unless scientific notation is shorter.
* ``as.numeric`` of a string is R's ``R_strtod``: the digits are accumulated exactly in a long
  double, divided by a long-double power of ten, then rounded to double. This is not always the
  correctly rounded double (``"0.194739484693862"`` gives 0.19473948469386199).

numpy's ``longdouble`` is the x87 80-bit type on x86-64 Linux, as R's ``LDOUBLE`` there; on a
platform where it is plain double, these functions are correctly rounded instead (and the
golden tests would show the difference).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

_NUMBER = re.compile(r"^([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?)([0-9]+))?$")


def r_sum(values: Iterable[float]) -> float:
    """R's ``sum`` of doubles: sequential long-double accumulation from 0, rounded once."""
    total = np.longdouble(0.0)
    for value in values:
        total += np.longdouble(value)
    return float(total)


def r_sum_rows(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """R's ``sum`` of each row of a 2-d array (columns in order), vectorised over rows."""
    total = np.zeros(values.shape[0], dtype=np.longdouble)
    for column in range(values.shape[1]):
        total += values[:, column].astype(np.longdouble)
    return total.astype(np.float64)


def r_as_character(value: float) -> str:
    """``as.character(value)`` of R 4.2 for a finite double: 15 significant digits at most."""
    if value == 0.0:
        return "0"
    sci = f"{value:.14e}"
    mantissa, exponent = sci.split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    exp = int(exponent)
    digits = mantissa.replace("-", "").replace(".", "")
    fixed = _fixed(value < 0, digits, exp)
    scientific = f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return fixed if len(fixed) <= len(scientific) else scientific


def _fixed(negative: bool, digits: str, exp: int) -> str:
    if exp < 0:
        body = "0." + "0" * (-exp - 1) + digits
    elif exp + 1 >= len(digits):
        body = digits + "0" * (exp + 1 - len(digits))
    else:
        body = digits[: exp + 1] + "." + digits[exp + 1 :]
    return ("-" if negative else "") + body


def r_strtod(text: str) -> float:
    """R's ``as.numeric`` of an unsigned decimal string (``R_strtod``); NaN if R gives NA."""
    match = _NUMBER.match(text)
    if match is None or not (match.group(1) or match.group(2)):
        return float("nan")
    whole, frac, sign, power = match.group(1), match.group(2) or "", match.group(3), match.group(4)
    ans = _digits_value(whole + frac)
    exponent = 0
    for char in power or "":  # R: MAX_EXPONENT_PREFIX, later digits are read but not used
        exponent = exponent * 10 + int(char) if exponent < 9999 else exponent
    expn = -len(frac) + (-exponent if sign == "-" else exponent)
    ndigits = len(whole) + len(frac)
    if expn + ndigits < -300:  # R: avoid needless underflow for large negative exponents
        for _ in range(ndigits):
            ans /= np.longdouble(10.0)
        expn += ndigits
    return float(_scaled(ans, expn))


def _digits_value(digits: str) -> np.longdouble:
    """``R_strtod``'s running ``10 * ans + digit`` over ``digits``, in long double.

    Below 10^19 (< 2^64) every step is exact, so the value is the integer itself, formed exactly
    from two 32-bit halves (a key's string has at most 16 digits; a key through the whole reference
    took 18.3 us with the loop, 6.5 us with this).
    """
    if len(digits) <= 19:
        high, low = divmod(int(digits), 2**32)
        return np.longdouble(high) * np.longdouble(2**32) + np.longdouble(low)
    return _accumulated(digits)


def _accumulated(digits: str) -> np.longdouble:
    """``R_strtod``'s digit loop as written: each step rounds once more digits pass 2^64."""
    ans = np.longdouble(0.0)
    for char in digits:
        ans = np.longdouble(10.0) * ans + np.longdouble(int(char))
    return ans


def _scaled(ans: np.longdouble, expn: int) -> np.longdouble:
    """``ans * 10^expn`` as ``R_strtod`` forms it (binary powers of ten, in long double).

    Powers beyond the long-double range become inf (so the key 0, or inf), as in R.
    """
    with np.errstate(over="ignore"):
        return _scaled_raw(ans, expn)


def _scaled_raw(ans: np.longdouble, expn: int) -> np.longdouble:
    if expn < -4 * 15:  # R: 4 * DBL_DIG, ten times ten times ...
        return ans / _repeated_pow10(-expn)
    fac = r_pow10(abs(expn))
    return ans / fac if expn < 0 else ans * fac


_REPEATED = [np.longdouble(1.0)]  # 1, 10, 10*10, ... in long double, up to the first inf


def _repeated_pow10(n: int) -> np.longdouble:
    """``10`` multiplied ``n`` times in long double, as ``R_strtod``'s loop does it.

    Cached, since rotated keys in scientific notation reach exponents in the thousands (the
    product is inf from about 10^4933 on, and stays inf).
    """
    while len(_REPEATED) <= n and np.isfinite(_REPEATED[-1]):
        _REPEATED.append(_REPEATED[-1] * np.longdouble(10.0))
    return _REPEATED[min(n, len(_REPEATED) - 1)]


def r_pow10(n: int) -> np.longdouble:
    """``10^n`` as ``R_strtod`` forms it for ``n <= 60``: binary powering in long double (exact to 10^27)."""
    p10, fac = np.longdouble(10.0), np.longdouble(1.0)
    while n:
        if n & 1:
            fac *= p10
        n >>= 1
        p10 *= p10
    return fac
