"""Decorators' ``def wrapper(*args, **kwargs)`` (``functools.wraps``) differentiated as written.

A timing, logging, caching or validating decorator returns a wrapper that takes ``*args,
**kwargs`` and calls the function it wraps. adgen compiles the wrapper's own code (it may
change the result: ``return 2 * f(*args, **kwargs)``), not ``__wrapped__``, with the
parameters of the wrapped function (``inspect.signature``, which follows ``__wrapped__``):

    def wrapper(*args, **kwargs):          def wrapper(w, x, *, lam):
        ...                        ->          args = (w, x)
                                               kwargs = {'lam': lam}
                                               ...

:func:`shim_of` gives the function the pipeline compiles in the wrapper's place: a plain
function with those parameters and their defaults that calls the wrapper (the compiled forward
takes its ``__code__``'s parameters and ``__defaults__``), and :func:`parse_wrapper` gives
its tree: the wrapper's source, read in the user's file, with the header above. The wrapper
sees its arguments as positional ones (a keyword argument of a named parameter is passed by
position), and a parameter left out as its default.
"""

from __future__ import annotations

import inspect
import types
import weakref
from typing import Any

import gast

from adgen.errors import UnsupportedError

__all__ = ["is_star_wrapper", "parse_wrapper", "shim_of", "wrapper_of"]

_SHIMS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def is_star_wrapper(fn: Any) -> bool:
    """True for a plain function ``def wrapper(*args, **kwargs)`` with a ``__wrapped__``
    (``def wrapper(self, *args, **kwargs)`` too: named parameters without defaults first)."""
    code = getattr(fn, "__code__", None)
    return inspect.isfunction(fn) and code is not None and \
        getattr(fn, "__wrapped__", None) is not None and \
        code.co_flags & inspect.CO_VARARGS and code.co_flags & inspect.CO_VARKEYWORDS and \
        code.co_kwonlyargcount == 0 and not fn.__defaults__


def wrapper_of(fn: Any) -> Any:
    """The decorator's wrapper a shim stands for, or None for any other function."""
    return getattr(fn, "__adgen_star_wrapper__", None)


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        sig = inspect.signature(fn)  # follows __wrapped__
    except (TypeError, ValueError):
        return None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
        return None  # the wrapped function takes *args or **kwargs too: no names to give
    if not fn.__code__.co_name.isidentifier():
        return None
    return sig


def shim_of(fn: Any) -> Any:
    """The function compiled in place of a ``*args, **kwargs`` wrapper (``fn`` itself for any
    other function, and for a wrapper around a function that takes ``*args`` or ``**kwargs``
    itself, which stays refused by validate)."""
    if not is_star_wrapper(fn):
        return fn
    hit = _SHIMS.get(fn)
    if hit is not None:
        return hit
    sig = _signature(fn)
    if sig is None:
        return fn
    lead = fn.__code__.co_varnames[:fn.__code__.co_argcount]  # the wrapper's own (self)
    values = [p.replace(name=lead[i]) if i < len(lead) else p
              for i, p in enumerate(sig.parameters.values())]
    if len(values) < len(lead) or any(p.kind == p.KEYWORD_ONLY for p in values[:len(lead)]) \
            or len({p.name for p in values}) < len(values):
        return fn  # refused by validate
    sig = sig.replace(parameters=values)
    params, call = [], []
    for p in sig.parameters.values():
        if p.kind == p.KEYWORD_ONLY and "*" not in params:
            params.append("*")
        elif p.kind != p.POSITIONAL_ONLY and params and "/" not in params and \
                "*" not in params and any(q.kind == q.POSITIONAL_ONLY
                                          for q in sig.parameters.values()):
            params.append("/")
        params.append(p.name)
        call.append(f"{p.name}={p.name}" if p.kind == p.KEYWORD_ONLY else p.name)
    if any(p.kind == p.POSITIONAL_ONLY for p in sig.parameters.values()) and \
            "/" not in params:
        params.insert(next((i for i, n in enumerate(params) if n == "*"), len(params)), "/")
    src = (f"def __adgen_make(__adgen_wrapper):\n"
           f"    def {fn.__code__.co_name}({', '.join(params)}):\n"
           f"        return __adgen_wrapper({', '.join(call)})\n"
           f"    return {fn.__code__.co_name}\n")
    ns: dict[str, Any] = {}
    exec(compile(src, f"<adgen: the parameters of {fn.__qualname__}>", "exec"), ns)  # noqa: S102
    made = ns["__adgen_make"](fn)
    # the wrapper's globals: the generated code reads the wrapper's free names there
    shim = types.FunctionType(made.__code__, fn.__globals__, fn.__code__.co_name, None,
                              made.__closure__)
    positional = [p.default for p in values if p.kind != p.KEYWORD_ONLY]
    suffix: list[Any] = []
    for d in reversed(positional):
        if d is inspect.Parameter.empty:
            break
        suffix.append(d)
    shim.__defaults__ = tuple(reversed(suffix)) or None
    shim.__kwdefaults__ = {p.name: p.default for p in values if p.kind == p.KEYWORD_ONLY and
                           p.default is not inspect.Parameter.empty} or None
    shim.__qualname__ = fn.__qualname__
    shim.__module__ = fn.__module__
    shim.__doc__ = fn.__doc__
    shim.__adgen_star_wrapper__ = fn
    _SHIMS[fn] = shim
    return shim


