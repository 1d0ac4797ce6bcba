"""Keep freed memory for reuse, and the served release's objects out of the garbage collector's way.

For the processes that allocate and free large arrays over and over: the table service (a new
table allocates a few arrays and a body of up to megabytes, and frees them when it is sent) and a
release (cube after cube). By default glibc returns large blocks to the kernel at once (they are
mapped per allocation) and numpy asks for transparent huge pages for arrays of 4 MB and more, so
the next arrays are fresh pages the kernel must zero first: under 20 clients on the EU programme
at 10M persons the table server spent about half its CPU in the kernel, 28 % of it zeroing huge
pages (``perf``). Keeping freed blocks in one arena and not asking for huge pages cut the kernel's
time per table to a sixth or less in process (two threads: 0.56-0.95 ms to 0.08-0.16 ms); a
release of the EU programme at 10M persons peaks 0.4-0.6 GB lower (2.27 GB against 2.66-2.91 GB,
same wall time).

An opened release is some 350,000 Python objects (its classifications, config, key store
columns), all alive as long as it is served. The cyclic garbage collector still walked all of
them in each of its full collections, started by the objects that requests allocate: one took
0.87 s under load with the GIL held, during which no table was answered (11 % of the server's CPU
while 20 clients asked new tables). :func:`settle` moves them out of its reach (``gc.freeze``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys

import numpy as np

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
MMAP_THRESHOLD = 64 * 2**20  # blocks below this come from the arena and are reused
TRIM_THRESHOLD = 1 * 2**30  # free memory kept at the top of the heap before it is returned


def reuse_freed_memory() -> bool:
    """Tune glibc's allocator (one arena, high thresholds) and numpy's huge-page advice; True if glibc took it.

    Call it before the service starts threads: threads started earlier keep their own arenas.
    Elsewhere than glibc (macOS, musl) it changes numpy's advice only.
    """
    set_hugepage = getattr(getattr(np, "_core", None), "multiarray", None)
    if set_hugepage is not None and hasattr(set_hugepage, "_set_madvise_hugepage"):
        set_hugepage._set_madvise_hugepage(False)
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt"):
        return False
    return all(
        libc.mallopt(option, value) == 1
        for option, value in (
            (_M_ARENA_MAX, 1),
            (_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
        )
    )


def settle() -> None:
    """Collect garbage, then keep every object alive now out of later collections (``gc.freeze``).

    Call it once a release is opened, and again after a reload: objects frozen before are
    unfrozen and collected first, so a release served before and no longer referenced is freed
    (its reference cycles would otherwise stay frozen).
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()
