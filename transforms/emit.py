"""Emit: generated FunctionDefs to Python source (``ast.unparse``) and to live functions.

Input: gast FunctionDefs from the reverse pass. Output: source text, and functions compiled
through ``linecache`` so tracebacks, pdb and ``inspect.getsource`` show the generated code.
The text is the standard library's ``ast.unparse`` of the tree, printed from the gast nodes
themselves (``gast_unparse``); adgen needs no third-party unparser.

A linecache entry lives as long as a function compiled from it: it is released when the last
of them is garbage-collected, so dropping compiled functions (``pipeline.clear_cache()``, a
collected user function) does not leave their sources behind. Two live sources never share a
file name (a function compiled for two argument signatures gets ``<adgen f save forward>``
and ``<adgen f save forward #2>``), so a traceback shows the lines that ran.
"""

from __future__ import annotations

import linecache
import re
import threading
import types
import weakref
from typing import Any

import gast
from adgen.transforms.gast_unparse import unparse

_COMMENT = re.compile(r"^(\s*)(['\"])\\x00(# .*)\2$", re.MULTILINE)


def to_source(node: gast.AST) -> str:
    """Source text of a gast node, with the reverse pass's comment markers as comments."""
    text = unparse(node)
    return _COMMENT.sub(lambda m: m.group(1) + m.group(3).replace("\\'", "'"), text)


class _Lines:
    """A source registered in linecache, and how many live functions were compiled from it."""

    __slots__ = ("entry", "users")

    def __init__(self, entry: tuple[Any, ...]) -> None:
        self.entry = entry
        self.users = 0


_LIVE: dict[str, _Lines] = {}
# generated file name -> the user's file whose lines its "# line N:" comments give
# (adgen.errors locates an error found in generated code at the user's line)
USER_FILES: dict[str, str] = {}
# A function can be collected in any thread, at any allocation (even inside compile_source):
# its finalizer queues the name, and whoever holds the lock (or gets it) releases the lines.
_LOCK = threading.Lock()
_DROPPED: list[str] = []


def compile_source(source: str, filename: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Executes ``source`` in ``namespace`` under ``filename``, registered in linecache.

    When another live source is registered under ``filename``, the code gets the first free
    name ``filename`` with `` #2``, `` #3``... before its closing ``>``.
    """
    lines = source.splitlines(keepends=True)
    with _LOCK:
        filename, held = _claim(filename, lines, len(source))
        held.users += 1  # while it compiles and runs
        if "__adgen_file__" in namespace:  # the user's file its "# line N:" comments name
            USER_FILES[filename] = namespace["__adgen_file__"]
    defined: list[types.FunctionType] = []
    try:
        code = compile(source, filename, "exec")
        exec(code, namespace)  # noqa: S102 - this is the compiler's output
        codes = {id(c) for c in code.co_consts if isinstance(c, types.CodeType)}
        defined = [v for v in namespace.values()
                   if isinstance(v, types.FunctionType) and id(v.__code__) in codes]
    finally:
        with _LOCK:
            held.users += len(defined) - 1
            for function in defined:
                weakref.finalize(function, _dropped, filename)
            if held.users <= 0:
                _release(filename)
            _drain()
    return namespace


def unnumbered(filename: str) -> str:
    """``filename`` as its compiler named it, without the `` #N`` :func:`compile_source` adds
    while another live source holds the name (``<adgen fill jvp #2>`` -> ``<adgen fill jvp>``):
    what code that recognises generated files by their names compares."""
    return re.sub(r" #\d+>$", ">", filename)


def _claim(filename: str, lines: list[str], size: int) -> tuple[str, _Lines]:
    """The name to compile ``lines`` under (``filename``, unless another live source has it)
    and its record; registers the lines in linecache."""
    name, n = filename, 1
    while True:
        held = _LIVE.get(name)
        if held is None:
            held = _LIVE[name] = _Lines((size, None, lines, name))
            break
        if held.entry[2] == lines:
            break  # the same source again (compiled for another caller): shared
        n += 1
        name = f"{filename[:-1]} #{n}>" if filename.endswith(">") else f"{filename} #{n}"
    linecache.cache[name] = held.entry  # (again, in case linecache.clearcache() dropped it)
    return name, held


def _dropped(filename: str) -> None:
    """A function compiled from ``filename`` was collected."""
    _DROPPED.append(filename)
    if _LOCK.acquire(blocking=False):  # else the holder drains the queue when it is done
        try:
            _drain()
        finally:
            _LOCK.release()


def _drain() -> None:
    while _DROPPED:
        filename = _DROPPED.pop()
        held = _LIVE.get(filename)
        if held is not None:
            held.users -= 1
            if held.users <= 0:
                _release(filename)


def _release(filename: str) -> None:
    held = _LIVE.pop(filename, None)
    if held is not None and linecache.cache.get(filename) is held.entry:
        del linecache.cache[filename]
