"""What the compiler keeps between calls: the functions it compiled (reverse mode, nested
defs' closures, forward mode), those it is compiling, and the lock that makes one compilation
at a time.

``pipeline.compile_function``, ``compile_closure`` and ``tangent_pipeline.compile_tangent``
look a function up here before running the passes and remember what they built. An entry is
keyed by the function's id (and the policy, the rule registry's generation, what it is
compiled for) and holds the function itself: a hit is checked by ``is`` (no other object
takes the id while the entry keeps the function alive), and dropped when one of its guards
fails (a redefined helper, a global of another kind: ``bindings.failed``). The oldest entries
go past :data:`CACHE_SIZE`.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from adgen.transforms.bindings import failed
from adgen.transforms.compiled import Compiled, CompiledTangent

from adgen.rules import registry

# Compiled functions, least recently used first; the oldest are dropped past CACHE_SIZE (a
# notebook that redefines a function a thousand times does not keep a thousand compilations).
COMPILED: OrderedDict[tuple[Any, ...], tuple[Any, Compiled]] = OrderedDict()
CACHE_SIZE = 512
IN_PROGRESS: dict[tuple[int, str], Compiled] = {}
# One compilation at a time: a recursive function's placeholder (IN_PROGRESS) must be seen
# only by the thread that builds it, or another thread's caller is compiled (and cached)
# against the half-built function. Reentrant: compiling a function compiles its callees.
COMPILE_LOCK = threading.RLock()

# Code objects of defs nested in differentiated functions: their closures read the enclosing
# function's values, which get gradients (adgen.dispatch lifts them into arguments).
NESTED_CODES: set[Any] = set()
CLOSURES: dict[tuple[Any, str, int, Any], Compiled] = {}  # (code, policy, rules, wrt)

# Forward mode's compiled functions (oldest first), and those being compiled: id -> (the
# function, its jvp's signature), which a recursive call finds.
TANGENTS: OrderedDict[tuple[Any, ...], tuple[Any, CompiledTangent]] = OrderedDict()
TANGENT_PROGRESS: dict[int, Any] = {}


# Compilations that failed, kept while the outermost compilation runs (cleared when it ends,
# so a helper the user fixes is compiled again): the analyses of every caller ask about a
# callee again (returns_container, mutating_call, fresh_call), and a failing library function
# compiled its own callees again each time, exponential in the depth of the library's calls
# (scipy.stats.cauchy.logpdf: over ten minutes to its refusal).
FAILURES: dict[tuple[Any, ...], tuple[Any, Exception]] = {}
_DEPTH = [0]


@contextmanager
def compiling() -> Iterator[None]:
    """A compilation, nested or outermost: the failures it meets are kept until the
    outermost one ends."""
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if _DEPTH[0] == 0:
            FAILURES.clear()


def failed_before(key: tuple[Any, ...], fn: Any) -> Exception | None:
    """A copy of the error ``fn``'s compilation under ``key`` raised earlier in this
    outermost compilation (a copy: callers locate it at their own call), or None."""
    hit = FAILURES.get(key)
    return _copied(hit[1]) if hit is not None and hit[0] is fn else None


def remember_failure(key: tuple[Any, ...], fn: Any, err: Exception) -> None:
    FAILURES[key] = (fn, _copied(err))


def _copied(err: Exception) -> Exception:
    """A copy of ``err`` whose text is its own: copy.copy builds an exception again from its
    args, which for an adgen error are its formatted text, then restores its attributes; the
    text said "UnsupportedError: UnsupportedError: file:line: error: ..." after each copy."""
    out = copy.copy(err)
    if hasattr(out, "format") and hasattr(out, "message"):
        out.args = (out.format(),)
    return out


def clear_cache() -> None:
    """Forgets every compiled function (the next call compiles again)."""
    COMPILED.clear()


def compile_key(fn: Any, mutation: str, wrt: tuple[int, ...] | None = None,
                sig: tuple[Any, ...] | None = None, single_use: bool = False
                ) -> tuple[Any, ...]:
    """The key of ``fn``'s reverse-mode compilation (see ``pipeline.compile_function``)."""
    return (id(fn), mutation, registry.generation(), wrt, sig, single_use)


def lookup(key: tuple[Any, ...], fn: Any) -> Compiled | None:
    """``fn``'s compilation under ``key``, if it is there and its guards hold."""
    hit = COMPILED.get(key)
    if hit is not None and hit[0] is fn and (not hit[1].guards or failed(hit[1].guards) is None):
        COMPILED.move_to_end(key)
        return hit[1]
    return None


def remember(key: tuple[Any, ...], fn: Any, compiled: Compiled) -> None:
    COMPILED[key] = (fn, compiled)
    COMPILED.move_to_end(key)
    while len(COMPILED) > CACHE_SIZE:
        COMPILED.popitem(last=False)


def register_nested(code: Any, names: set[str]) -> None:
    """Notes the code objects of the defs named ``names`` nested in ``code`` (a compiled
    forward's), at any depth."""
    for const in code.co_consts:
        if hasattr(const, "co_name") and const.co_name in names:
            NESTED_CODES.add(const)
            register_nested(const, names)


def tangent_key(fn: Any, lifted: tuple[str, ...] = (),
                wrt: tuple[int, ...] | None = None) -> tuple[Any, ...]:
    """The key of ``fn``'s forward-mode compilation (a nested def's: its code object)."""
    return (id(fn) if not lifted else fn.__code__, registry.generation(), lifted, wrt)


def lookup_tangent(key: tuple[Any, ...], fn: Any, lifted: tuple[str, ...]
                   ) -> CompiledTangent | None:
    """``fn``'s forward-mode compilation under ``key``, if it is there and its guards hold
    (a nested def's is shared by every closure of its code)."""
    hit = TANGENTS.get(key)
    if hit is not None and (hit[0] is fn or lifted) and (not hit[1].guards or
                                                       failed(hit[1].guards) is None):
        return hit[1]
    return None


def remember_tangent(key: tuple[Any, ...], fn: Any, compiled: CompiledTangent) -> None:
    TANGENTS[key] = (fn, compiled)
    while len(TANGENTS) > CACHE_SIZE:
        TANGENTS.popitem(last=False)


def late(build: Callable[[], Any], which: str) -> Callable[..., Any]:
    """The function ``which`` (``forward``, ``pullback``, ``jvp``) of what ``build()``
    returns, looked up when it is called: what a recursive call is given while its function
    is compiled."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(build(), which)(*args, **kwargs)

    return call
