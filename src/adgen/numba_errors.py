"""numba_errors: what the numba backend's compiled code raises, as adgen errors.

- :func:`overwrite_error`: a nopython guard of mutation="strict" (``StrictOverwrite``) as the
  MutationError the default backend raises, naming both lines;
- :func:`saved_view_error`: a callee's saved view the pullback cannot redirect
  (``SavedViewRefused``);
- :func:`located`: numba's typing or lowering errors on the user's line (the nopython
  module's lines mapped back through ``NumbaCode.lines``);
- :func:`dispatch_refused`: whether numba's dispatcher refused the arguments' types before
  running anything.
"""

from __future__ import annotations

import linecache
import os
import re
from typing import Any

from adgen.errors import Location, MutationError, UnsupportedError

__all__ = ["dispatch_refused", "located", "location", "overwrite_error", "saved_view_error"]


def overwrite_error(code: Any, hit: Exception) -> MutationError:
    """The MutationError of a nopython guard under mutation="strict" (``StrictOverwrite(write
    site, bits of the capture sites)``, numbered as ``code.strict_writes`` /
    ``strict_captures``): the message, both locations and the hint of the default backend's
    guard (``adgen.runtime.before_write``), the lowest capture site named first."""
    from adgen.runtime import copy_hint

    site, mask = hit.args
    file, line, col, construct = code.strict_writes[site]
    hits = [c for k, c in enumerate(code.strict_captures) if mask >> k & 1]
    first_file, first_line, what = hits[0]
    also = "".join(f"; the gradient of line {ln} reads it too"
                   for ln in sorted({h[1] for h in hits}) if ln != first_line)
    return MutationError(
        f"{construct} overwrites {what}, which the gradient of line {first_line} reads{also}",
        Location(file, line, col, linecache.getline(file, line)),
        # (where the write's own gradient reads the value too, a copy made before the line
        # is overwritten in its turn: the hint says to compute it out of place, as
        # guards.before_write's does)
        hint=copy_hint(construct, what, line if any(
            (h[0], h[1]) == (file, line) for h in hits) else first_line, line,
            file if first_file == file else None),
        captured_at=Location(first_file, first_line, 0,
                             linecache.getline(first_file, first_line)))


def saved_view_error(hit: Exception, files: list[str] | None = None) -> UnsupportedError:
    """The error of a callee's saved view the numba pullback cannot redirect to the copy its
    caller took (``SavedViewRefused("name:line")`` of the call: the file's name, found among
    ``files``, the function's and its callees' files)."""
    file, _, line = hit.args[0].rpartition(":")
    found = [f for f in files or () if os.path.basename(f) == file]
    if len(found) == 1:
        file = found[0]
    src = linecache.getline(file, int(line)) if line.isdigit() and int(line) else ""
    loc = Location(file, int(line), len(src) - len(src.lstrip()), src) if src else None
    return UnsupportedError(
        "the numba backend cannot point a view this callee saved of an argument, which the "
        "caller then overwrote, at the copy taken before the overwrite: the argument is not "
        "C-contiguous (its copy has other strides)", loc,
        hint="pass the callee a contiguous array (np.ascontiguousarray), or use "
             "backend='default'")


def dispatch_refused(err: BaseException) -> bool:
    """Whether numba's dispatcher raised ``err`` (a TypeError) before running any code: no
    version compiled for the arguments' types, and compilation disabled. Its innermost frame
    is the dispatcher's ``_explain_matching_error``; a TypeError the compiled code raises
    has the function's own frame there."""
    from numba.core.dispatcher import _DispatcherBase

    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and \
        tb.tb_frame.f_code is _DispatcherBase._explain_matching_error.__code__