def parse_wrapper(parsed: Any, shim: Any) -> None:
    """Gives the parsed wrapper (``parsed``, from :func:`parse.parse_function` of the
    wrapper) the shim's parameters: ``args`` and ``kwargs`` are bound to them at the top of
    its body. Raises UnsupportedError when a parameter's name is one the wrapper uses."""
    node = parsed.tree
    a = node.args
    star, kw = a.vararg.id, a.kwarg.id
    sig = inspect.signature(shim)
    lead = [p.id for p in a.args]  # the wrapper's own parameters (self), first
    names = list(sig.parameters)[len(lead):]
    used = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)} | {node.name}
    clash = [n for n in names if n in used]
    user = wrapper_of(shim).__name__  # the wrapped function's name (functools.wraps)
    if clash:
        raise UnsupportedError(
            f"{node.name}(*{star}, **{kw}), the wrapper a decorator put around "
            f"{user}: adgen gives the wrapper {user}'s parameters, and "
            f"{clash[0]!r} is also a name the wrapper uses",
            parsed.location(node),
            hint=f"rename {clash[0]!r} in the wrapper or in {user}, or differentiate "
                 f"{user}.__wrapped__, which leaves out the wrapper's own code")
    odd = _binding_read(node, star, kw)
    if odd is not None:
        raise UnsupportedError(
            f"{node.name}(*{star}, **{kw}), the wrapper a decorator put around {user}, reads "
            f"{odd}: adgen gives the wrapper {user}'s parameters, every argument in {star} "
            f"(defaults filled in, keyword-only ones in {kw}), so what it reads there could "
            "differ from what Python gives it",
            parsed.location(node),
            hint=f"pass {star} and {kw} on as they are (f(*{star}, **{kw})), read items "
                 f"({star}[0]) or loop over {star}; or differentiate {user}.__wrapped__")
    kwonly = [p.name for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY]
    positional = [n for n in names if n not in kwonly]
    line = dict(lineno=node.lineno, col_offset=node.col_offset,
                end_lineno=node.lineno, end_col_offset=node.col_offset)

    def name(n: str, ctx: Any) -> gast.Name:
        return gast.Name(id=n, ctx=ctx, annotation=None, type_comment=None, **line)

    bind_args = gast.Assign(
        targets=[name(star, gast.Store())],
        value=gast.Tuple(elts=[name(n, gast.Load()) for n in positional], ctx=gast.Load(),
                         **line), type_comment=None, **line)
    bind_kwargs = gast.Assign(
        targets=[name(kw, gast.Store())],
        value=gast.Dict(keys=[gast.Constant(value=n, kind=None, **line) for n in kwonly],
                        values=[name(n, gast.Load()) for n in kwonly], **line),
        type_comment=None, **line)
    a.args = a.args + [name(n, gast.Param()) for n in names]
    a.vararg = a.kwarg = None
    if not any(isinstance(n, gast.Name) and n.id in (star, kw) and
               not isinstance(n.ctx, gast.Load) for n in gast.walk(node)):
        # args and kwargs as given: f(*args, **kwargs) is the call f(w, x, lam=lam), which
        # adgen follows as written (a starred call of a function that writes its arguments
        # in place is refused)
        for sub in gast.walk(node):
            if isinstance(sub, gast.Call) and _passes_on(sub, star, kw, bool(kwonly)):
                sub.args = sub.args[:-1] + [name(n, gast.Load()) for n in positional]
                sub.keywords = [gast.keyword(arg=n, value=name(n, gast.Load()), **line)
                                for n in kwonly]
    node.body[:0] = [bind_args, bind_kwargs]
    parsed.fn = shim
    parsed.kwonly = kwonly


def _passes_on(call: gast.Call, star: str, kw: str, keywords: bool) -> bool:
    """Whether ``call`` is ``f(*args, **kwargs)``, ``f(self, *args, **kwargs)`` (or without
    ``**kwargs`` when the wrapped function takes no keyword-only parameter)."""
    ok_args = call.args and isinstance(call.args[-1], gast.Starred) and \
        isinstance(call.args[-1].value, gast.Name) and call.args[-1].value.id == star and \
        not any(isinstance(e, gast.Starred) for e in call.args[:-1])
    if not ok_args:
        return False
    if not call.keywords:
        return not keywords
    return len(call.keywords) == 1 and call.keywords[0].arg is None and \
        isinstance(call.keywords[0].value, gast.Name) and call.keywords[0].value.id == kw


def _binding_read(node: gast.FunctionDef, star: str, kw: str) -> str | None:
    """A read of ``args`` or ``kwargs`` whose value depends on how the caller passed the
    arguments (``len(args)``, ``kwargs.get(...)``, ``args`` as a whole), as text; None when
    every read is ``*args``, ``**kwargs``, an item of ``args`` or a loop over it."""
    allowed: set[int] = set()
    for sub in gast.walk(node):
        if isinstance(sub, gast.Starred):
            allowed.add(id(sub.value))
        elif isinstance(sub, gast.keyword) and sub.arg is None:
            allowed.add(id(sub.value))
        elif isinstance(sub, gast.Subscript):
            allowed.add(id(sub.value))
        elif isinstance(sub, (gast.For, gast.comprehension)):
            allowed.add(id(sub.iter))
    for sub in gast.walk(node):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load) and \
                sub.id in (star, kw) and id(sub) not in allowed:
            return f"{sub.id} itself"
        if isinstance(sub, gast.Subscript) and isinstance(sub.value, gast.Name) and \
                sub.value.id == kw:
            return f"an item of {kw}"
    return None
