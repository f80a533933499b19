"""Functions that report to the user: ``print``'s kin in the standard library.

``warnings.warn``, the ``logging`` module's functions and a ``logging.Logger``'s methods of
those names read their arguments, write nothing a gradient reads and return None: a call of
one is kept in the forward code as it is, with no derivative (``log.info("loss %s", y)`` in
a training loop). adgen never compiles their Python source (``logging.debug(msg, *args,
**kwargs)`` is not differentiable code).
"""

from __future__ import annotations

import sys
from typing import Any

_REPORT_NAMES = frozenset({"debug", "info", "warning", "warn", "error", "exception",
                           "critical", "fatal", "log"})


def reports(obj: Any) -> bool:
    """True when ``obj`` reports to the user and returns None: ``warnings.warn``, the
    ``logging`` module's functions and a ``logging.Logger``'s (or ``LoggerAdapter``'s) methods
    of those names (``log.info("loss %s", y)``). They read their arguments, write nothing a
    gradient reads, and their result carries no derivative, like ``print``. Classified by
    identity: a user's ``def info(x)`` is not one. ``logging`` is not imported here (a name
    bound to one of its objects imported it)."""
    import warnings

    if obj is warnings.warn:
        return True
    logging = sys.modules.get("logging")
    if logging is None:
        return False
    name = getattr(obj, "__name__", None)
    if name not in _REPORT_NAMES:
        return False
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, (logging.Logger, logging.LoggerAdapter)):
        # logging's own method, not a subclass's override (which may do anything)
        func = getattr(obj, "__func__", None)
        return func is not None and func in (getattr(logging.Logger, name, None),
                                             getattr(logging.LoggerAdapter, name, None))
    return getattr(logging, name, None) is obj
