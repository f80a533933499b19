"""A function with ``**kwargs`` compiled once per set of keyword names it is called with.

adgen compiles a function with a fixed list of parameters. A function that takes
``**kwargs`` (``def loss(x, **opts)``, ``def objective(params, **cfg)``) is compiled, for each
ordered set of keyword names a call passes into its ``**``, as a function with those names as
keyword-only parameters: :func:`keyword_shim` gives that function (a plain function calling the
user's, whose signature the compiled forward takes), and :func:`parse_keyword_shim` its tree,
the user's source with the header below:

    def loss(x, **opts):                        def loss(x, *, scale, shift):
        s = opts.get("scale", 1.0)      ->          s = scale
        return model(x, **opts) * s                 return model(x, scale=scale, shift=shift) * s

(called ``loss(x, scale=2.0, shift=0.1)``). Where every read of ``opts`` is ``**opts``,
``opts["k"]``, ``opts.get("k"[, default])`` or ``"k" in opts``, each is written with the
parameters (the dict is never changed or handed on, so its items are the parameters); else
``opts = {'scale': scale, 'shift': shift}`` is bound at the top of the body, in the call's
order, and read as any dict the function builds. A local named like a keyword is renamed
apart (``scale = opts.get("scale", 1.0)``); a global or builtin the function reads under a
keyword's name is refused.

Which set: the caller's compiled code names it where the call is written
(:func:`bind_keyword_calls`: ``helper(x, scale=2.0)``, ``helper(x, **{"scale": 2.0})``, run by
``front``); the dispatch where the call is resolved when it runs (``helper(x, **CFG)``, a
method); the entry points (``grad``, ``value_and_grad``, ``vjp``, ``jvp``) from the keywords
the user passes. Keyword arguments given to an entry point are constants, as in JAX (only
positional arguments are differentiated); a keyword a helper is given inside the function
carries its derivative as any argument does. The compile cache keys each shim as its own
function: the keyword set is its signature; the values get no kind (as a keyword argument of a
named parameter), so one compilation serves any value.
"""

from __future__ import annotations

import copy
import inspect
import keyword
import sys
import types
import weakref
from collections.abc import Iterable
from typing import Any

import gast
from adgen.transforms.bindings import Guard, dotted_object
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError

__all__ = ["bind_keyword_calls", "extra_keywords", "for_keywords", "keyword_shim",
           "keyword_shim_of", "parse_keyword_shim", "takes_keywords"]

# fn -> {keys: (fn's code, its defaults, its keyword defaults, the shim)}
_SHIMS: weakref.WeakKeyDictionary[Any, dict[tuple[str, ...], tuple[Any, ...]]] = \
    weakref.WeakKeyDictionary()


def takes_keywords(fn: Any) -> bool:
    """True for a plain Python function with a ``**kwargs`` parameter (a decorator's
    ``def wrapper(*args, **kwargs)`` is star_wrappers', not this module's, and so is any
    wrapper with ``__wrapped__`` that takes ``*args`` too: refused there, at its line)."""
    if type(fn) is not types.FunctionType or not fn.__code__.co_flags & inspect.CO_VARKEYWORDS:
        return False
    return not (fn.__code__.co_flags & inspect.CO_VARARGS and
                getattr(fn, "__wrapped__", None) is not None)


def extra_keywords(fn: Any, names: Iterable[str]) -> tuple[str, ...]:
    """The keyword names of a call of ``fn`` (in the call's order) that its ``**`` parameter
    takes: those that name no parameter it can take by keyword."""
    code = fn.__code__
    named = set(code.co_varnames[code.co_posonlyargcount:
                                 code.co_argcount + code.co_kwonlyargcount])
    return tuple(n for n in names if n not in named)


def for_keywords(fn: Any, kwargs: Iterable[str]) -> Any:
    """The function to compile for a call of ``fn`` with keywords ``kwargs``: its shim for
    the keywords its ``**`` takes, or ``fn`` itself when it takes no ``**kwargs`` or is not
    the user's (NumPy's, the standard library's: ``Logger.info(msg, *args, **kwargs)`` runs
    as it is, analyses.reports)."""
    if not takes_keywords(fn) or not _users(fn):
        return fn
    return keyword_shim(fn, extra_keywords(fn, kwargs))


