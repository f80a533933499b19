"""Forward mode's tangent of a nested def or lambda taken as a value.

``[lambda t: t ** 2, lambda t: np.exp(t) * x[0]]`` handed to a helper that calls the items:
the second function's result depends on ``x`` through its closure, which the helper's jvp
code cannot see. The tangent code of the enclosing function gives such a function, where it
is read as a value, the tangent :func:`closure_tangent` makes: the values of the enclosing
function's variables it reads that carry a derivative, and their tangents. Where the
function is called through a variable (``runtime.call_jvp`` with the function as its own
owner), :func:`closure_arguments` lines the call up with the jvp of the function's code,
compiled with its free variables as trailing parameters (``nested_defs``' lifting, as forward
mode compiles a nested def called by its name), the values its cells hold when it is called,
and those tangents.

A :class:`ClosureTangent` is the pair ``(values, tangents)`` (a tuple), so reverse mode, over
the tangent code (hessian, hvp), adds and zeros its cotangents as a tuple's: the cotangent of
the pair goes back to the values and tangents it was made of (``closure_tangent``'s rule).
"""

from __future__ import annotations

import inspect
import types
import weakref
from typing import Any

import numpy as np

# the functions a ClosureTangent was made for (weakly held): forward mode meeting one of them
# without its tangent (a path that dropped it) refuses the call instead of taking its
# variables for constants
_MADE: weakref.WeakSet[Any] = weakref.WeakSet()
_INNER: dict[types.CodeType, tuple[Any, tuple[str, ...]]] = {}


class ClosureTangent(tuple):
    """``(values, tangents)`` of the enclosing function's variables with a derivative that
    the nested def or lambda ``fn`` reads, by ``names``."""

    def __new__(cls, fn: Any, names: tuple[str, ...], values: tuple[Any, ...],
                tangents: tuple[Any, ...]) -> ClosureTangent:
        made = super().__new__(cls, (tuple(values), tuple(tangents)))
        made.fn = fn
        made.names = tuple(names)
        return made

    def __repr__(self) -> str:
        return f"ClosureTangent({getattr(self.fn, '__qualname__', self.fn)}, {self.names})"


def closure_tangent(fn: Any, names: tuple[str, ...], values: tuple[Any, ...],
                    tangents: tuple[Any, ...]) -> ClosureTangent:
    """The tangent of the nested def or lambda ``fn`` read as a value: the variables
    ``names`` of the enclosing function it reads, their ``values`` and ``tangents``."""
    try:
        _MADE.add(fn)
    except TypeError:  # (not weakly referable: nothing to check later)
        pass
    return ClosureTangent(fn, names, values, tangents)


def closure_tangent_rrule(fn: Any, names: tuple[str, ...], values: tuple[Any, ...],
                          tangents: tuple[Any, ...]) -> tuple[ClosureTangent, Any]:
    """Reverse mode of :func:`closure_tangent` (in tangent code that hessian or hvp
    differentiates again): the cotangent of the pair is that of ``values`` and
    ``tangents`` (None: zero)."""
    def pullback(out_bar: Any) -> tuple[Any, ...]:
        if not isinstance(out_bar, (tuple, list)) or len(out_bar) != 2:
            return (None, None, None, None)
        return (None, None, out_bar[0], out_bar[1])

    return closure_tangent(fn, names, values, tangents), pullback


def closure_tangent_frule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
    """Forward mode over tangent code holding a :func:`closure_tangent` (jacfwd of jacfwd):
    refused (the dynamic call over it would need the tangent of a closure's tangent; it was
    refused naming this helper as "a user rule")."""
    from adgen.errors import UnsupportedError

    raise UnsupportedError(
        "forward mode over forward mode (jacfwd of jacfwd or of jvp) of a lambda or nested "
        "def that reads the function's values with a derivative and is passed as a value (in "
        "a list, a tuple, a dict, to a helper) is not supported yet",
        hint="take the outer derivative by reverse mode: adgen.hessian(f), adgen.jacrev("
             "adgen.jacfwd(f)) or adgen.jacfwd(adgen.grad(f))")


def made_for(fn: Any) -> bool:
    """Whether a :class:`ClosureTangent` was made for ``fn`` (and it is still alive)."""
    try:
        return fn in _MADE
    except TypeError:
        return False


