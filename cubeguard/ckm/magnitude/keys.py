"""Cell keys of the noise components: cellKey 1.0.2's ``.scramble_ckeys``.

Every component j = 1..top_k of a magnitude cell needs its own key (Handbook on SDC v2, 5.4.2;
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

from cubeguard.ckm.magnitude._rnum import r_as_character, r_strtod


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
    """Component keys of every cell, shape ``(cells, top_k)`` (see :func:`scramble_key`)."""
    keys = np.asarray(cell_keys, dtype=np.float64).ravel()
    out = np.empty((keys.size, top_k), dtype=np.float64)
    cache: dict[float, list[float]] = {}
    for n, ck in enumerate(keys.tolist()):
        found = cache.get(ck)
        if found is None:
            found = cache[ck] = scramble_key(ck, top_k, same_key)
        out[n] = found
    return out
