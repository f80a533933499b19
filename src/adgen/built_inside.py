"""Objects of the user's classes built inside a function, in forward mode and at second order.

Forward mode writes ``n = Params(w, b)`` (a class Python builds by running its ``__init__``
on a new object: ``tangent_call_forms.built_plainly``) as one call::

    n, n_dot = construct_jvp(Params, (w, b), (w_dot, b_dot), {})

:func:`construct_jvp` makes the object and its tangent (an object of the same class) and
runs the jvp of ``__init__`` on them, which sets the tangent's attributes where ``__init__``
sets the object's. It is one call whose result is two new objects, so reverse mode over the
jvp code (hessian, hvp, jacfwd / jacrev of grad) differentiates it by its rule,
:func:`construct_jvp_rrule`: the same construction as a small generated function

    def Params_construct_jvp(a0, a1, d0, d1):
        n = new_object(Params)
        n_dot = new_tangent_object(Params)
        init_jvp(n, a0, a1, self_dot=n_dot, w_dot=d0, b_dot=d1)
        return (n, n_dot)

(``init_jvp`` the compiled jvp of ``__init__``, for a dataclass of the ``__init__``
``adgen.dataclass_init`` writes), run through adgen's reverse mode: a callee setting
attributes of objects it is given, followed there as in any user's code. The objects'
cotangents thus reach the arguments and their tangents, including the second-order terms of
a nonlinear ``__init__`` (``self.s = np.exp(log_s)``). Before, the jvp code built the object
with ``object.__new__`` and called the jvp of ``__init__`` for its effects, which reverse
mode refused.
"""

from __future__ import annotations

import keyword
import types
from typing import Any

from adgen.rules.registry import defnondiff

__all__ = ["construct_jvp", "construct_jvp_rrule", "generated_construction", "new_object",
           "new_tangent_object"]


def new_object(cls: type) -> Any:
    """A new object of ``cls``, its ``__init__`` not run (``object.__new__``)."""
    return object.__new__(cls)


def new_tangent_object(cls: type) -> Any:
    """A new tangent object of ``cls``: no attributes of its own but a zero for each value the
    class body holds (``runtime.object_with``)."""
    from adgen.rules.helpers_tangent import object_with

    return object_with(cls, {})


# no derivative, a new object (the effects analysis: "fresh"); the analyses see rules
new_object = defnondiff(new_object)
new_tangent_object = defnondiff(new_tangent_object)


def _init_of(cls: type) -> Any:
    """The ``__init__`` forward mode compiles for ``cls``: the class's, or for a dataclass
    the one ``adgen.dataclass_init`` writes as source."""
    from adgen.dataclass_init import dataclass_init

    return dataclass_init(cls) or cls.__init__


