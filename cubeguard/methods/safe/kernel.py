"""The SAFE heuristic's tight loops (numba): evaluate and make moves of records between elementary cells.

A move takes ``m`` records of elementary cell ``j`` to elementary cell ``k`` (their category values
become ``k``'s). Every controlled cell holding ``j`` but not ``k`` loses ``m``, every one holding
``k`` but not ``j`` gains ``m``, the others do not change; so each touched cell changes by exactly
``m`` and a move's effect on the bounds can be read cell by cell before it is made.

* :func:`feasible_sweep` is model 2 of Höhne (2011, 2.1.1): for each unsafe cell (1 or 2 records),
  the move among its candidates that removes the most unsafe cells while every controlled cell
  stays within its bound (``|d| < w + b``), ties to the smallest growth of the squared deviations.
* :func:`repair_sweep` is model 3 (2.1.2): after the bounds were tightened, moves that keep every
  elementary cell at 0 or at least 3 and lower the total excess over the bounds.

Candidates for a cell are its neighbours in one sort order of the elementary cells per variable
(that variable last), so they first differ from it in that variable only, then in few others.
"""

from __future__ import annotations

import numpy as np
from numba import njit

MAX_DIMS = 16
#: Model 2 compares this many fitting candidates of a cell (ranked first) by the growth of the squared deviations.
FEASIBLE_COMPARED = 8
#: Model 2 first tests a candidate on this many cells that last stopped a candidate.
HOT = 32


@njit(cache=True, nogil=True)
def _chain(t, d, c, ptr, cstart):  # type: ignore[no-untyped-def]
    b = ptr[t, d] + c
    return cstart[b], cstart[b + 1]


@njit(cache=True, nogil=True)
def _visit(t, cats_a, cats_b, m, mode, nd, var, ptr, cstart, cval, base, dev, bound, lens, starts, prefix, idx):  # type: ignore[no-untyped-def]
    """Every cell of table ``t`` holding ``a`` but not ``b``; each changes by ``m``.

    ``mode`` 0 returns (excess change, squared-deviation change, violated before) without changing
    anything; mode 1 adds ``m`` to each cell's deviation; mode 2 returns (1, that cell, 0) at the
    first cell that would leave its bound, else (0, squared-deviation change, 0).
    """
    n = nd[t]
    for d in range(n):
        v = var[t, d]
        sa, ea = _chain(t, d, cats_a[v], ptr, cstart)
        sb, eb = _chain(t, d, cats_b[v], ptr, cstart)
        lens[d] = ea - sa
        starts[d] = sa
        p = 0
        while sa + p < ea and sb + p < eb and cval[sa + p] == cval[sb + p]:
            p += 1
        prefix[d] = p
        if lens[d] == 0:
            return 0, 0, 0
    shared_all = True
    for d in range(n):
        if prefix[d] < lens[d]:
            shared_all = False
    if shared_all:
        return 0, 0, 0
    for d in range(n):
        idx[d] = 0
    excess = 0
    square = 0
    before = 0
    while True:
        shared = True
        cell = base[t]
        for d in range(n):
            cell += cval[starts[d] + idx[d]]
            if idx[d] >= prefix[d]:
                shared = False
        if not shared:
            old = dev[cell]
            new = old + m
            if mode == 1:
                dev[cell] = new
            elif mode == 2:
                if abs(new) > bound[cell]:
                    return 1, cell, 0
                square += new * new - old * old
            else:
                lim = bound[cell]
                eo = abs(old) - lim
                en = abs(new) - lim
                if eo > 0:
                    before += 1
                excess += (en if en > 0 else 0) - (eo if eo > 0 else 0)
                square += new * new - old * old
        if not _advance(idx, lens, n):
            break
    return excess, square, before


