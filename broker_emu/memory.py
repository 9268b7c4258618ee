"""Giving freed memory back to the operating system.

CPython frees a large buffer to the C allocator, and glibc keeps what it got from the heap for
later instead of returning it: after a client sent 80 MiB of a frame and left, the process stays
that big (benchmarks/memory.py, partial-frames: 359 MiB after the close, 37 MiB after a trim).
``release_free_memory`` asks glibc to return what is free (malloc_trim); elsewhere it does
nothing. It costs a few milliseconds, so callers use it after something big went away, not per
request.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

# a connection that buffered at least this much gives the memory back when it ends
BIG_BUFFER_BYTES = 8 << 20


def _trimmer() -> Callable[[], None]:
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        trim = None
    if trim is None:
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


release_free_memory = _trimmer()
