"""What a standalone module (``adgen FILE -f NAME -o OUT.py``) cannot do without adgen.

Input: the function, its compiled forward/pullback source and the finished module text.
Output: nothing, or an :class:`adgen.UnsupportedError` at generation time, naming the user's
line, for a module that would need adgen when it runs (its header says "Needs numpy only"):

- the function is a closure: the module cannot hold the values of its cells (they would be
  NameErrors when it runs);
- a call adgen resolves only at run time (``runtime.call_forward``: a nested def, a closure
  passed around, a method of an object the function builds): its gradient code is compiled
  when it runs, by adgen;
- a generated function that reads a global the module does not define: a global of another
  module or of a script run as ``__main__``, a callee with a registered rule (its gradient is
  the rule's, in adgen);
- any other import of adgen left in the module (a compiler error, naming this check).

:func:`private_imports` gives the import of the user's private globals that ``import *``
leaves out, :func:`deeper_callees` the generated code of callees' callees; the check itself
rewrites nothing.

"""

from __future__ import annotations

import builtins
import dis
import inspect
import linecache
import re
import types
from typing import Any

from adgen.errors import CompilerError, Location, UnsupportedError

_HINT_SHIP = "or deploy with adgen installed: adgen.grad(f) pickles by reference to workers"


def check_standalone(fn: Any, compiled: Any, source: str, module: str) -> None:
    """Raises UnsupportedError when the standalone ``module`` of ``fn`` would need adgen, or
    would read another value than the compiled code under one of its global names.

    Args:
        fn: the user's function.
        compiled: its compilation (``pipeline.Compiled``).
        source: the generated forward and pullback source (with its callees').
        module: the whole standalone module.
    """
    name = compiled.name
    code = getattr(fn, "__code__", None)
    if code is not None and code.co_freevars:
        cells = ", ".join(code.co_freevars)
        raise UnsupportedError(
            f"{fn.__qualname__} is a closure: it reads {cells} from the function that made it, "
            "and a standalone module cannot hold those values",
            _location(code.co_filename, code.co_firstlineno),
            hint=f"pass {cells} as {'a parameter' if len(code.co_freevars) == 1 else 'parameters'}"
                 f" (or make {'it a module global' if len(code.co_freevars) == 1 else 'them module globals'}) "
                 f"and differentiate that function, {_HINT_SHIP}")
    current, comment = "", None
    for text in source.splitlines():
        header = re.match(r"def (\w+)_pullback\(", text)
        if header:
            current, comment = header.group(1), None
        marker = re.match(r"\s*# line (\d+): (.*)", text)
        if marker:
            comment = marker
        if re.search(r"(?<![\w.])call_pullback\(", text):
            line, what = (int(comment.group(1)), comment.group(2)) if comment else (0, "")
            own = current == name and code is not None
            raise UnsupportedError(
                f"line {line}{f' ({what})' if what else ''} in {current or name} calls a "
                "function adgen resolves only when it runs (a nested def, a function passed "
                "as a value, a method of an object built inside, or a call with *args or "
                "**kwargs): its gradient is compiled "
                "at run time, so the standalone module would need adgen",
                _location(code.co_filename, line) if own and line else None,
                hint="call a module-level function instead (pass what a nested def reads as "
                     f"arguments; a method: a function taking the object), {_HINT_SHIP}")
    if re.search(r"(?<![\w.])checked_callable\(", source):
        # (transforms/unseen_calls.py: what such a callee writes is known when it runs only)
        raise UnsupportedError(
            f"{fn.__qualname__} (or a function it calls) calls a function held in a variable "
            "(a callback, cb()) that adgen runs as it is and checks when it runs, by compiling "
            "it, for in-place writes it cannot see: the standalone module would need adgen",
            _location(code.co_filename, code.co_firstlineno) if code is not None else None,
            hint=f"call a module-level function by its name instead, {_HINT_SHIP}")
    _check_names(fn, compiled, module)
    leftover = re.search(r"^\s*(from adgen\b.*|import adgen\b.*)$", module, re.MULTILINE)
    if leftover:
        raise CompilerError(f"standalone check: the module of {fn.__qualname__} still has "
                            f"'{leftover.group(1).strip()}', so it would need adgen")


def private_imports(fn: Any, source: str) -> str:
    """The import line for the globals of ``fn``'s module that ``source`` reads and that
    ``from MODULE import *`` leaves out (names with a leading underscore, names outside
    ``__all__``); "" when there are none."""
    module = inspect.getmodule(fn)
    if module is None or module.__name__ == "__main__":
        return ""
    names = vars(module)
    public = set(getattr(module, "__all__", [n for n in names if not n.startswith("_")]))
    used = set(re.findall(r"\b[A-Za-z_]\w*\b", source))
    needed = sorted(n for n in used & set(names) if n not in public and not n.startswith("__"))
    if not needed:
        return ""
    return f"from {module.__name__} import {', '.join(needed)}  # names import * leaves out"


