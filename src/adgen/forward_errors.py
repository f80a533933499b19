"""Where in the user's code an exception raised during a forward pass came from.

The forward functions adgen generates run the user's code (a shape mismatch, a ZeroDivisionError
in their own helper, a refusal raised by a reference implementation at run time), but their
frames are adgen's: the traceback names ``<adgen loss save> forward`` and, printed by Python's
own hook, shows no source line at all. The generated forward has no ``# line N:`` comments (the
pullback has); its tree keeps the user's line of each statement (``Compiled.trees``). This
module pairs the generated source's statements with the tree's, finds the user's line of the
innermost generated frame, and says it: an adgen error without a location gets that location;
any other exception gets a note (PEP 678), printed under it by Python.
"""

from __future__ import annotations

import ast
import linecache
import os
from typing import Any

from adgen.errors import AdgenError, Location, UnsupportedError, installed_file

__all__ = ["annotate"]

_ADGEN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def annotate(exc: BaseException, compiled: Any) -> None:
    """Names the user's line where ``exc`` was raised in the forward pass of ``compiled`` (or
    of one of its callees), or in generated code with ``# line N:`` comments (jvp code, a
    pullback; ``compiled`` None), if it was raised there and the line is known.

    Raises:
        UnsupportedError: in place of the TypeError of ``obj.fill(v)`` taken for an ndarray's
            on an object of the user's (``_fill_taken``), at that line."""
    if getattr(exc, "__adgen_located__", False):
        return
    _user_function_name(exc, compiled)
    codes = _forward_codes(compiled, {})
    tb = exc.__traceback__
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    library = None
    for code, lineno in reversed(frames):
        owner = codes.get(code)
        if owner is not None:
            where = _user_location(owner, code.co_filename, lineno)
        else:  # jvp code, a pullback: their "# line N:" comments say
            where = _commented_line(code.co_filename, lineno)
        if where is not None and where.file.startswith("<adgen "):
            where = _commented_line(where.file, where.line)  # code generated from generated code
        if where is None:
            if owner is None:
                continue
            return
        if where.file.startswith(_ADGEN_DIR):
            continue  # a reference implementation (np.interp's): the user's call is outside
        if installed_file(where.file):
            # a library's function adgen compiled (scipy's multivariate_normal.logpdf, which
            # refused a call it makes when it ran): the user's call is further out
            library = library or (owner, code, where)
            continue
        _locate(exc, owner, code, where)
        return
    if library is not None:  # the user called no compiled function: the library's line
        _locate(exc, *library)


def _locate(exc: BaseException, owner: Any, code: Any, where: Location) -> None:
    """Says ``where`` (the user's line of ``code``, a frame of ``owner``'s forward) in
    ``exc``: its location, or its call's, or a note."""
    try:
        exc.__adgen_located__ = True  # type: ignore[attr-defined]  # an outer call: once
        if isinstance(exc, AdgenError):
            if owner is not None:
                _callee_in_users_words(exc, owner, code.co_filename)
            if exc.location is None:
                exc.location = where
                exc.args = (exc.format(),)
            elif exc.location.file != where.file or \
                    getattr(exc, "at_callee_def", False):
                # refused compiling a function called through a variable, a method or
                # an object (dispatch.forward_of), in another file: at the user's call
                exc.at_call(where, getattr(exc, "called", None))
        elif hasattr(exc, "add_note"):
            taken = _fill_taken(exc, where)
            if taken:
                refused = UnsupportedError(taken[0], where, hint=taken[1])
                refused.__adgen_located__ = True  # type: ignore[attr-defined]
                raise refused from exc
            exc.add_note(f"adgen: raised while differentiating your code, at {where}:"
                         f"\n    {where.source_line.strip()}")
    except (AttributeError, TypeError):  # an exception that takes no attributes: as it is
        pass


def _callee_in_users_words(exc: AdgenError, owner: Any, file: str) -> None:
    """A refused callee defined inside the forward of ``owner`` (the user's nested def or
    lambda, which the forward defines again: ``f_forward.<locals>.g`` at ``<adgen f save>:4``,
    dispatch.forward_of) named by its line in the user's source: "the lambda at model.py:6
    (g = lambda o, v: fill(o, v))"."""
    shown, code = getattr(exc, "callee_shown", (None, None))
    if shown is None or code.co_filename != file or shown not in exc.message:
        return
    where = _user_location(owner, file, code.co_firstlineno)
    if where is None:
        return
    text = where.source_line.strip()
    users = f"the lambda at {where.file}:{where.line} ({text})" if "lambda" in text else \
        f"{code.co_name} ({where.file}:{where.line})"
    exc.message = exc.message.replace(shown, users)
    exc.args = (exc.format(),)