@njit(cache=True, nogil=True, inline="always")
def _advance(idx, lens, n):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Step the odometer ``idx`` (digit ``d`` below ``lens[d]``, last digit fastest); False once it wraps."""
    d = n - 1
    while d >= 0:
        idx[d] += 1
        if idx[d] < lens[d]:
            return True
        idx[d] = 0
        d -= 1
    return False


@njit(cache=True, nogil=True)
def table_masks(nd, var):  # type: ignore[no-untyped-def]
    """Per table, the bit set of its variables (variable ``v`` is bit ``v``; variables from 63 on share bit 63)."""
    out = np.zeros(nd.size, np.int64)
    for t in range(nd.size):
        for d in range(nd[t]):
            out[t] |= np.int64(1) << min(var[t, d], 63)
    return out


@njit(cache=True, nogil=True)
def _diff(a, b):  # type: ignore[no-untyped-def]
    """The bit set of the variables in which category rows ``a`` and ``b`` differ.

    No cell of a table whose variables all lie outside it changes when records move from ``a`` to ``b``.
    """
    out = np.int64(0)
    for v in range(a.size):
        if a[v] != b[v]:
            out |= np.int64(1) << min(v, 63)
    return out


@njit(cache=True, nogil=True)
def evaluate(j, k, m, cats, nd, var, ptr, cstart, cval, base, dev, bound, scratch, tmask):  # type: ignore[no-untyped-def]
    """(excess change, squared-deviation change) of moving ``m`` records from ``j`` to ``k``.

    ``tmask``: :func:`table_masks` of the tables.
    """
    lens, starts, prefix, idx = scratch[0], scratch[1], scratch[2], scratch[3]
    excess = 0
    square = 0
    diff = _diff(cats[j], cats[k])
    for t in range(nd.size):
        if tmask[t] & diff == 0:
            continue
        e1, s1, _ = _visit(
            t, cats[j], cats[k], -m, 0, nd, var, ptr, cstart, cval, base, dev, bound, lens, starts, prefix, idx
        )
        e2, s2, _ = _visit(
            t, cats[k], cats[j], m, 0, nd, var, ptr, cstart, cval, base, dev, bound, lens, starts, prefix, idx
        )
        excess += e1 + e2
        square += s1 + s2
    return excess, square


@njit(cache=True, nogil=True)
def move(j, k, m, y, cats, nd, var, ptr, cstart, cval, base, dev, scratch, tmask, log, n_log):  # type: ignore[no-untyped-def]
    """Make the move and log it; returns the new log length."""
    lens, starts, prefix, idx = scratch[0], scratch[1], scratch[2], scratch[3]
    diff = _diff(cats[j], cats[k])
    for t in range(nd.size):
        if tmask[t] & diff == 0:
            continue
        _visit(t, cats[j], cats[k], -m, 1, nd, var, ptr, cstart, cval, base, dev, dev, lens, starts, prefix, idx)
        _visit(t, cats[k], cats[j], m, 1, nd, var, ptr, cstart, cval, base, dev, dev, lens, starts, prefix, idx)
    y[j] -= m
    y[k] += m
    log[n_log, 0] = j
    log[n_log, 1] = k
    log[n_log, 2] = m
    return n_log + 1


@njit(cache=True, nogil=True)
def _cells(t, row, nd, var, ptr, cstart, cval, base, scratch, buf):  # type: ignore[no-untyped-def]
    """Every cell of table ``t`` holding the elementary cell of categories ``row``, into ``buf``; returns how many."""
    lens, starts, idx = scratch[0], scratch[1], scratch[3]
    n = nd[t]
    for d in range(n):
        s, e = _chain(t, d, row[var[t, d]], ptr, cstart)
        lens[d] = e - s
        starts[d] = s
        idx[d] = 0
        if e == s:
            return 0
    count = 0
    while True:
        cell = base[t]
        for d in range(n):
            cell += cval[starts[d] + idx[d]]
        buf[count] = cell
        count += 1
        if not _advance(idx, lens, n):
            return count


@njit(cache=True, nogil=True)
def _same_fixed(a, b, fixed):  # type: ignore[no-untyped-def]
    """Whether category rows ``a`` and ``b`` agree on every fixed variable (a move must not change those)."""
    for v in range(fixed.size):  # noqa: SIM110  (numba compiles no generator expression)
        if fixed[v] and a[v] != b[v]:
            return False
    return True


@njit(cache=True, nogil=True)
def _unsafe(v):  # type: ignore[no-untyped-def]
    return 1 if v == 1 or v == 2 else 0


@njit(cache=True, nogil=True)
def cells_changed(j, k, cats, nd, var, ptr, cstart, cval, tmask):  # type: ignore[no-untyped-def]
    """How many controlled cells a move between ``j`` and ``k`` changes (cells holding one but not the other)."""
    total = 0
    diff = _diff(cats[j], cats[k])
    for t in range(nd.size):
        if tmask[t] & diff == 0:
            continue
        a = 1
        b = 1
        shared = 1
        for d in range(nd[t]):
            v = var[t, d]
            sa, ea = _chain(t, d, cats[j, v], ptr, cstart)
            sb, eb = _chain(t, d, cats[k, v], ptr, cstart)
            p = 0
            while sa + p < ea and sb + p < eb and cval[sa + p] == cval[sb + p]:
                p += 1
            a *= ea - sa
            b *= eb - sb
            shared *= p
        total += a + b - 2 * shared
    return total


@njit(cache=True, nogil=True)
def _fit_square(j, k, m, cats, nd, var, ptr, cstart, cval, base, dev, bound, scratch, tmask):  # type: ignore[no-untyped-def]
    """(Whether moving ``m`` records from ``j`` to ``k`` keeps every cell within its bound, squared-deviation change).

    One visit of the cells the move changes, stopping at the first that would leave its bound; then
    the second value is that cell.
    """
    lens, starts, prefix, idx = scratch[0], scratch[1], scratch[2], scratch[3]
    square = 0
    diff = _diff(cats[j], cats[k])
    for t in range(nd.size):
        if tmask[t] & diff == 0:
            continue
        out, s1, _ = _visit(
            t, cats[j], cats[k], -m, 2, nd, var, ptr, cstart, cval, base, dev, bound, lens, starts, prefix, idx
        )
        if out:
            return False, s1
        out, s2, _ = _visit(
            t, cats[k], cats[j], m, 2, nd, var, ptr, cstart, cval, base, dev, bound, lens, starts, prefix, idx
        )
        if out:
            return False, s2
        square += s1 + s2
    return True, square


@njit(cache=True, nogil=True)
def _neighbours(j, window, least, y, cats, ranks, orders, fixed, out):  # type: ignore[no-untyped-def]
    """Candidates of ``j`` into ``out``; returns how many.

    They are the cells within ``window`` of ``j`` in each sort order, nearest first, holding at least
    ``least`` records and agreeing with ``j`` on every fixed variable.
    """
    n = y.size
    count = 0
    for v in range(ranks.shape[0]):
        r = ranks[v, j]
        for step in range(1, window + 1):
            for side in (-1, 1):
                p = r + side * step
                if p < 0 or p >= n:
                    continue
                k = orders[v, p]
                if y[k] >= least and _same_fixed(cats[j], cats[k], fixed):
                    out[count] = k
                    count += 1
    return count


@njit(cache=True, nogil=True)
def _holds(t, d, cat, offset, ptr, cstart, cval):  # type: ignore[no-untyped-def]
    """Whether category ``cat``'s chain in dimension ``d`` of table ``t`` holds the code at ``offset``."""
    s, e = _chain(t, d, cat, ptr, cstart)
    for p in range(s, e):  # noqa: SIM110  (numba compiles no generator expression)
        if cval[p] == offset:
            return True
    return False


