"""The implementation a ``functools.singledispatch`` function runs for its first argument,
chosen when the call runs (``transforms/single_dispatch.py`` writes ``act(h)`` as
``dispatched(act, h)(h)``): the function registered for the class of ``h``, which adgen then
differentiates as any function called through a variable."""

from __future__ import annotations

from typing import Any

from adgen.rules.registry import defnondiff

__all__ = ["dispatched", "is_single_dispatch"]


def is_single_dispatch(obj: Any) -> bool:
    """Whether ``obj`` is a function ``functools.singledispatch`` made (its wrapper, with the
    ``dispatch`` and ``register`` functions and the ``registry`` of implementations)."""
    import types

    return isinstance(obj, types.FunctionType) and \
        {"dispatch", "register", "registry", "__wrapped__"} <= obj.__dict__.keys()


def dispatched(fn: Any, first: Any) -> Any:
    """What ``fn(first, ...)`` runs: ``fn.dispatch(first.__class__)``, as the wrapper
    ``functools.singledispatch`` makes chooses it."""
    return fn.dispatch(first.__class__)


# a call of it has no derivative and changes nothing: the analyses see a rule without one
dispatched = defnondiff(dispatched)