def deeper_callees(compiled: Any) -> str:
    """The generated code of the callees of ``compiled``'s callees, and theirs (its source
    holds its direct callees'), each once, as the caller names them; "" when there are none.

    Raises:
        UnsupportedError: two different functions would get the same name in the module.
    """
    named: dict[str, str] = {compiled.name: compiled.own_source}
    named.update({n: c.own_source for n, c in compiled.callees.items()})
    out: list[str] = []
    todo = list(compiled.callees.values())
    while todo:
        caller = todo.pop(0)
        for name, callee in caller.callees.items():
            text = callee.own_source
            if name != callee.name:  # numbered in its caller: shown under that name
                text = re.sub(rf"\b{re.escape(callee.name)}_(forward|pullback)\b",
                              rf"{name}_\1", text)
            if name in named:
                if named[name] != text and named[name] != callee.own_source:
                    raise UnsupportedError(
                        f"{caller.name} and another function both call a function named "
                        f"{name}, and they are different functions: one standalone module "
                        "cannot hold both gradients", hint=f"rename one of them, {_HINT_SHIP}")
                continue
            named[name] = text
            out.append(text)
            todo.append(callee)
    return "".join(text + "\n\n" for text in reversed(out))


def _by_name(compiled: Any) -> dict[str, Any]:
    """Every compilation in ``compiled``'s call tree by the name its generated pair has."""
    found = {compiled.name: compiled}
    todo = [compiled]
    while todo:
        for name, callee in todo.pop().callees.items():
            if name not in found:
                found[name] = callee
                todo.append(callee)
    return found


def _same(a: Any, b: Any) -> bool:
    return a is b or (type(a) is type(b) and isinstance(a, (int, float, complex, str, bytes))
                      and a == b)


def _check_names(fn: Any, compiled: Any, module: str) -> None:
    """Runs the module's definitions and refuses it when a generated function reads a global
    name the module does not define (a global of another module), or defines as another
    object than the compiled code reads (two modules' globals of one name)."""
    compiled_by_name = _by_name(compiled)
    namespace: dict[str, Any] = {"__name__": "adgen_standalone_check"}
    exec(compile(module, "<standalone module>", "exec"), namespace)  # noqa: S102 (our text)
    for name, value in namespace.items():
        if not (isinstance(value, types.FunctionType) and
                name.endswith(("_forward", "_pullback")) and
                value.__code__.co_filename == "<standalone module>"):
            continue
        user = name.rsplit("_", 1)[0]
        source_compiled = compiled_by_name.get(user)
        expected = source_compiled.forward.__globals__ if source_compiled is not None else {}
        for missing in _global_reads(value.__code__):
            if missing in namespace and missing in expected and not missing.endswith(
                    ("_forward", "_pullback")) and not str(getattr(
                        expected[missing], "__module__", "")).startswith("adgen") and \
                    not _same(namespace[missing], expected[missing]):
                raise UnsupportedError(
                    f"the standalone module of {fn.__qualname__} would give {user} another "
                    f"{missing} than the one it reads (two modules define {missing})",
                    _location(fn.__code__.co_filename, fn.__code__.co_firstlineno)
                    if hasattr(fn, "__code__") else None,
                    hint=f"rename one of the two, {_HINT_SHIP}")
            if missing in namespace or hasattr(builtins, missing):
                continue
            what = (f"the gradient of {missing.rsplit('_', 1)[0]}, which {user} calls, is not "
                    "generated code (a registered rule's, which lives in adgen)"
                    if missing.endswith(("_forward", "_pullback"))
                    else f"{user} reads {missing}, which the module cannot import (a global "
                         "of another module, or of a script run as __main__)")
            raise UnsupportedError(
                f"the standalone module of {fn.__qualname__} would fail: {what}",
                _location(fn.__code__.co_filename, fn.__code__.co_firstlineno)
                if hasattr(fn, "__code__") else None,
                hint="differentiate a function whose callees are module-level functions of "
                     f"its own module, {_HINT_SHIP}")


def _global_reads(code: types.CodeType) -> set[str]:
    """The global names a code object (and the code nested in it) loads."""
    names = {i.argval for i in dis.get_instructions(code)
             if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_reads(const)
    return names



def _location(file: str, line: int) -> Location:
    return Location(file, line, 0, linecache.getline(file, line))