def construct_jvp(cls: type, args: tuple[Any, ...], tangents: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """``(cls(*args, **kwargs), its tangent)``: a new object, a new tangent object, and the jvp
    of ``__init__`` run on both with the arguments' tangents (None: none; keyword arguments
    get none, or theirs follow the positional ones: tangent_calls.keyword_tangents)."""
    from adgen.tangent_calls import tangent_of_call

    refuse_vectorize(cls, tangents)
    n = new_object(cls)
    n_dot = new_tangent_object(cls)
    # (a method of n, its tangent n_dot: compiled for the class, so self.__post_init__() or
    # self.reset() in __init__ is a call the compiled code follows, at second order too)
    tangent_of_call(types.MethodType(_init_of(cls), n), args, tangents, kwargs, n, n_dot)
    if all(t is None for t in tangents):
        _symbolic_zero(n_dot)
    return n, n_dot


def refuse_vectorize(cls: type, tangents: tuple[Any, ...]) -> None:
    """Refuses ``np.vectorize(f)`` built where ``f`` has a tangent (a lambda reading values
    with a derivative): NumPy's ``__init__`` was compiled from its source and refused inside
    NumPy ("_nx.dtype() has no derivative rule")."""
    if cls.__module__ == "numpy" and cls.__name__ == "vectorize" and \
            any(t is not None for t in tangents):
        from adgen.errors import UnsupportedError
        from adgen.rules.refusals import refusal_hint_of, refusal_of

        raise UnsupportedError(f"forward mode (jvp): {refusal_of(cls)}",
                               hint=refusal_hint_of(cls))


def _symbolic_zero(n_dot: Any) -> None:
    """Records ``n_dot``, the tangent of an object built from arguments none of which has a
    tangent (``Model(DATA)``), as a symbolic zero, as ``zero_tangent`` records the objects it
    makes: tangent_calls then takes it for no tangent while none of its attributes is set
    again and each is itself zero (a method of the object that stores attributes reads the
    others as constants: ``np.sqrt(self.data)``'s tangent was 0 / 0, a NaN)."""
    import weakref

    from adgen.rules.helpers_tangent import zero_tangent

    if not hasattr(n_dot, "__dict__"):  # (a class with __slots__: not recorded)
        return
    made = zero_tangent.__dict__.setdefault("made", {})
    try:
        weakref.finalize(n_dot, made.pop, id(n_dot), None)
    except TypeError:  # (an object of a class no weak reference can hold)
        return
    made[id(n_dot)] = (weakref.ref(n_dot), dict(vars(n_dot)))


# (id of the init's jvp, the layout) -> (the jvp, the generated function)
_WRAPPERS: dict[tuple[Any, ...], tuple[Any, Any]] = {}


def _wrapper(cls: type, nargs: int, given: tuple[int, ...], keywords: tuple[str, ...]) -> Any:
    """The generated function ``f(a0, .., k0, .., d0, ..)`` building an object of ``cls`` and
    its tangent from ``nargs`` arguments, the keyword arguments ``keywords`` and the tangents
    of the arguments at ``given`` (a position from ``nargs`` on: the keyword argument there),
    by the compiled jvp of ``__init__``."""
    from adgen.transforms.bound_callees import method_for
    from adgen.transforms.emit import compile_source
    from adgen.transforms.keyword_shims import for_keywords
    from adgen.transforms.tangent_pipeline import compile_tangent

    init = method_for(for_keywords(_init_of(cls), keywords), (object.__new__(cls),))
    code = getattr(init, "__code__", None)
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount] if code else ()
    if any(k >= nargs and keywords[k - nargs] not in params for k in given):
        from adgen.errors import UnsupportedError

        raise UnsupportedError(f"second derivatives through building {cls.__qualname__} "
                               f"with a value with a derivative given by keyword to "
                               "__init__'s **kwargs", hint="pass it by position")

    def position(k: int) -> int:
        # (the receiver first; a keyword argument's parameter by its name)
        return 1 + k if k < nargs else params.index(keywords[k - nargs])

    # (the receiver's tangent always: __init__ sets the tangent object's attributes)
    compiled = compile_tangent(init, wrt=(0,) + tuple(sorted(position(k) for k in given)))
    key = (id(compiled.jvp), cls, nargs, given, keywords)
    hit = _WRAPPERS.get(key)
    if hit is not None and hit[0] is compiled.jvp:
        return hit[1]
    if len(compiled.tangent_params) < 1 + nargs:
        from adgen.errors import UnsupportedError

        raise UnsupportedError(
            f"second derivatives through building an object of {cls.__qualname__} with "
            f"{nargs} positional arguments, more than its __init__ names",
            hint="pass the arguments by name")
    names = [f"a{k}" for k in range(nargs)]
    kws = [f"k{j}" for j in range(len(keywords))]
    dots = [f"d{k}" for k in given]
    if any(not k.isidentifier() or keyword.iskeyword(k) for k in keywords):
        from adgen.errors import UnsupportedError

        raise UnsupportedError(f"building {cls.__qualname__} with the keywords "
                               f"{list(keywords)}", hint="pass them by position")
    passed = ["n", *names] + [f"{k}={v}" for k, v in zip(keywords, kws)] + \
        [f"{compiled.tangent_params[0]}=n_dot"] + \
        [f"{compiled.tangent_params[position(k)]}={d}" for k, d in zip(given, dots)]
    title = cls.__name__ if cls.__name__.isidentifier() else "object"
    text = (f"def {title}_construct_jvp({', '.join(names + kws + dots)}):\n"
            f"    n = new_object(cls)\n"
            f"    n_dot = new_tangent_object(cls)\n"
            f"    init_jvp({', '.join(passed)})\n"
            f"    return (n, n_dot)\n")
    ns: dict[str, Any] = {"cls": cls, "init_jvp": compiled.jvp, "new_object": new_object,
                          "new_tangent_object": new_tangent_object}
    compile_source(text, f"<adgen {cls.__qualname__} built with its tangent>", ns)
    wrapper = ns[f"{title}_construct_jvp"]
    while len(_WRAPPERS) >= 256:  # the oldest go (each holds its class)
        try:
            del _WRAPPERS[next(iter(_WRAPPERS))]
        except (KeyError, RuntimeError, StopIteration):
            break
    _WRAPPERS[key] = (compiled.jvp, wrapper)
    return wrapper


def generated_construction(cls: type, nargs: int, given: tuple[int, ...],
                           keywords: tuple[str, ...]) -> Any:
    """The generated construction of an object of ``cls`` and its tangent (see the module
    doc): ``f(a0, .., k0, .., d0, ..)`` returning ``(n, n_dot)``, for forward mode over it
    (adgen.second_forward_calls)."""
    return _wrapper(cls, nargs, given, keywords)


