"""numba_fast_call: ``adgen.grad``'s call on the numba backend, decided once per signature.

:func:`fast_call` writes, for arguments of the types of a call that ran the generic path, a
function of the arguments that checks only what the contract needs at each call (their exact
types, the rule registry's generation, the function's code, the guards of its free names)
and runs the one compiled gradient call of a :class:`adgen.numba_function.NumbaFunction`;
``adgen.api`` calls it through ``NumbaFunction.fast_call``.
"""

from __future__ import annotations

import functools
import re
import types
from typing import TYPE_CHECKING, Any

import numpy as np

from adgen.numba_cache import source_files
from adgen.numba_errors import dispatch_refused, overwrite_error, saved_view_error
from adgen.numba_function import primal

if TYPE_CHECKING:
    from adgen.numba_function import NumbaFunction

__all__ = ["fast_call"]

_EMPTY = np.empty
_NO_ARGUMENT = object()  # a parameter of fast_call's direct form the call did not give


def _as_given(n: int, g: str, args: tuple[Any, ...]) -> str:
    """The expression of argument ``n``'s gradient from ``g``, the float64 array the
    compiled call wrote it into: that array for a float64 argument, cast to the argument's
    dtype for a float32 one (the numba dispatcher runs this code for arguments of these
    dtypes only)."""
    return g if args[n].dtype == np.float64 else f"AS_GRADIENT({g}, a{n})"


