"""Functions behind ``functools.lru_cache`` / ``functools.cache``: differentiated as the
function the cache wraps.

A cached function is a C object (``functools._lru_cache_wrapper``) without source; what it
computes is its ``__wrapped__``'s. adgen compiles and calls that function itself, so a
gradient never reads the cache: a value the cache kept from an earlier call (computed from an
array that has changed since, or for another argument that hashes alike) cannot make it
stale, and the cache is neither read nor filled by a gradient's call. A rule registered on
the cached object itself (``adgen.rrule(cached)``) is used as it is.
"""

from __future__ import annotations

import functools
from typing import Any

from adgen.rules import registry

__all__ = ["uncached"]

_CACHE_TYPES = (functools._lru_cache_wrapper,)  # noqa: SLF001 - functools' public object type


def uncached(obj: Any) -> Any:
    """The function ``obj`` caches, if it is an ``lru_cache``/``cache`` wrapper without a
    rule of its own (through nested caches); else ``obj``."""
    while isinstance(obj, _CACHE_TYPES) and registry.lookup(obj) is None and \
            getattr(obj, "__wrapped__", None) is not None:
        obj = obj.__wrapped__
    return obj
