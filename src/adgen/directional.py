"""The directional derivative of a function as a Python function adgen's reverse mode can
differentiate again (second and third derivatives: hvp, hessian, the derivatives of a
gradient, ``third_order``): ``d(*args, *directions)`` calls the generated jvp code of ``f``
(``tangent_compiled``: ``tangent_pipeline.compile_tangent``) and returns its out_dot. Its
source is generated and kept in ``linecache``, as the jvp's is, so ``adgen.grad`` reads it.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from adgen import runtime
from adgen.arguments import split_receiver
from adgen.errors import UnsupportedError

__all__ = ["directional", "refuse_method_writing_arguments", "tangent_compiled"]


def tangent_compiled(fun: Callable[..., Any], wrt: tuple[int, ...] | None = None,
                     leading: int = 0, args: tuple[Any, ...] | None = None,
                     keywords: Any = ()) -> tuple[Any, tuple[Any, ...]]:
    """The compiled jvp of ``fun`` (transforms.tangent_pipeline.compile_tangent) and its receiver.
    ``wrt``: the only arguments given tangents (positions after the receiver and ``leading``
    bound ones); the others get none at all, not a zero one (compile_tangent's ``wrt``).
    ``keywords``: the names of the keyword arguments of the call (a function with
    ``**kwargs`` is compiled for them: transforms/keyword_shims.py).
    ``args``: the arguments it is called with (``leading`` ones first), when known: the jvp is
    then compiled for the classes of the objects among them, as ``grad`` compiles ``fun``
    (``object_classes.typed_for``: ``model.step(u)`` on a parameter ``model`` writing ``u``
    is followed; without the class it is refused at the call)."""
    from adgen.transforms.keyword_shims import for_keywords
    from adgen.transforms.library_wrappers import library_target, library_wrapper
    from adgen.transforms.tangent_pipeline import compile_tangent

    target, receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))
    _refuse_varargs(target, target)
    shift = len(receiver) + leading
    # adgen.hessian(np.prod): the function the user meant, def prod(a): return np.prod(a)
    fn = library_wrapper(library_target(target))
    fn = for_keywords(fn, keywords)  # def f(x, **kw): compiled for the keyword names given
    # lambda *a, **k: f(*a, **k)[0]: its shim for the keywords takes *a (varargs_of leaves
    # out a function with **kwargs), and its jvp took one array for a: jvp gave f(*x)'s
    # tangent (x's rows as the arguments), or raised 'multiple values for a_dot' for two
    _refuse_varargs(fn, target)
    if args is not None:
        from adgen.transforms.analyses.kinds import is_object_entry, signature
        from adgen.transforms.object_classes import param_classes, typed_clone, typed_for

        sig = signature(receiver + tuple(args))
        fn, _ = typed_for(fn, sig)
        # every object argument's class, also where fn calls no method of it (advance(cfg, u)
        # writing u): reverse mode over the jvp code takes cfg and cfg_dot for objects
        code = getattr(fn, "__code__", None)
        have = param_classes(fn)
        classes = tuple((n, k[1]) for n, k in enumerate(sig)
                        if is_object_entry(k) and k[1] is not None and code is not None and
                        n < code.co_argcount and n not in have)
        if classes and isinstance(fn, types.FunctionType):
            fn = typed_clone(fn, classes)
    if wrt is None and args is not None:
        code = getattr(fn, "__code__", None)
        given = len(receiver) + len(args)
        if code is not None and (receiver or code.co_kwonlyargcount or
                                 code.co_argcount > given):
            # the parameters left to their defaults and the keyword-only ones get no tangent
            # (constants, as in JAX): a zero one gave f(x, p=3)'s x ** p the term
            # p_dot * log(x) * x ** p = 0 * nan at a negative x, and jvp a nan; nor does a
            # method's object, which jvp gives no tangent (jvp(m.loss, (x,), (v,)) of
            # np.sqrt(self.data) * x ** 3 was nan where data holds a 0)
            return compile_tangent(fn, wrt=tuple(range(len(receiver), given))), receiver
    return compile_tangent(fn, wrt=None if wrt is None
                           else tuple(shift + k for k in wrt)), receiver


def _refuse_varargs(fn: Any, target: Any) -> None:
    """Refuses a function given to jvp, jacfwd, hessian or hvp that takes ``*args``, as grad
    does (``compiled_calls.compile_fun``): its jvp takes the tuple as one parameter, so the
    array given was the tuple (def f(*xs): return np.sum(xs[0] ** 2) gave 1.0 for 5.0,
    jacfwd [2, 0] for [2, 4]: silently wrong).

    Raises:
        UnsupportedError: naming the function, its file and line.
    """
    from adgen.arguments import location_of
    from adgen.transforms.parse import varargs_of

    if varargs_of(fn) is None:
        return
    name = getattr(target, "__qualname__", target)
    called = getattr(target, "__name__", "")
    called = called if called.isidentifier() else "f"
    raise UnsupportedError(
        f"{name} takes *args: adgen differentiates such a function where another calls it, "
        "not as the function given to jvp, jacfwd, hessian or hvp", location_of(target),
        hint=f"give it named parameters, or wrap it: adgen.jvp(lambda x, y: {called}(x, y), "
             "...)")


# Wrappers that give reverse mode a Python function over a compiled jvp: their source is
# generated (and in linecache, as the jvp's is), so adgen.grad reads and differentiates it.
_WRAPPERS: dict[tuple[Any, ...], tuple[Any, Callable[..., Any], tuple[Any, ...]]] = {}


def directional(fun: Callable[..., Any], nargs: int, wrt: tuple[int, ...], unit: bool,
                aux: bool = False, args: tuple[Any, ...] | None = None) -> Callable[..., Any]:
    """A Python function ``d(*args, *directions)`` (or ``d(*args)`` with ``unit``: the
    direction 1.0) returning the derivative of ``fun`` at ``args`` along the directions given
    for the arguments ``wrt`` (the out_dot of its jvp). ``aux``: ``fun`` returns a pair
    ``(out, aux)`` (``has_aux``), and the derivative is out's. ``args``: the arguments it will
    be called with, where known (the jvp compiled for their objects' classes:
    :func:`tangent_compiled`)."""
    import keyword

    from adgen.transforms.emit import compile_source
    from adgen.transforms.tangent_only import tangent_only

    # a functools.partial: its function, with the bound arguments as receivers and the bound
    # keywords passed by name (hessian of a partial was 'cannot read the source')
    bound: dict[str, Any] = {}
    leading: tuple[Any, ...] = ()
    while isinstance(fun, functools.partial) and not getattr(fun, "__adgen_transform__", False):
        leading, bound = fun.args + leading, {**fun.keywords, **bound}
        fun = fun.func
    # (the arguments without a direction are constants: no tangent flows from them)
    compiled, receiver = tangent_compiled(fun, wrt, len(leading),
                                          None if args is None else leading + tuple(args),
                                          tuple(bound))
    if compiled.object_writes:
        _refuse_object_writes(compiled.object_writes[0])
    if receiver or any(hasattr(v, "__dict__") and not isinstance(v, np.ndarray)
                       for v in leading):
        refuse_method_writing_arguments(fun, receiver + leading)
    receiver = receiver + leading
    held = receiver + tuple(bound.values())
    # one wrapper per receiver: the wrapper holds it (receiver0 below), so hessian(m2.energy)
    # after hessian(m1.energy) took m1's (keyed by its count only: a silently wrong Hessian)
    key = (id(compiled.jvp), nargs, wrt, unit, tuple(id(r) for r in held), tuple(bound), aux)
    hit = _WRAPPERS.get(key)
    if hit is not None and hit[0] is compiled.jvp and \
            all(a is b for a, b in zip(hit[2], held)):
        return hit[1]
    while len(_WRAPPERS) >= 256:  # the oldest go (each holds its receiver)
        try:
            del _WRAPPERS[next(iter(_WRAPPERS))]
        except (KeyError, RuntimeError, StopIteration):  # another thread took it
            break
    names = [p if p.isidentifier() and not keyword.iskeyword(p) else f"a{k}"
             for k, p in enumerate(compiled.params[len(receiver):][:nargs])]
    names += [f"a{k}" for k in range(len(names), nargs)]
    # (a directional function's own parameters are direction0, ...: a third derivative
    # differentiates one again, and its directions take the next free names)
    dirs: list[str] = []
    while not unit and len(dirs) < len(wrt):
        k = len(dirs) + sum(1 for p in names if p.startswith("direction"))
        while f"direction{k}" in names or f"direction{k}" in dirs:
            k += 1
        dirs.append(f"direction{k}")
    fname = f"{compiled.name}_jvp"
    lead = [f"receiver{k}" for k in range(len(receiver))]
    given = ", ".join(f"{compiled.tangent_params[len(receiver) + n]}="
                      f"{'1.0' if unit else f'given_tangent({dirs[k]}, {names[n]})'}"
                      for k, n in enumerate(wrt))
    keywords = "".join(f", {k}=bound{j}" for j, k in enumerate(bound))
    # (the jvp returning out_dot only: reverse mode then has no pullback for what only the
    # primal output depends on, whose zero cotangent gave log(x) at 0 a nan: tangent_only)
    only = tangent_only(compiled.jvp)
    call = f"{fname}({', '.join(lead + names)}, {given}{keywords})"
    text = (f"def {compiled.name}directional({', '.join(names + dirs)}):\n" +
            (f"    out_dot = {call}\n" if only is not None else
             f"    out, out_dot = {call}\n") +
            f"    return out_dot{'[0]' if aux else ''}\n")
    ns: dict[str, Any] = {fname: compiled.jvp if only is None else only, "np": np,
                          "given_tangent": runtime.given_tangent}
    ns.update({f"receiver{k}": r for k, r in enumerate(receiver)})
    ns.update({f"bound{j}": v for j, v in enumerate(bound.values())})
    compile_source(text, f"<adgen {compiled.name} directional>", ns)
    wrapper = ns[f"{compiled.name}directional"]
    _WRAPPERS[key] = (compiled.jvp, wrapper, held)
    return wrapper


def _refuse_object_writes(where: Any) -> None:
    """Refuses second derivatives of a function whose jvp code follows an in-place write into
    an array of an object it builds by a call that may hold global arrays (``s.x[:] = x0``
    of ``s = System(A0, B0)``, transforms/built_object_writes.py, checked when it runs):
    reverse mode over that jvp code took the write for one of a global array, and refused it
    at the generated code's line.

    Raises:
        UnsupportedError: at the user's write.
    """
    raise UnsupportedError(
        "second derivatives (hessian, hvp, jacfwd or jacrev of grad) of a function that "
        "writes in place into an array of an object it builds by a call that may hold global "
        "or closure arrays are not supported (jvp, jacfwd and grad are)", where,
        hint="keep the state in arrays the function binds (x = np.array(x0), then x = A @ x "
             "+ B * u) instead of the object's attributes")


def refuse_method_writing_arguments(method: Callable[..., Any],
                                     held: tuple[Any, ...] = ()) -> None:
    """Refuses second derivatives of a method (or a partial binding an object) that writes an
    argument (or an array of its object) in place: reverse mode over its jvp code takes the
    object's tangent for an array that may share memory with the written one, and failed
    with a message about the generated code (``<adgen Stepper.energy jvp>:3:8``), where a
    lambda calling the method fails at the user's line (dispatch). A module-level function
    taking the object as an argument fails the same way, at the generated code, still.
    Attributes set (``self.h = np.tanh(z)``) write no array in place, and neither do number
    updates (``self.calls += 1``) where the attributes of ``held`` (the object, and the
    arguments a partial binds) they update hold numbers: those go through.

    Raises:
        UnsupportedError: at the method's def line, with what to write instead.
    """
    import linecache

    from adgen.errors import AdgenError, Location
    from adgen.transforms.pipeline import compile_function

    target, _ = split_receiver(getattr(method, "__adgen_primal__", method))
    from adgen.transforms.analyses.number_updates import holds_numbers

    try:
        compiled = compile_function(target)
    except AdgenError:
        return  # what reverse mode refuses in it is said where the tangent code is compiled
    if not compiled.mutates_params or holds_numbers(compiled.number_updates, held):
        return
    code = target.__code__
    raise UnsupportedError(
        f"second derivatives (hvp, hessian, jacfwd or jacrev of grad) of the method "
        f"{target.__qualname__}, which writes an argument (or an array of its object) in "
        "place, are not supported yet", Location(
            code.co_filename, code.co_firstlineno, 0,
            linecache.getline(code.co_filename, code.co_firstlineno)),
        hint="write into a copy in the method (u = u.copy() before the write; a new "
             "array, buf = np.sin(u), instead of self.buf[:] = np.sin(u)): the second "
             "derivatives of that method are supported")
