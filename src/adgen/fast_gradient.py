"""``adgen.grad``'s call on the default backend, decided once per argument signature.

The generic path of a gradient call (``gradient_function.gradient_function``) works out at each call what
it has to check: the signature (a tuple it builds and looks up), the cache entry's fourteen
facts, each differentiated argument's kind, the policy for complex values. For the common
call (positional float64 arrays and numbers, no ``has_aux``, a forward with no guard scope,
no container the function changes in place, no complex values) all of that is decided by the
first call of a signature; at its second call (a first call, the cold start, compiles none)
:func:`fast_call` writes it out as a function whose checks are the ones the contract needs at
every call, inline:

- each argument's exact type (an array's dtype and rank too), so the signature is the one the
  code was compiled for (``kinds.signature``: a float64 array's rank, ``FLOAT_ARG`` for a
  float, ``NUMBER`` for an int);
- the rule registry's generation (a rule registered since: recompile);
- that the function's code was not replaced, and its other free-name guards
  (``bindings.failed``, which also refreshes the values passed as data);
- for a function that writes in place only, that no argument shares memory with a global
  array it reads (``aliased_globals``, which raises);

then runs the forward and the pullback and checks the output and the cotangents as the
generic path does. Any check that fails sends the call to the generic path, which recompiles
where needed and decides again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_F64 = np.dtype(np.float64)
_NO_ARGUMENT = object()  # a parameter of the direct form that the call did not give


def fast_call(args: tuple[Any, ...], nums: tuple[int, ...], single: bool, with_value: bool,
              compiled: Any, guards: tuple[Any, ...], generation: list[int], compiled_at: int,
              code: tuple[Any, Any] | None, helpers: dict[str, Any],
              slow: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """The call of a gradient for arguments of the types of ``args``, or None where they
    need the generic path.

    Args:
        args: the arguments of a call the generic path just took (positional only).
        nums: the differentiated positions (normalised argnums).
        single: argnums was an int (the gradient itself, not a tuple of one).
        with_value: the call returns ``(value, gradient)``.
        compiled: the compiled function (its ``forward`` and ``pullback``).
        guards: its free-name guards other than ``code`` (``bindings.failed``).
        generation: the rule registry's generation cell; ``compiled_at`` its value then.
        code: (the function, its ``__code__`` then), or None.
        helpers: the generic path's own helpers, by name: ``annotate``, ``scalar_output``,
            ``run_pullback`` (the pullback again after ``exc``, a complex cotangent into a
            real buffer: refused for a single-use pullback), ``run_ieee`` (the pullback
            again with NumPy numbers after Python's float arithmetic raised in it, one of
            ``ieee_errors``), ``into_real``, ``as_gradient``, ``failed``, ``complex_refs``
            and ``complex_pullbacks``; and ``refuse_aliased`` (the arguments' check of
            ``aliased_globals``) for a function that writes in place.
        slow: the generic call (the gradient closure), which the direct form calls when its
            checks fail.

    Returns:
        ``(fast, direct)``: ``fast(args)`` returns the result, or None when a check fails
        (nothing ran); ``direct(*args, **kwargs)`` takes the arguments itself and calls
        ``slow`` when a check fails. None when these arguments need the generic path.
    """
    ns: dict[str, Any] = {"ND": np.ndarray, "F64": _F64, "TYPE": type, "GEN": generation,
                          "G0": compiled_at, "FORWARD": compiled.forward,
                          "PULLBACK": compiled.pullback, "COMPILED": compiled,
                          "FLOAT": float, "F64S": np.float64, "TYPE_ERROR": TypeError,
                          "VALUE_ERROR": ValueError, "SLOW": slow, "NO": _NO_ARGUMENT,
                          **{k.upper(): v for k, v in helpers.items()}}
    checks = []
    for k, a in enumerate(args):
        t = type(a)
        if t is np.ndarray and a.dtype is _F64:
            checks.append(f"TYPE(a{k}) is ND and a{k}.dtype is F64 and a{k}.ndim == {a.ndim}")
        elif t is float or (k not in nums and (t is int or t is np.float64)):
            # an int is not differentiated (the generic path refuses it); np.float64 is,
            # there after check_differentiable: not here
            ns[f"T{k}"] = t
            checks.append(f"TYPE(a{k}) is T{k}")
        else:
            return None
    checks.append("GEN[0] == G0")
    if code is not None:
        ns["CODE"], ns["C0"] = code
        checks.append("CODE.__code__ is C0")
    if guards:
        ns["GUARDS"] = guards
        checks.append("FAILED(GUARDS) is None")  # refreshes the globals passed as data
    names = [f"a{k}" for k in range(len(args))]
    given = ", ".join(names)
    # a function that writes in place: an argument sharing a global's memory is refused
    # (api.refuse_aliased_globals; absent for the functions that write nothing)
    aliased = f"        REFUSE_ALIASED(({given},))\n" if "refuse_aliased" in helpers else ""
    each = []
    for n in nums:
        if type(args[n]) is np.ndarray:  # already a gradient when the pullback made one
            each.append(f"        g{n} = cts[{n}]\n"
                        f"        if not (TYPE(g{n}) is ND and g{n}.dtype is F64 and "
                        f"g{n}.shape == a{n}.shape):\n"
                        f"            g{n} = AS_GRADIENT(g{n}, a{n})\n")
        else:
            each.append(f"        g{n} = AS_GRADIENT(cts[{n}], a{n})\n")
    got = f"g{nums[0]}" if single else "(" + "".join(f"g{n}, " for n in nums) + ")"

    def text_of(head: str, fail: str) -> str:
        return (f"{head}"
                f"        if not ({' and '.join(checks)}):\n"
                f"            {fail}\n"
                f"{aliased}"
                f"        try:\n"
                f"            out, saved = FORWARD({given})\n"
                f"        except Exception as exc:\n"
                f"            ANNOTATE(exc, COMPILED)  # the user's line, not only ours\n"
                f"            raise\n"
                f"        seed = 1.0 if TYPE(out) is F64S or TYPE(out) is FLOAT else "
                f"SCALAR_OUTPUT(out)\n"
                f"        if COMPLEX_REFS and PULLBACK in COMPLEX_PULLBACKS:\n"
                f"            cts = RUN_PULLBACK(PULLBACK, saved, seed)\n"
                f"        else:\n"
                f"            try:\n"
                f"                cts = PULLBACK(saved, seed)\n"
                f"            except TYPE_ERROR as exc:\n"
                f"                if not INTO_REAL(exc):\n"
                f"                    raise\n"
                f"                cts = RUN_PULLBACK(PULLBACK, saved, seed, exc)\n"
                f"            except IEEE_ERRORS as exc:\n"
                f"                cts = RUN_IEEE(PULLBACK, saved, seed, exc)\n"
                f"{''.join(each)}"
                f"        return {'(out, ' + got + ')' if with_value else got}\n")

    text = (f"def make({', '.join(ns)}):\n" +
            text_of("    def fast_gradient(args):\n"
                    "        try:\n"
                    f"            {given}, = args\n"
                    "        except VALUE_ERROR:  # another number of arguments\n"
                    "            return None\n", "return None") +
            # the same call taking the arguments as its own parameters (positional only: a
            # keyword of the user's named a0 goes to **kwargs), for the gradient function's
            # partial to call without the closure's frame
            text_of(f"    def fast_direct({', '.join(n + '=NO' for n in names)}, /, *more, "
                    "**kwargs):\n"
                    "        if more or kwargs:\n"
                    f"            return SLOW(*[a for a in ({given},) if a is not NO], *more, "
                    "**kwargs)\n",
                    f"return SLOW(*[a for a in ({given},) if a is not NO])") +
            "    return fast_gradient, fast_direct\n")
    scratch: dict[str, Any] = {}
    exec(compile(text, f"<adgen fast gradient of {compiled.forward.__name__}>", "exec"),
         scratch)  # noqa: S102 - our own text, from names we made
    return scratch["make"](**ns)