@njit(cache=True, nogil=True)
def _effect(cell, a, b, m, nd, var, ptr, cstart, cval, base, strides):  # type: ignore[no-untyped-def]
    """How controlled ``cell`` changes when ``m`` records move from category row ``a`` to ``b``: -m, 0 or m."""
    t = np.searchsorted(base, cell, side="right") - 1
    rest = cell - base[t]
    in_a = True
    in_b = True
    for d in range(nd[t]):
        offset = (rest // strides[t, d]) * strides[t, d]
        rest -= offset
        v = var[t, d]
        in_a = in_a and _holds(t, d, a[v], offset, ptr, cstart, cval)
        in_b = in_b and _holds(t, d, b[v], offset, ptr, cstart, cval)
        if not in_a and not in_b:
            return 0
    if in_a and not in_b:
        return -m
    if in_b and not in_a:
        return m
    return 0


@njit(cache=True, nogil=True)
def _blocked(j, k, m, hot, cats, nd, var, ptr, cstart, cval, base, dev, bound, strides):  # type: ignore[no-untyped-def]
    """Whether the move would take one of the ``hot`` cells (-1: none) out of its bound: an exact test on a few cells."""
    for h in range(hot.size):
        cell = hot[h]
        if cell < 0:
            return False
        change = _effect(cell, cats[j], cats[k], m, nd, var, ptr, cstart, cval, base, strides)
        if change != 0 and abs(dev[cell] + change) > bound[cell]:
            return True
    return False


@njit(cache=True, nogil=True)
def _candidates(j, window, y, cats, ranks, orders, fixed, nd, var, ptr, cstart, cval, tmask, near, touched, cand):  # type: ignore[no-untyped-def]
    """Model 2's candidate moves for unsafe cell ``j`` into ``cand``; returns how many.

    Rows of ``cand``: from cell, to cell, records, ranking key (unsafe cells removed, then
    controlled cells changed), and an id shared by the same move found in several sort orders
    (from the neighbour's first place in ``near``, where ``touched`` keeps its cells changed).
    """
    count = 0
    for c in range(_neighbours(j, window, 1, y, cats, ranks, orders, fixed, near)):
        k = near[c]
        u = _first_place(near, c)
        if u == c:
            touched[u] = -1
        yj = y[j]
        yk = y[k]
        need = 3 - yj  # enough of k's records to j to make it 3
        for side in range(2):  # j's records to k, or k's to j
            gain = _unsafe(yk + yj) - _unsafe(yk) - 1 if side == 0 else _unsafe(yk - need) - _unsafe(yk) - 1
            if gain >= 0 or (side == 1 and yk < need):
                continue
            if touched[u] < 0:
                touched[u] = cells_changed(j, k, cats, nd, var, ptr, cstart, cval, tmask)
            cand[0, count], cand[1, count], cand[2, count] = (j, k, yj) if side == 0 else (k, j, need)
            cand[3, count] = (gain + 3) * (1 << 40) + touched[u]
            cand[4, count] = 2 * u + side
            count += 1
    return count


@njit(cache=True, nogil=True)
def _first_place(near, c):  # type: ignore[no-untyped-def]
    """The first place of ``near[c]`` in ``near`` (``c`` unless a sort order found it before)."""
    for q in range(c):
        if near[q] == near[c]:
            return q
    return c


@njit(cache=True, nogil=True)
def feasible_sweep(  # type: ignore[no-untyped-def]
    order, window, y, cats, ranks, orders, fixed, nd, var, ptr, cstart, cval, base, dev, bound, log, n_log, strides
):
    """One pass of model 2 over the unsafe cells in ``order``; returns (new log length, moves made).

    For each unsafe cell, the candidate moves (its records to a neighbour, or enough of a
    neighbour's records to it to make 3) are ranked by the unsafe cells they remove, most first,
    then by how many controlled cells they change, fewest first; the first that keeps every
    controlled cell within its bound is made. Stops early when the log is full (the caller grows
    it and calls again). The last cells that stopped a candidate (``HOT``) are tested first, each
    exactly (:func:`_effect`), which rejects most candidates that do not fit without visiting
    their cells; ``strides`` (per table and dimension) locate a cell's codes.
    """
    scratch = np.zeros((4, MAX_DIMS), np.int64)
    tmask = table_masks(nd, var)
    hot = np.full(HOT, -1, np.int64)
    n_hot = 0
    near = np.empty(ranks.shape[0] * window * 2, np.int64)
    made = 0
    cand = np.empty((5, near.size * 2), np.int64)
    touched = np.empty(near.size, np.int64)
    known = np.zeros(near.size * 2, np.int8)
    squares = np.zeros(near.size * 2, np.int64)
    for j in order:
        if _unsafe(y[j]) == 0:
            continue
        if n_log + 1 >= log.shape[0]:
            break
        count = _candidates(
            j, window, y, cats, ranks, orders, fixed, nd, var, ptr, cstart, cval, tmask, near, touched, cand
        )
        c_from, c_to, c_m, c_key, c_uid = cand[0], cand[1], cand[2], cand[3], cand[4]
        ranked = np.argsort(c_key[:count], kind="mergesort")
        known[:] = 0
        best = -1
        best_sq = 0
        found = 0
        for i in ranked:
            if found and c_key[i] >> 40 != c_key[best] >> 40:
                break  # only candidates removing as many unsafe cells as the first that fits
            u = c_uid[i]
            if known[u] == 0:  # a neighbour in several sort orders is one candidate: judged once
                known[u] = 2
                if not _blocked(
                    c_from[i], c_to[i], c_m[i], hot, cats, nd, var, ptr, cstart, cval, base, dev, bound, strides
                ):
                    fits, sq = _fit_square(
                        c_from[i], c_to[i], c_m[i], cats, nd, var, ptr, cstart, cval, base, dev, bound, scratch, tmask
                    )
                    if fits:
                        known[u], squares[u] = 1, sq
                    else:  # sq is the cell that stopped it: remember it
                        hot[n_hot % HOT] = sq
                        n_hot += 1
            if known[u] == 2:
                continue
            if best < 0 or squares[u] < best_sq:
                best, best_sq = i, squares[u]
            found += 1
            if found == FEASIBLE_COMPARED:
                break
        if best >= 0:
            n_log = move(
                c_from[best],
                c_to[best],
                c_m[best],
                y,
                cats,
                nd,
                var,
                ptr,
                cstart,
                cval,
                base,
                dev,
                scratch,
                tmask,
                log,
                n_log,
            )
            made += 1
    return n_log, made


@njit(cache=True, nogil=True)
def _violations(j, cats, nd, var, ptr, cstart, cval, base, dev, bound, scratch, buf):  # type: ignore[no-untyped-def]
    """(cells holding ``j`` above their bound, below it)."""
    high = 0
    low = 0
    for t in range(nd.size):
        count = _cells(t, cats[j], nd, var, ptr, cstart, cval, base, scratch, buf)
        for c in range(count):
            cell = buf[c]
            if dev[cell] > bound[cell]:
                high += 1
            elif dev[cell] < -bound[cell]:
                low += 1
    return high, low


@njit(cache=True, nogil=True)
def _giveable(v):  # type: ignore[no-untyped-def]
    """Records a safe cell can give and stay safe: one from 4 or more, all three from 3."""
    if v >= 4:
        return 1
    if v == 3:
        return 3
    return 0


@njit(cache=True, nogil=True)
def repair_sweep(  # type: ignore[no-untyped-def]
    order, window, y, cats, ranks, orders, fixed, nd, var, ptr, cstart, cval, base, dev, bound, log, n_log, buf
):
    """One pass of model 3: each cell in a violated controlled cell tries the best safe move; returns (log length, moves)."""
    scratch = np.zeros((4, MAX_DIMS), np.int64)
    tmask = table_masks(nd, var)
    near = np.empty(ranks.shape[0] * window * 2, np.int64)
    made = 0
    for j in order:
        if y[j] < 3:
            continue
        if n_log + 1 >= log.shape[0]:
            break
        high, low = _violations(j, cats, nd, var, ptr, cstart, cval, base, dev, bound, scratch, buf)
        if high == 0 and low == 0:
            continue
        best_ex = 0
        best_sq = 0
        best_from = -1
        best_to = -1
        best_m = 0
        for c in range(_neighbours(j, window, 3, y, cats, ranks, orders, fixed, near)):
            k = near[c]
            if _first_place(near, c) < c:
                continue  # a neighbour in several sort orders: its moves were judged, and a tie keeps the first
            for side in range(2):  # cell j gives (its cells run high), then takes from k (they run low)
                src, dst = (j, k) if side == 0 else (k, j)
                m = _giveable(y[src]) if (high if side == 0 else low) > 0 else 0
                if m > 0:
                    ex, sq = evaluate(src, dst, m, cats, nd, var, ptr, cstart, cval, base, dev, bound, scratch, tmask)
                    if ex < best_ex or (ex == best_ex and ex < 0 and sq < best_sq):
                        best_ex, best_sq, best_from, best_to, best_m = ex, sq, src, dst, m
        if best_from >= 0:
            n_log = move(
                best_from, best_to, best_m, y, cats, nd, var, ptr, cstart, cval, base, dev, scratch, tmask, log, n_log
            )
            made += 1
    return n_log, made