def shown_function(fn: Any) -> str:
    """The nested def or lambda ``fn`` in the user's words: "a lambda" (also one lifted as
    ``lambda_<line>``) or "the nested def g()", with its file and line where that is the
    user's (not adgen's generated code, whose defs the tangent code runs)."""
    code = fn.__code__
    name = fn.__name__
    shown = "a lambda" if name == "<lambda>" or name.startswith("lambda_") else \
        f"the nested def {name}()"
    if not code.co_filename.startswith("<"):
        shown += f" ({code.co_filename}:{code.co_firstlineno})"
    return shown


def closure_arguments(fn: Any, ct: ClosureTangent, args: tuple[Any, ...],
                      tangents: tuple[Any, ...], kwargs: dict[str, Any]
                      ) -> tuple[Any, tuple[Any, ...], tuple[Any, ...], tuple[int | None, ...]]:
    """``(compiled, arguments, tangents, held)`` of the call ``fn(*args, **kwargs)`` of a
    nested def or lambda whose tangent is ``ct``: the jvp of its code with its free variables
    lifted (``CompiledTangent``), its positional arguments (those given, then its defaults as
    the function object holds them, then its cells' values), their tangents (None: none),
    and for each of ``ct.names`` its position among those arguments (None: not one of
    its free variables).

    Raises:
        UnsupportedError: a keyword-only parameter, ``*args`` / ``**kwargs``, a free variable
            that is not bound yet, or one bound to another value since the function was
            read as a value (its tangent is that of the value it had then).
    """
    from adgen.errors import UnsupportedError

    code = fn.__code__
    shown = shown_function(fn)
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_kwonlyargcount:
        raise UnsupportedError(
            f"forward mode (jvp) calling {shown}, which has *args, **kwargs or "
            "keyword-only parameters, through a variable, where it reads values of the "
            "enclosing function that have a derivative",
            hint="give it plain parameters, or pass those values as arguments")
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as err:
        raise UnsupportedError(f"forward mode (jvp) calling {shown}: {err}") \
            from None
    bound.apply_defaults()
    pos = tuple(bound.args)
    dots = tuple(tangents[:len(args)]) + (None,) * (len(pos) - len(args))
    hit = _INNER.get(code)
    if hit is None:
        # (its cells empty: the values come as arguments; one per code object, held here)
        cells = tuple(types.CellType() for _ in code.co_freevars)
        hit = (types.FunctionType(code, fn.__globals__, fn.__name__, None, cells),
               tuple(code.co_freevars))
        if len(_INNER) >= 512:  # (code recompiled over a long session: not kept forever)
            _INNER.clear()
        _INNER[code] = hit
    inner, lifted = hit
    values = []
    for free, cell in zip(lifted, fn.__closure__ or ()):
        try:
            values.append(cell.cell_contents)
        except ValueError:  # an empty cell: as Python
            raise NameError(f"cannot access free variable {free!r} where it is not "
                            "associated with a value in enclosing scope") from None
    held: list[int | None] = []
    lifted_dots: list[Any] = [None] * len(lifted)
    for n, v, t in zip(ct.names, ct[0], ct[1]):
        j = lifted.index(n) if n in lifted else None
        held.append(None if j is None else len(pos) + j)
        if j is None:
            continue
        if v is not None and values[j] is not v:  # (None: a function, given as None)
            raise UnsupportedError(
                f"forward mode (jvp) calling {shown}, which reads {n} of the "
                f"enclosing function, bound to another value since the function was passed "
                "on: its tangent is that of the value it had then",
                hint=f"give the new value another name, or pass {n} as an argument")
        lifted_dots[j] = t
    from adgen.transforms.tangent_pipeline import compile_tangent

    # (copies of the arrays it reads: the function only reads them (a write is refused,
    # nested_defs.refuse_closure_writes), and reverse mode over this call, at second order,
    # keeps what it saves in a pullback's closure, which no guard of the caller can redirect:
    # an array written in place between two calls, a[0] = ..., gave the first call's
    # pullback the new contents, a Hessian 3.0 off)
    values = [np.array(v) if type(v) is np.ndarray else v for v in values]
    lifted_dots = [np.array(t) if type(t) is np.ndarray else t for t in lifted_dots]
    all_dots = dots + tuple(lifted_dots)
    compiled = compile_tangent(inner, lifted, wrt=tuple(k for k, t in enumerate(all_dots)
                                                        if t is not None))
    return compiled, pos + tuple(values), all_dots, tuple(held)