def _users(fn: Any) -> bool:
    """Whether a function (or a module) is the user's: not NumPy's, SciPy's, adgen's or the
    standard library's."""
    where = fn.__name__ if isinstance(fn, types.ModuleType) else getattr(fn, "__module__", "")
    root = str(where or "").partition(".")[0]
    return root not in ("numpy", "adgen", "scipy") and root not in sys.stdlib_module_names


def keyword_shim_of(fn: Any) -> tuple[Any, tuple[str, ...]] | None:
    """``(the user's function, the keyword names)`` a shim stands for; None for any other."""
    return getattr(fn, "__adgen_keyword_shim__", None)


def keyword_shim(fn: Any, keys: tuple[str, ...]) -> Any:
    """``fn`` (with ``**kwargs``) as a function whose ``**`` parameter takes exactly the
    keywords ``keys``, each a keyword-only parameter without a default (one per function and
    ordered keys; made again when ``fn``'s code or defaults are replaced).

    Raises:
        UnsupportedError: a key that cannot be a parameter's name (not an identifier, or the
            name of a positional-only or ``*args`` parameter of ``fn``).
    """
    keys = tuple(keys)
    held = _SHIMS.get(fn)
    if held is None:
        held = _SHIMS[fn] = {}
    hit = held.get(keys)
    if hit is not None and hit[0] is fn.__code__:
        if hit[1] is not fn.__defaults__ or hit[2] is not fn.__kwdefaults__:
            # f.__defaults__ = ...: the shim's too (its compiled code is guarded on them)
            shim = hit[3]
            shim.__defaults__ = fn.__defaults__
            shim.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
            held[keys] = (fn.__code__, fn.__defaults__, fn.__kwdefaults__, shim)
        return hit[3]
    code = fn.__code__
    names = code.co_varnames
    pos = list(names[:code.co_argcount])
    kwonly = list(names[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
    star = names[code.co_argcount + code.co_kwonlyargcount] \
        if code.co_flags & inspect.CO_VARARGS else None
    for k in keys:
        if not isinstance(k, str) or not k.isidentifier() or keyword.iskeyword(k) or \
                k in pos or k == star or k.startswith("__adgen"):
            what = "is not a name a parameter can have" if not isinstance(k, str) or \
                not k.isidentifier() or keyword.iskeyword(k) or k.startswith("__adgen") \
                else "is also the name of a positional parameter"
            raise UnsupportedError(
                f"{fn.__qualname__} takes **kwargs, and the keyword {k!r} passed into it "
                f"{what}: adgen compiles the function with each such keyword as a parameter",
                hint="pass the value under another keyword, or as a dict argument "
                     "(def f(x, opts): ... f(x, {...}))")
    posonly = code.co_posonlyargcount
    params = pos[:posonly] + (["/"] if posonly else []) + pos[posonly:] + \
        ([f"*{star}"] if star else ["*"] if kwonly or keys else []) + kwonly + list(keys)
    call = pos + ([f"*{star}"] if star else []) + [f"{k}={k}" for k in kwonly + list(keys)]
    name = code.co_name if code.co_name.isidentifier() else "f"
    src = (f"def __adgen_make(__adgen_fn):\n"
           f"    def {name}({', '.join(params)}):\n"
           f"        return __adgen_fn({', '.join(call)})\n"
           f"    return {name}\n")
    ns: dict[str, Any] = {}
    exec(compile(src, f"<adgen: {fn.__qualname__} with keywords {', '.join(keys)}>",  # noqa: S102
                 "exec"), ns)
    made = ns["__adgen_make"](fn)
    # the user's names and nested code beside the shim's own (appended, unused by its
    # instructions): what reads a function's globals or nested defs from its code object
    # (bound_callees, forward mode's nested defs) finds the user's
    shim_code = made.__code__.replace(
        co_names=made.__code__.co_names + tuple(n for n in code.co_names
                                                if n not in made.__code__.co_names),
        co_consts=made.__code__.co_consts + tuple(c for c in code.co_consts
                                                  if isinstance(c, types.CodeType)))
    shim = types.FunctionType(shim_code, fn.__globals__, fn.__name__, fn.__defaults__,
                              made.__closure__)
    shim.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    shim.__dict__.update(fn.__dict__)  # (a method's copy for its class: what it records)
    shim.__qualname__ = fn.__qualname__
    shim.__module__ = fn.__module__
    shim.__doc__ = fn.__doc__
    shim.__adgen_keyword_shim__ = (fn, keys)  # type: ignore[attr-defined]
    held[keys] = (fn.__code__, fn.__defaults__, fn.__kwdefaults__, shim)
    return shim


# -- the shim's tree ---------------------------------------------------------------------


def parse_keyword_shim(parsed: Any, shim: Any) -> None:
    """Gives the parsed function (``parse.parse_function`` of the user's function, its
    parameters flattened) the shim's header: the keywords as keyword-only parameters, its
    ``**`` parameter's reads written with them (or the dict bound at the top of the body).

    Raises:
        UnsupportedError: a keyword named like a global or builtin the function reads.
    """
    fn, keys = keyword_shim_of(shim)
    node = parsed.tree
    a = node.args
    _rename_apart(parsed, fn, keys)
    kw = a.kwarg.id
    argcount = fn.__code__.co_argcount
    line = dict(lineno=node.lineno, col_offset=node.col_offset, end_lineno=node.lineno,
                end_col_offset=node.col_offset)
    packed = [a.vararg] if a.vararg is not None else []  # *xs: one parameter, the tuple
    a.args = a.args[:argcount] + packed + a.args[argcount:] + [
        gast.Name(id=k, ctx=gast.Param(), annotation=None, type_comment=None, **line)
        for k in keys]
    a.vararg = a.kwarg = None
    if not _spell_out(node, kw, keys, line):
        node.body[:0] = [gast.Assign(
            targets=[gast.Name(id=kw, ctx=gast.Store(), annotation=None, type_comment=None,
                               **line)],
            value=gast.Dict(keys=[gast.Constant(value=k, kind=None, **line) for k in keys],
                            values=[gast.Name(id=k, ctx=gast.Load(), annotation=None,
                                              type_comment=None, **line) for k in keys],
                            **line),
            type_comment=None, **line)]
    parsed.fn = shim
    parsed.kwonly = list(parsed.kwonly) + list(keys)
    parsed.forget_locals()
    # the user's function's code and defaults, as the shim's own are guarded (front): one
    # replaced (autoreload, f.__defaults__ = ...) compiles again
    parsed.bound_guards.extend(Guard(attr, attr, fn, None, "attr", getattr(fn, attr))
                               for attr in ("__code__", "__defaults__", "__kwdefaults__")
                               if getattr(fn, attr, None) is not None)


def _scope_nodes(node: gast.AST) -> list[gast.AST]:
    """The nodes of a function's own scope: nested defs, lambdas and classes left out."""
    out, todo = [], list(gast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        out.append(n)
        if not isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                              gast.ClassDef)):
            todo.extend(gast.iter_child_nodes(n))
    return out


def _rename_apart(parsed: Any, fn: Any, keys: tuple[str, ...]) -> None:
    """A local of the function named like a keyword (``scale = opts.get("scale", 1.0)``)
    renamed apart, everywhere in its tree, so the keyword's parameter is read only where the
    ``**`` parameter was; a free name of that name (a global, a builtin) is refused."""
    node = parsed.tree
    names = [n for n in walk(node) if isinstance(n, gast.Name)]
    used = {n.id for n in names} | {d.name for d in walk(node)
                                    if isinstance(d, (gast.FunctionDef, gast.ClassDef))}
    declared = {x for d in walk(node) if isinstance(d, (gast.Global, gast.Nonlocal))
                for x in d.names}
    own = _scope_nodes(node)
    stored = {n.id for n in own if isinstance(n, gast.Name) and
              isinstance(n.ctx, (gast.Store, gast.Del))} | \
        {n.name for n in own if isinstance(n, (gast.FunctionDef, gast.ClassDef))} | \
        {p.id for p in (*node.args.args, node.args.vararg, node.args.kwarg)
         if p is not None}
    taken = set(used) | set(parsed.namespace) | set(keys)
    own_ids = {id(n) for n in own}
    nested = {n.id for n in names if id(n) not in own_ids} | \
        {d.name for d in walk(node) if isinstance(d, (gast.FunctionDef, gast.ClassDef)) and
         d is not node and id(d) not in own_ids}
    for k in keys:
        if k not in used:
            continue
        if k in nested:
            # (a nested def or lambda is compiled from its own code too, with the user's
            # names: renamed here only, it would read another value)
            raise UnsupportedError(
                f"{fn.__qualname__} takes **{node.args.kwarg.id}, and is called with the "
                f"keyword {k!r}, which is also a name a nested function or lambda in it "
                f"uses: adgen compiles the function with {k} as a parameter",
                parsed.location(node),
                hint=f"pass the value under another keyword, or rename {k} in "
                     f"{fn.__name__}")
        if k not in stored or k in declared:
            raise UnsupportedError(
                f"{fn.__qualname__} takes **{node.args.kwarg.id}, and is called with the "
                f"keyword {k!r}, which is also the name of a global or builtin it reads: "
                f"adgen compiles the function with {k} as a parameter",
                parsed.location(node),
                hint=f"pass the value under another keyword, or rename what {fn.__name__} "
                     f"reads as {k}")
        new, n = f"{k}_", 1
        while new in taken:
            n += 1
            new = f"{k}_{n}"
        taken.add(new)
        for n_ in names:
            if n_.id == k:
                n_.id = new
        for d in walk(node):
            if isinstance(d, (gast.FunctionDef, gast.ClassDef)) and d.name == k:
                d.name = new


_SIMPLE = (gast.Constant, gast.Name, gast.Attribute)


def _spell_out(node: gast.FunctionDef, kw: str, keys: tuple[str, ...], line: dict) -> bool:
    """Writes every read of the ``**`` parameter ``kw`` with the keywords' parameters, where
    each is one of ``f(..., **kw)``, ``kw["k"]``, ``kw.get("k"[, d])``, ``"k" in kw``; False
    (and nothing written) where one is not."""
    reads = {id(n) for n in walk(node) if isinstance(n, gast.Name) and n.id == kw}
    if not reads:
        return True
    if reads - {id(n) for n in _scope_nodes(node)}:
        # a nested def or lambda reads it: compiled from its own code too, where it reads
        # the dict
        return False
    edits: list[Any] = []
    seen: set[int] = set()

    def name(k: str) -> gast.Name:
        return gast.Name(id=k, ctx=gast.Load(), annotation=None, type_comment=None, **line)

    def is_kw(v: Any) -> bool:
        return isinstance(v, gast.Name) and v.id == kw and isinstance(v.ctx, gast.Load)

    def key_of(v: Any) -> str | None:
        return v.value if isinstance(v, gast.Constant) and isinstance(v.value, str) else None

    for n in walk(node):
        if isinstance(n, gast.Call):
            spread = [k for k in n.keywords if k.arg is None]
            if len(spread) == 1 and is_kw(spread[0].value):
                given = {k.arg for k in n.keywords if k.arg is not None}
                if given & set(keys):
                    return False  # Python's TypeError, as written
                seen.add(id(spread[0].value))
                edits.append(("call", n))
            elif isinstance(n.func, gast.Attribute) and n.func.attr == "get" and \
                    is_kw(n.func.value) and not n.keywords and len(n.args) in (1, 2) and \
                    key_of(n.args[0]) is not None and \
                    all(isinstance(d, _SIMPLE) for d in n.args[1:]):
                seen.add(id(n.func.value))
                edits.append(("get", n))
        elif isinstance(n, gast.Subscript) and is_kw(n.value) and \
                isinstance(n.ctx, gast.Load) and key_of(n.slice) in keys:
            seen.add(id(n.value))
            edits.append(("item", n))
        elif isinstance(n, gast.Compare) and len(n.ops) == 1 and \
                isinstance(n.ops[0], (gast.In, gast.NotIn)) and is_kw(n.comparators[0]) and \
                key_of(n.left) is not None:
            seen.add(id(n.comparators[0]))
            edits.append(("in", n))
    if seen != reads:
        return False
    replaced: dict[int, gast.AST] = {}
    for what, n in edits:
        if what == "call":
            n.keywords = [k for k in n.keywords if k.arg is not None] + [
                gast.keyword(arg=k, value=name(k), **line) for k in keys]
        elif what == "get":
            k = key_of(n.args[0])
            replaced[id(n)] = name(k) if k in keys else n.args[1] if len(n.args) == 2 \
                else gast.Constant(value=None, kind=None, **line)
        elif what == "item":
            replaced[id(n)] = name(n.slice.value)
        else:
            inside = key_of(n.left) in keys
            replaced[id(n)] = gast.Constant(
                value=inside if isinstance(n.ops[0], gast.In) else not inside, kind=None, **line)
    if replaced:
        _replace(node, replaced)
    return True


def _replace(node: gast.AST, replaced: dict[int, gast.AST]) -> None:
    for parent in walk(node):
        for field, value in gast.iter_fields(parent):
            if isinstance(value, list):
                for i, v in enumerate(value):
                    if id(v) in replaced:
                        value[i] = gast.copy_location(replaced[id(v)], v)
            elif id(value) in replaced:
                setattr(parent, field, gast.copy_location(replaced[id(value)], value))


# -- calls of such a function in a caller ------------------------------------------------


def bind_keyword_calls(parsed: Any) -> None:
    """A call by name of a function of the user's that takes ``**kwargs``, with keywords the
    caller's source shows (``helper(x, scale=2.0)``, ``helper(x, **{"scale": 2.0})``, none)
    and no ``*`` argument, written as a call of its shim for those keywords, bound in the
    generated code's namespace (``parsed.bound``) and guarded as the name's binding. Other
    calls (``helper(x, **CFG)``, ``helper(*xs)``) run through the dispatch, which takes the
    shim for the keywords given when the call runs."""
    code = getattr(parsed.fn, "__code__", None)
    if code is None or not any(_takes_keywords_here(parsed.namespace.get(n), code.co_names)
                               for n in code.co_names + code.co_freevars):
        return  # (most functions: no walk of the tree)
    from adgen.rules import registry

    taken = {n.id for n in walk(parsed.tree) if isinstance(n, gast.Name)} | \
        set(parsed.namespace)
    for call in _scope_nodes(parsed.tree):
        if not isinstance(call, gast.Call):
            continue
        func = call.func
        if isinstance(func, gast.Name) and not parsed.is_local(func.id):
            holder = None  # helper(x, k=v): a global or closure name
        elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and \
                not parsed.is_local(func.value.id) and \
                isinstance(dotted_object(parsed, func.value), types.ModuleType):
            holder = dotted_object(parsed, func.value)  # utils.helper(x, k=v)
        else:
            continue
        obj = dotted_object(parsed, func)
        if not takes_keywords(obj) or registry.lookup(obj) is not None or not _users(obj):
            continue
        args = _displayed_arguments(call.args)
        keywords = _displayed_keywords(call.keywords)
        if keywords is None or args is None:
            # helper(u, **d): run through the dispatch, which sees its keywords; the
            # caller's code is compiled here without them, so a helper that may change its
            # arguments is refused here, as star_arguments refuses a writer with named
            # parameters (forward mode ran the write unseen: a wrong jvp)
            if _may_write(obj):
                raise UnsupportedError(
                    f"{obj.__name__} takes **kwargs and may change its arguments in place, and "
                    "is called with *args or a ** dict whose items adgen cannot see when it "
                    "compiles, so it cannot tell which values it changes",
                    parsed.location(call),
                    hint=f"pass the arguments and keywords one by one "
                         f"({obj.__name__}(u, rate=r)), or as displays ({obj.__name__}(*(u,), "
                         f"**{{'rate': r}}))")
            continue
        call.args = args
        try:
            shim = keyword_shim(obj, extra_keywords(obj, [k.arg for k in keywords]))
        except UnsupportedError as err:
            err.location = parsed.location(call)
            err.args = (err.format(),)
            raise
        bound = next((n for n, v in parsed.bound.items() if v is shim), None)
        if bound is None:
            keys = keyword_shim_of(shim)[1]
            base = f"{obj.__name__}_with_{'_'.join(keys)}" if keys else \
                f"{obj.__name__}_without_keywords"
            bound, k = base, 1
            while bound in taken:
                k += 1
                bound = f"{base}_{k}"
            taken.add(bound)
            parsed.bound[bound] = parsed.namespace[bound] = shim
            # the call no longer reads the name: its own guard (helper rebound: compiled
            # again); utils.helper: the module's attribute, and the name of the module
            root = func.id if holder is None else func.value.id
            parsed.bound_guards.append(Guard(
                root, root, getattr(parsed.fn, "__globals__", {}), parsed.cells.get(root),
                "same", obj if holder is None else holder))
            if holder is not None:
                parsed.bound_guards.append(Guard(func.attr, func.attr, holder.__dict__, None,
                                                 "same", obj))
        call.func = gast.copy_location(gast.Name(id=bound, ctx=gast.Load(), annotation=None,
                                                 type_comment=None), call.func)
        call.keywords = keywords
    parsed.forget_locals()


def _takes_keywords_here(value: Any, names: tuple[str, ...]) -> bool:
    """Whether a free name's value is a function of the user's taking ``**kwargs``, or a
    module of the user's holding one under a name the code reads."""
    if takes_keywords(value):
        return True
    return isinstance(value, types.ModuleType) and _users(value) and \
        any(takes_keywords(value.__dict__.get(n)) for n in names)


def _may_write(fn: Any) -> bool:
    """Whether a call of ``fn`` (with ``**kwargs``) may change an argument in place, for the
    keywords its code names (``kw["out"]``, ``kw.get("rate")``, ``"k" in kw``): its shim
    for them, as transforms.argument_writes judges it (True where that cannot tell)."""
    from adgen.transforms.argument_writes import leaves_arguments  # (rarely needed)
    from adgen.transforms.parse import parse_function

    try:
        tree = parse_function(fn).tree
    except Exception:  # noqa: BLE001 - its own compilation reports it
        return True
    kw = tree.args.kwarg.id
    keys: list[str] = []

    def key(v: Any) -> None:
        if isinstance(v, gast.Constant) and isinstance(v.value, str) and \
                v.value.isidentifier() and not keyword.iskeyword(v.value) and \
                v.value not in keys:
            keys.append(v.value)

    for n in walk(tree):
        if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and \
                n.value.id == kw:
            key(n.slice)
        elif isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and \
                isinstance(n.func.value, gast.Name) and n.func.value.id == kw and n.args:
            key(n.args[0])
        elif isinstance(n, gast.Compare) and len(n.comparators) == 1 and \
                isinstance(n.comparators[0], gast.Name) and n.comparators[0].id == kw:
            key(n.left)
    line = dict(lineno=tree.lineno, col_offset=0, end_lineno=tree.lineno, end_col_offset=0)
    tried = copy.deepcopy(tree)
    tried.args.kwarg = None
    if not _spell_out(tried, kw, tuple(keys), line):
        return True  # the dict used as a dict (for k in kw: kw[k][:] = v): cannot tell
    try:
        return not leaves_arguments(keyword_shim(fn, tuple(keys)))
    except UnsupportedError:
        return True


def _displayed_arguments(args: list[gast.expr]) -> list[gast.expr] | None:
    """A call's positional arguments with a ``*`` of a tuple or list display spelled out
    (``*(u, v)`` as ``u, v``); None where a ``*`` is anything else."""
    out: list[gast.expr] = []
    for a in args:
        if not isinstance(a, gast.Starred):
            out.append(a)
        elif isinstance(a.value, (gast.Tuple, gast.List)) and \
                not any(isinstance(e, gast.Starred) for e in a.value.elts):
            out.extend(a.value.elts)
        else:
            return None
    return out


def _displayed_keywords(keywords: list[gast.keyword]) -> list[gast.keyword] | None:
    """A call's keywords with a ``**`` of a dict display of identifier keys spelled out
    (``**{"a": 1.0}`` as ``a=1.0``, in its order); None where a ``**`` is anything else, or a
    keyword is given twice (Python's TypeError, as written)."""
    out: list[gast.keyword] = []
    for k in keywords:
        if k.arg is not None:
            out.append(k)
            continue
        d = k.value
        if not isinstance(d, gast.Dict) or any(
                not (isinstance(key, gast.Constant) and isinstance(key.value, str) and
                     key.value.isidentifier() and not keyword.iskeyword(key.value))
                for key in d.keys):
            return None
        out.extend(gast.copy_location(gast.keyword(arg=key.value, value=v), k)
                   for key, v in zip(d.keys, d.values))
    names = [k.arg for k in out]
    return out if len(set(names)) == len(names) else None