def _fill_taken(exc: BaseException, where: Location) -> tuple[str, str] | None:
    """The refusal (message, hint) where ``obj.fill(v)`` of an object of the user's was taken
    for an ndarray's (lowered as ``obj[...] = v``: transforms/lower_mutation.py; the function
    reads nothing else of ``obj`` that tells an object from an array), so the store raised
    "'Field' object does not support item assignment"; else None. (Before session 16 that
    TypeError was raised, with a note saying this.)"""
    import re

    message = str(exc.args[0]) if isinstance(exc, TypeError) and exc.args else ""
    cls = re.match(r"'(\w+)' object does not support item assignment", message)
    call = re.search(r"(\w+)\.fill\(([^()]*)\)", where.source_line)
    if cls is None or call is None:
        return None
    obj, arg = call.group(1), call.group(2)
    return (f"adgen took {obj}.fill({arg}) for an ndarray's fill ({obj}[...] = {arg}), and "
            f"{obj} is a {cls.group(1)}: the function reads nothing else of {obj} that tells "
            "it is an object",
            f"annotate the parameter ({obj}: {cls.group(1)}) or call the method through its "
            f"class, {cls.group(1)}.fill({obj}, {arg}): adgen then differentiates your method")


def _user_function_name(exc: BaseException, compiled: Any) -> None:
    """A call that does not bind (``grad(loss)(x, w=w)``: "loss_forward() got multiple values
    for argument 'w'") names the user's function, as the plain call's TypeError does."""
    name = getattr(getattr(compiled, "forward", None), "__name__", "")
    message = exc.args[0] if isinstance(exc, TypeError) and exc.args else None
    if name.endswith("_forward") and isinstance(message, str) and \
            message.startswith(f"{name}() "):
        exc.args = (f"{name[:-len('_forward')]}(){message[len(name) + 2:]}", *exc.args[1:])


def _forward_codes(compiled: Any, out: dict[Any, Any]) -> dict[Any, Any]:
    """The code objects of ``compiled``'s forward and its callees' -> their Compiled."""
    forward = getattr(compiled, "forward", None)
    code = getattr(forward, "__code__", None)
    if code is None or code in out:
        return out
    out[code] = compiled
    for callee in (getattr(compiled, "callees", None) or {}).values():
        _forward_codes(callee, out)
    return out


def _user_location(compiled: Any, file: str, lineno: int) -> Location | None:
    """The user's line of the generated forward statement at ``lineno`` of ``file``."""
    trees = getattr(compiled, "trees", None)
    if not trees or trees[0] is None:
        return None
    lines = linecache.getlines(file)
    try:
        module = ast.parse("".join(lines))
    except SyntaxError:
        return None
    defs = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    generated = _statements(defs[0]) if defs else []
    original = _statements(trees[0])
    if len(generated) != len(original):
        return None  # not the source of this tree: say nothing rather than a wrong line
    found = None
    for k, s in enumerate(generated):
        if s.lineno <= lineno <= (s.end_lineno or s.lineno):
            found = k  # the innermost statement holding the line (the last one, in order)
    if found is None:
        return None
    for k in range(found, -1, -1):  # a statement adgen added: the user's one before it
        line = getattr(original[k], "lineno", None)
        if line:
            user_file = trees[2]
            text = linecache.getline(user_file, line)
            return Location(user_file, line, len(text) - len(text.lstrip()), text)
    return None


def _commented_line(file: str, lineno: int) -> Location | None:
    """The user's line of line ``lineno`` of generated code that carries ``# line N:``
    comments (jvp code, pullbacks), in the user's file it was compiled for."""
    import re

    from adgen.transforms.emit import USER_FILES

    user_file = USER_FILES.get(file)
    if user_file is None:
        return None
    lines = linecache.getlines(file)
    for k in range(min(lineno, len(lines)) - 1, -1, -1):
        found = re.match(r"\s*# line (\d+):", lines[k])
        if found:
            n = int(found.group(1))
            text = linecache.getline(user_file, n)
            return Location(user_file, n, len(text) - len(text.lstrip()), text)
    return None


def _statements(fn: Any) -> list[Any]:
    """The statements of a function, in source order (nested blocks after their header)."""
    out: list[Any] = []

    def visit(node: Any) -> None:
        for field in ("body", "orelse", "handlers", "finalbody"):
            for s in getattr(node, field, None) or []:
                if type(s).__name__ != "ExceptHandler":
                    out.append(s)
                visit(s)

    visit(fn)
    return out