def fast_call(nf: NumbaFunction, args: tuple[Any, ...], nums: tuple[int, ...], single: bool,
              with_value: bool, guards: tuple[Any, ...], generation: list[int],
              compiled_at: int, code: tuple[Any, Any] | None, slow: Any = None) -> Any:
    """``adgen.grad``'s call for arguments of the types of ``args``, decided once (after
    a call of :meth:`gradient` ran them): a function of the arguments' tuple that checks
    only what the contract needs at each call (the arguments' exact types; their dtypes,
    ranks and layouts by numba's dispatcher, which runs nothing for types it was not
    compiled for; the rule registry's generation; that the function's code was not replaced;
    the guards of its free names, those of builtins and globals bound to functions
    inline) and runs the one compiled call, returning the gradient (``(value,
    gradient)`` with ``with_value``), or None where the generic path must take the call.
    None where these arguments need more than that: an array's gradient not written into
    an array allocated here, arguments that must not share memory.
    """
    if len(args) != nf.nparams:
        return None
    # the run of these types: the checks below admit only arguments of the same key
    # (_run_of: an array's dtype and rank, a number's type)
    run = nf.only or nf.runs.get(tuple(
        [(a.dtype, a.ndim) if type(a) is np.ndarray else type(a) for a in args]))
    if run is None or run.gradient is None or run.apart or any(
            n not in run.outs and type(args[n]) is np.ndarray for n in nums):
        return None
    from adgen.adjoints import as_gradient
    from adgen.transforms.bindings import failed

    ns: dict[str, Any] = {"ND": np.ndarray, "EMPTY": _EMPTY, "GEN": generation,
                          "G0": compiled_at, "failed": failed, "RUN": run,
                          "GRADIENT": run.gradient, "AS_GRADIENT": as_gradient,
                          "OVERWRITE": nf.overwrite, "SAVED_VIEW": nf.saved_view,
                          "overwrite_error": overwrite_error,
                          "saved_view_error": functools.partial(
                              saved_view_error, files=source_files(nf.base.trees, nf.callees)),
                          "REFUSED": dispatch_refused, "TYPE": type, "LEN": len,
                          "TYPE_ERROR": TypeError, "VALUE_ERROR": ValueError,
                          # a global or builtin the checks look up that is gone: the
                          # generic path gives the primal's NameError
                          "MISSING": (KeyError, NameError)}
    names = [f"a{k}" for k in range(len(args))]
    checks = []
    for k, a in enumerate(args):
        if type(a) is np.ndarray:
            # its dtype and rank are checked by numba's dispatcher, which refuses the
            # types it has no version for (its compilation is disabled: _call_gradient)
            # and converts no array to another dtype or rank
            checks.append(f"TYPE(a{k}) is ND")
        elif type(a) in (float, int, bool) or isinstance(a, (np.floating, np.integer,
                                                              np.bool_)):
            ns[f"T{k}"] = type(a)  # the run's key holds a number's type
            checks.append(f"TYPE(a{k}) is T{k}")
        else:
            return None
    checks.append("GEN[0] == G0")
    if code is not None:
        ns["CODE"], ns["C0"] = code
        checks.append("CODE.__code__ is C0")
    # The functions below are closures whose globals are the differentiated function's
    # (every name of adgen's is a parameter of the factory that makes them, a cell): a
    # builtin or global function it reads is checked by reading it as the function
    # does, ``len is E0``, which Python's specialised global lookup answers in a few
    # nanoseconds (25-30 ns a name in a dictionary look-up of ours).
    home = getattr(primal(nf.fn), "__globals__", None)
    if not isinstance(home, dict):
        home = {"__builtins__": __builtins__}
    # a name of its own shadows a global of that name there: those globals are looked
    # up in their dictionaries (as are those of another module: a callee's)
    ours = set(ns) | {"out", "cts", "hit", "err", "more", "kwargs", "args", "a", "SLOW",
                      "NO", "REST", "fast_gradient", "fast_direct", "make"}
    rest = []
    for j, g in enumerate(guards):
        # a builtin or a global bound to a function: looked up as Python does, by 'is'
        if g.mode != "same" or g.cell is not None or not isinstance(g.scope, dict) or \
                not g.name.isidentifier():
            rest.append(g)
            continue
        ns[f"E{j}"] = g.expected
        if g.scope is home and g.name not in ours and \
                not re.fullmatch(r"(?:a|g|E|S|B|T|NS)[0-9]+", g.name):
            checks.append(f"{g.name} is E{j}")
            continue
        b = g.scope.get("__builtins__", __builtins__)
        ns[f"S{j}"], ns[f"B{j}"] = g.scope, b if isinstance(b, dict) else vars(b)
        if g.name in g.scope:  # a global of that name: it must stay bound to it
            checks.append(f"S{j}.get({g.name!r}) is E{j}")
        else:  # a builtin: no global shadows it, and the builtins keep it
            checks.append(f"{g.name!r} not in S{j} and B{j}[{g.name!r}] is E{j}")
    if rest:
        ns["REST"] = tuple(rest)
        checks.append("failed(REST) is None")  # refreshes the globals passed as data
    data = ""
    for j, (key, (g, _)) in enumerate(nf.globals.items()):
        if g not in rest:
            return None
        ns[f"NS{j}"] = g.ns
        data += f", NS{j}[{key!r}]"  # their values now, as gradient() passes them
    # a vector's length is cheaper to pass than its shape tuple (about 25 ns)
    grads = "".join(f"        g{k} = EMPTY(LEN(a{k}))\n" if args[k].ndim == 1 else
                    f"        g{k} = EMPTY(a{k}.shape)\n" for k in run.outs)
    if run.code.gradient_value_only:  # the gradient function returns the value alone
        call = f"out = GRADIENT({', '.join(names)}{data}" \
               f"{''.join(f', g{k}' for k in run.outs)})"
        # an argument asked for whose cotangent no array holds is not differentiated (a
        # float read only by comparisons): zero, as the generic path gives it
        each = [_as_given(n, f"g{n}", args) if n in run.outs else
                f"AS_GRADIENT(None, a{n})" for n in nums]
        got = each[0] if single else "(" + "".join(f"{e}, " for e in each) + ")"
    else:
        call = f"out, cts = GRADIENT({', '.join(names)}{data}" \
               f"{''.join(f', g{k}' for k in run.outs)})"
        # a number's cotangent as adgen.grad's generic path gives it
        each = [_as_given(n, f"cts[{n}]", args) if n in run.outs else
                f"AS_GRADIENT(cts[{n}], a{n})" for n in nums]
        got = each[0] if single else "(" + "".join(f"{e}, " for e in each) + ")"
    given = ", ".join(names)
    ns["SLOW"], ns["NO"] = slow, _NO_ARGUMENT

    def text_of(head: str, extra: str, fail: str) -> str:
        # the direct form's missing arguments (NO) fail the type checks: no test of its own
        return (f"{head}"
                f"        try:\n"
                f"            if not ({extra}{' and '.join(checks)}):\n"
                f"                {fail}\n"
                f"        except MISSING:\n"
                f"            {fail}\n"
                f"{grads}"
                f"        try:\n"
                f"            {call}\n"
                f"        except OVERWRITE as hit:\n"
                f"            raise overwrite_error(RUN.code, hit) from None\n"
                f"        except SAVED_VIEW as hit:\n"
                f"            raise saved_view_error(hit) from None\n"
                f"        except TYPE_ERROR as err:\n"
                f"            if REFUSED(err):  # another dtype, rank or layout: nothing ran\n"
                f"                {fail}\n"
                f"            raise\n"
                f"        return {'(out, ' + got + ')' if with_value else got}\n")

    text = (f"def make({', '.join(ns)}):\n" +
            text_of(f"    def fast_gradient(args):\n"
                    f"        try:\n"
                    f"            {given}, = args\n"
                    f"        except VALUE_ERROR:  # another number of arguments\n"
                    f"            return None\n", "", "return None") +
            # the same call taking the arguments as its own parameters, for adgen.grad's
            # partial to call without the closure's frame: anything else goes to SLOW
            # (that closure), as do arguments whose checks fail
            text_of(f"    def fast_direct({', '.join(n + '=NO' for n in names)}, *more, "
                    "**kwargs):\n", "not more and not kwargs and ",
                    f"return SLOW(*[a for a in ({given},) if a is not NO], *more, "
                    "**kwargs)") +
            "    return fast_gradient, fast_direct\n")
    scratch: dict[str, Any] = {}
    exec(compile(text, f"<adgen fast gradient of {nf.base.name}>", "exec"), scratch)
    make = types.FunctionType(scratch["make"].__code__, home)
    fast, direct = make(**ns)
    if slow is not None:
        fast.direct = direct
    return fast