def located(err: Exception, code: Any, path: str, file: str) -> UnsupportedError:
    """A numba error as an adgen error on the user's line (``file`` is the function's: a
    line of a callee's names its own file, from ``code.files``)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))
    line = 0
    base = re.escape(os.path.basename(path))
    for m in re.finditer(rf'{base}", line (\d+)|{base} \((\d+)\)', text):
        if not line:
            at = int(m.group(1) or m.group(2))
            line = code.lines.get(at, 0)
            file = code.files.get(at, file)  # a callee's line, in its own file
    missing = re.search(r"name '(\w+)' is not defined", text)
    if not line and missing:
        # numba's NameError names no line: the first line of the module that reads the name
        for at, src in enumerate(code.source.splitlines(), 1):
            if code.lines.get(at) and re.search(rf"\b{missing.group(1)}\b", src):
                line, file = code.lines[at], code.files.get(at, file)
                break
    skip = ("Failed in", "During", "File ", "<source elided>", "Rejected", "With arg",
            "raised from")
    first = next((s.strip() for s in text.splitlines() if s.strip() and
                  not s.strip().startswith(skip)), text)[:300]
    # numba's matrix product takes two arrays of one dtype (NumPy's casts): where adgen's
    # type analysis could not tell an operand's dtype (numba_call_forms.float32_products)
    if re.search(r"(?:'@'|np\.dot\(\)) arguments must all have the same dtype", text):
        sig = re.search(r">>> \w+\((array\((\w+)[^)]*\)), (array\((\w+)[^)]*\))\)", text)
        given = f"{sig.group(1)} and {sig.group(3)}" if sig else "two"
        narrow, wide = (sig.group(2), _numpy_result(sig.group(2), sig.group(4))) if sig else \
            ("float32", "float64")
        if sig and narrow == wide:
            narrow = sig.group(4)
        return UnsupportedError(
            f"numba's matrix product (@, np.dot) takes two arrays of one dtype, and the "
            f"gradient code of this line gives it {given} (NumPy computes the product in "
            f"{wide})", location(file, line),
            hint=f"cast the {narrow} one to {wide} where you multiply them "
                 f"(A.astype(np.{wide}) @ B), or pass arrays of one dtype; or use "
                 "backend='default' (or 'auto', which falls back to it)")
    # a name numba cannot give one type (u = 0.9 * u + 0.1 of a float32 array in a loop:
    # float32 before, float64 after), named as the user wrote it (u_1.2 is u)
    unify = re.search(r"Cannot unify (.+?) and (.+?) for '([A-Za-z_][\w.]*)'", text)
    if unify:
        a, b, name = unify.group(1), unify.group(2), unify.group(3).split(".")[0]
        base, _, suffix = name.rpartition("_")
        name = base if base and suffix.isdigit() else name
        mixed = {"float32", "float64"} <= {t.split("(")[-1].split(",")[0] for t in (a, b)}
        return UnsupportedError(
            f"numba cannot give {name} one type: it is {a} on one path and {b} on another"
            + (" (numba computes a float32 array with a float64 number or array in float64: "
               "0.9 * u is float64, where NumPy keeps float32)" if mixed else ""),
            location(file, line),
            hint=(f"keep {name} float32: write the numbers as float32 (np.float32(0.9) * "
                  f"{name}), or pass float64 arrays (x.astype(np.float64)); or use "
                  "backend='default' (or 'auto', which falls back to it)") if mixed else
            f"bind {name} to values of one type on every path, or use backend='default' (or "
            "'auto', which falls back to it)")
    if missing:
        # a function called for a value no derivative goes through (j = first_index(x),
        # then x[j]): the default backend calls it as it is, the module has no such name
        name = missing.group(1)
        return UnsupportedError(
            f"the numba backend cannot call {name} here: it compiles into its module the "
            "functions the gradient goes through, and the numbers and arrays the function "
            f"reads, and {name} is neither (called for a value no derivative goes through: "
            "an index, a count, a test)", location(file, line),
            hint=f"compute that value in the function's own code (the loop of {name} "
                 "written where it is called), or pass it as an argument; or use "
                 "backend='default' (or 'auto', which falls back to it)")
    # a refusal of adgen.numba_runtime's own (an overload typing a value it cannot take)
    own = re.search(r"TypingError: (the numba backend [^\n]*)", text)
    if own:
        return UnsupportedError(own.group(1), location(file, line),
                                hint="use backend='default' (or 'auto', which falls back "
                                     "to it), or write into a copy so the site is free")
    return UnsupportedError(
        f"numba's nopython mode cannot compile the gradient code of this line: {first}",
        location(file, line),
        hint="use backend='default' (or 'auto', which falls back to it); "
             "adgen.source(f, *args, backend='numba') shows the code")


def _numpy_result(a: str, b: str) -> str:
    """NumPy's result dtype of two numba dtype names (``float32``, ``float64``)."""
    import numpy as np

    try:
        return str(np.result_type(np.dtype(a), np.dtype(b)))
    except TypeError:
        return f"{a} and {b}"


def location(file: str, line: int) -> Location | None:
    """The user's ``file`` at ``line`` (None for line 0)."""
    src = linecache.getline(file, line) if line else ""
    return Location(file, line, len(src) - len(src.lstrip()), src) if line else None