def construct_jvp_rrule(cls: type, args: tuple[Any, ...], tangents: tuple[Any, ...],
                        kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """Reverse mode of :func:`construct_jvp` (jvp code differentiated again: hessian, hvp,
    jacfwd / jacrev of grad): the generated construction (see the module doc) run through
    its compiled forward and pullback; the cotangents of the object and of its tangent go
    to the arguments and their tangents."""
    from adgen.dispatch import forward_of, pullback_of

    refuse_vectorize(cls, tangents)
    given = tuple(k for k, t in enumerate(tangents) if t is not None)
    keywords = tuple(kwargs)
    wrapper = _wrapper(cls, len(args), given, keywords)
    values = (*args, *kwargs.values(), *(tangents[k] for k in given))
    before = _slots_of((*args, *kwargs.values()))
    out, saved = forward_of(wrapper, values, {})
    _refuse_changed_arguments(cls, before)

    def pullback(out_bar: Any) -> tuple[Any, ...]:
        cts = pullback_of(saved, out_bar, None)
        arg_cts = tuple(cts[:len(args)])
        # (a keyword argument's own cotangent: one with a derivative, a kw_only field's)
        kw_cts = dict(zip(keywords, cts[len(args):len(args) + len(keywords)])) or None
        dots = dict(zip(given, cts[len(args) + len(keywords):]))
        return (None, arg_cts, tuple(dots.get(k) for k in range(len(tangents))), kw_cts)

    return out, pullback


def _slots_of(values: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    """What the lists, dicts and objects of the user's among ``values`` hold (a list's items,
    a dict's items, an object's attributes), to tell whether a construction changed them
    (:func:`_refuse_changed_arguments`)."""
    import numpy as np

    from adgen.adjoints import is_constant_object, is_function_like

    out: list[tuple[Any, Any]] = []
    for v in values:
        if isinstance(v, (list, dict)) or (
                hasattr(v, "__dict__") and not isinstance(v, (np.ndarray, np.generic)) and
                not is_constant_object(v) and not is_function_like(v)):
            out.append((v, _held(v)))
    return out


def _held(v: Any) -> Any:
    return list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else \
        dict(vars(v))


def _plain(v: Any) -> bool:
    """A value without a derivative: an int, a bool, a string, None."""
    return v is None or isinstance(v, (int, str, bytes)) and not isinstance(v, float)


def _refuse_changed_arguments(cls: type, before: list[tuple[Any, Any]]) -> None:
    """Refuses second derivatives through the construction of ``cls`` when it changed a
    list, dict or object it was given (``lst.append(v)``, ``acc["h"] = v``, ``reg.total =
    ...`` in ``__init__``, or in a method it calls) where a value that may carry a
    derivative came or went (not a counter's int): the construction's pullback here gets
    the cotangents of the new object and its tangent only, never that of what it changed,
    which the caller reads afterwards (a dict's: a silently wrong Hessian, 1.47 off; an
    object's attribute: 7.0 off; a list's was refused as "a list read by a position
    counted from its end").

    Raises:
        UnsupportedError: at the user's line, naming the class.
    """
    for v, held in before:
        now = _held(v)
        if isinstance(v, list):
            if len(now) == len(held) and all(a is b for a, b in zip(now, held)):
                continue
            kept = {id(a) for a in held} & {id(b) for b in now}
            # (the items that came or went; all of them where it was only reordered)
            moved = [a for a in (*held, *now) if id(a) not in kept] or now
        else:
            moved = [x for k in {*held, *now} if held.get(k, _HELD) is not now.get(k, _HELD)
                     for x in (held.get(k), now.get(k))]
        if all(_plain(x) for x in moved):
            continue
        from adgen.adjoints import locate
        from adgen.errors import UnsupportedError

        name = cls.__name__
        kind = type(v).__name__
        what, how, example = (f"a {kind}", "", "lst.append(o.v)") if isinstance(v, list) \
            else (f"a {kind}", "", "acc['h'] = o.v") if isinstance(v, dict) else \
            (f"an object of class {kind}", " (sets its attributes)", "reg.total += o.v")
        raise locate(UnsupportedError(
            f"second derivatives (hessian, hvp, jacfwd or jacrev of grad) through {name}(...), "
            f"whose __init__ changes {what} it is given{how}, are not supported yet: the "
            "construction's pullback here gets the cotangent of the new object only, not "
            "that of what it changed (grad and jvp follow it)",
            hint=f"keep the values on the object in __init__ (self.v = ...) and change the "
                 f"{kind} in the function differentiated, after {name}(...) ({example})"))


_HELD = object()  # (a key a dict or object did not have)
