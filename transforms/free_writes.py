"""In-place writes of global and closure arrays across a call, refused at the call.

adgen follows an in-place write of a global or closure array (``WORK[:] = p``,
``cfg.buf[1:] = v``) inside the function that makes it: analyses.effects gives such names one
buffer (``effects.FREE``), so a value the pullback reads and a later write overwrites is saved
or refused there. Across a call it does not: a helper's write is not a write of any of its
arguments, so its caller's captures of the array are not guarded against it, the derivative
the written values carry does not reach the caller's later reads of the array, and a helper's
reads of an array its caller wrote take it for a constant. Each was a silently wrong gradient;
such a call is refused at its line instead:

- :func:`refuse_written_by_callee` -- the caller calls a function of the user's that writes a
  global or closure array in place (itself, or a function it calls);
- :func:`refuse_read_by_callee` -- the caller writes such an array in place and calls a
  function of the user's that reads a global or closure array;
- :func:`refuse_written_defaults` (:func:`written_default` for a call through a variable) --
  the caller leaves to its default a parameter the function it calls writes in place (``def
  helper(y, w=np.ones(n)): w *= 2.0``, ``def h(y, acc=[]): acc.append(y)``): the default is
  one object, made when ``def`` ran, that every such call writes, as a global.

Input: the caller's parsed function and its calls (the effects analysis's results are not
changed); output: nothing, or an ``UnsupportedError`` at the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.analyses.effects import FREE, Effects, written_name
from adgen.transforms.node_index import nodes_of
from adgen.transforms.parse import Parsed, positional_params

from adgen.errors import AdgenError, Location, UnsupportedError

_HINT = ("pass the array to the function as an argument (helper(p, WORK)), whose in-place "
         "writes adgen follows, or make the write in the function differentiated")


def free_writes(eff: Effects, parsed: Parsed,
                numbers: tuple[Any, ...] = ()) -> tuple[Location, ...]:
    """Where ``eff``'s function writes a global or closure array in place: by a store or an
    update (``WORK[1:] += v``, ``b = cfg.buf; b *= 2``), or by passing the free array itself
    to a function that writes it (a function's writes of other arguments are its caller's
    business: ``mutating_call`` says a generated callee writes them all). Not a list, dict
    or object store, nor a call that changes a global object or container: those replace
    references, which a caller's effects follow as a parameter's. Nor the updates of
    ``numbers`` (analyses.number_items: ``STATS["calls"] += 1`` where the item holds a
    number, guarded)."""
    return tuple(parsed.location(w.stmt) for w in free_write_sites(eff, numbers))


def free_write_sites(eff: Effects, numbers: tuple[Any, ...] = ()) -> list[Any]:
    """The writes (``effects.Write``) :func:`free_writes` gives the locations of."""
    skip = {id(i.stmt) for i in numbers}
    return [w for w in eff.writes
            if FREE in w.buffers and not w.container and id(w.stmt) not in skip and
            eff.kinds.get(w.target) not in ("list", "dict", "tuple", "object") and
            (written_name(w.stmt) == w.target or w.target in eff.free)]


def free_reads(eff: Effects) -> bool:
    """Whether ``eff``'s function reads a global or closure array, container or object."""
    return any(FREE in bufs for bufs in eff.buffers.values())


def refuse_written_by_callee(name: str, writes: tuple[Location, ...], at: Location) -> None:
    """Refuses a call, at ``at``, of the function ``name`` that writes a global or closure
    array in place at ``writes`` (its own lines or a callee's)."""
    if not writes:
        return
    w = writes[0]
    # a nested def is compiled from the generated forward's copy: name the def, not that code
    name = name.split(".<locals>.")[-1]
    where = f"({w.source_line.strip()})" if w.file.startswith("<adgen") else \
        f"at {w} ({w.source_line.strip()})"
    raise UnsupportedError(
        f"{name} writes a global or closure array in place {where}, and adgen follows such "
        "a write only in the function that makes it, not in a function that calls it", at,
        hint=_HINT)


def refuse_written_defaults(fn: Any, written: Any, containers: bool, call: gast.Call,
                            at: Location) -> None:
    """Refuses, at ``at``, a call of the user's function ``fn`` that leaves to its default a
    parameter ``fn`` writes in place (:func:`written_default`)."""
    if any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return  # (f(*args), f(**kw): which parameters it passes is not known here)
    passed = set(positional_params(fn, len(call.args))) | {k.arg for k in call.keywords}
    written_default(fn, written, containers, passed, at)


def written_default(fn: Any, written: Any, containers: bool, passed: set[str],
                    at: Location | None = None) -> None:
    """Refuses a call of the user's function ``fn`` passing the parameters ``passed`` that
    leaves to its default a parameter ``fn`` writes in place: an array in ``written`` (the
    names of the parameters it writes, True: any), or a list or dict when ``containers`` (it
    changes a container parameter: ``acc.append(y)``, ``memo[k] = v``). The default is made
    once, when ``def`` ran, and each such call writes that same object: a pullback of an
    earlier call reading it would read what a later call wrote, as for a global array. A
    list or dict holding only ints (a call counter, ``calls=[0]``) carries no derivative and
    is left alone. ``at``: the call (None: where the call runs, for a call through a
    variable, located by the caller)."""
    import inspect

    import numpy as np

    if not (written or containers):
        return
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return
    for p in params:
        d = p.default
        if p.name in passed:
            continue
        if isinstance(d, np.ndarray):
            if written is not True and p.name not in (written or ()):
                continue
        elif isinstance(d, (list, dict)):
            items = list(d.values()) if isinstance(d, dict) else d
            if not (containers or written is True or p.name in (written or ())) or \
                    (items and all(type(v) is int for v in items)):
                continue
        else:
            continue
        name = getattr(fn, "__qualname__", str(fn))
        short = name.split(".")[-1]
        kind = "an array" if isinstance(d, np.ndarray) else f"a {type(d).__name__}"
        raise UnsupportedError(
            f"{name} changes its parameter {p.name} in place, and this call leaves {p.name} "
            f"to its default, {kind} made once when def {short} ran, which every call "
            "changing it shares (as a global): adgen follows the in-place writes of an "
            "argument the caller passes, not of a default", at,
            hint=f"pass it ({short}(..., {p.name}=buf), buf made by the caller), or make it "
                 f"in the function ({p.name}=None in the def, then if {p.name} is None: "
                 f"{p.name} = ...)")


def refuse_in_forward_mode(writes: tuple[Location, ...]) -> None:
    """Refuses, at the first of ``writes``, forward mode (``jvp``, ``hessian``, ...) of a
    function that writes a global or closure array in place: its jvp code has no tangent
    for the array."""
    if writes:
        raise UnsupportedError(
            "forward mode (jvp, jacfwd, hvp, hessian) does not follow an in-place write of a "
            "global or closure array", writes[0],
            hint="pass the array to the function as an argument (f(p, WORK)), or use grad "
                 "or jacrev")


def refuse_read_by_callee(tree: gast.FunctionDef, parsed: Parsed, eff: Effects,
                          reads: Any) -> None:
    """Refuses a call of a function of the user's that reads a global or closure array when
    the caller (``tree``, its effects ``eff``) writes one in place: the callee would take the
    written array for a constant. ``reads(call)`` is the name of the function the call runs
    when that function reads such an array, else None."""
    own = free_writes(eff, parsed)
    if not own:
        return
    nested = {d.name: d for d in parsed.nested_defs}
    for call in nodes_of(tree, gast.Call):
        f = call.func
        name = f.id if isinstance(f, gast.Name) and f.id in nested and \
            _reads_free_array(nested[f.id], parsed) else reads(call)
        if name:
            w = own[0]
            raise UnsupportedError(
                f"{name} reads a global or closure array, and this function writes one in "
                f"place at {w} ({w.source_line.strip()}): adgen cannot follow the written "
                "values into the function it calls", parsed.location(call), hint=_HINT)


def refuse_kept_results(tree: gast.FunctionDef, parsed: Parsed, eff: Effects,
                        kept: Callable[[gast.Call], bool]) -> None:
    """Refuses a call whose result may be memory that outlives the call (``kept(call)``,
    callee_facts.returns_free_memory: a functools cache's result, a global array a helper
    returns, a default it returns) when the function (``tree``, its effects ``eff``) writes
    a global or closure array in place, that result included (``B = basis(n); B *= x``):
    another call returning the same array, or a read of the global, would take the written
    values for a constant."""
    own = free_writes(eff, parsed)
    if not own:
        return
    for call in nodes_of(tree, gast.Call):
        if kept(call):
            w = own[0]
            name = gast.unparse(call.func).strip()
            from adgen.transforms.front import resolve

            cls = resolve(parsed, call.func)
            if isinstance(cls, type):
                # (imported where an object holding a global array is built and written)
                from adgen.transforms.global_slots import writes_miss_global_slots

                if writes_miss_global_slots(tree, cls, call,
                                            [w.stmt for w in free_write_sites(eff)]):
                    continue  # s.h[:] = v into an array __init__ made: not the global's
                raise UnsupportedError(
                    f"{name}() builds an object holding a global or closure array (its "
                    "__init__ stores one, self.x = X0), and this function writes such an array "
                    f"in place at {w} ({w.source_line.strip()}): the write changes the global, "
                    "which adgen would take for a constant", parsed.location(call),
                    hint="store a copy in __init__ (self.x = X0.copy()), or pass the array "
                         f"to {name}(...) and to this function as arguments")
            raise UnsupportedError(
                f"{name}() may return an array that outlives the call (a result a "
                "functools cache keeps, a global array, a default it returns), and this "
                f"function writes such an array in place at {w} ({w.source_line.strip()}): "
                "adgen cannot follow the written values into what a later call or a read of "
                "the array returns", parsed.location(call),
                hint=f"write into a copy: {name}(...).copy(), or make the array in this "
                     "function")


def refuse_unseen_writes(tree: gast.FunctionDef, parsed: Parsed,
                         writes_of: Callable[[Any], tuple[Location, ...]]) -> None:
    """Refuses a call adgen may run as a plain call (its arguments' derivatives reach
    nothing it returns or writes that adgen can see) although it writes a global or closure
    array in place: ``self.fill(p)`` of a method of the function's own class
    (``writes_of(method)``: its compiled ``free_writes``), and a call of a nested def whose
    body stores into a free array (``WORK[:] = q``) or updates one (``WORK += q``)."""
    nested = {d.name: d for d in parsed.nested_defs}
    for call in nodes_of(tree, gast.Call):
        f = call.func
        if isinstance(f, gast.Name) and f.id in nested:
            for w in _free_stores(nested[f.id], parsed):
                refuse_written_by_callee(f.id, (parsed.location(w),), parsed.location(call))
        method = _own_method(parsed, f)
        if method is None:
            continue
        try:
            writes = writes_of(method)
        except AdgenError:
            continue  # reported where the call runs, if it does
        refuse_written_by_callee(method.__qualname__, writes, parsed.location(call))


def _free_stores(d: gast.FunctionDef, parsed: Parsed) -> list[gast.stmt]:
    """The statements of nested def ``d`` that write, in place, an array that is neither a
    parameter nor a local of ``d`` nor of the function around it (a global, a cell)."""
    import numpy as np

    own = {a.id for a in d.args.args} | {n.id for n in nodes_of(d, gast.Name)
                                          if isinstance(n.ctx, gast.Store)}
    out = []
    for st in nodes_of(d, gast.stmt):
        target = st.targets[0] if isinstance(st, gast.Assign) else \
            st.target if isinstance(st, gast.AugAssign) else None
        if isinstance(st, gast.Assign) and not isinstance(target, gast.Subscript):
            continue
        while isinstance(target, (gast.Subscript, gast.Attribute)):
            target = target.value
        if isinstance(target, gast.Name) and target.id not in own and \
                not parsed.is_local(target.id) and \
                isinstance(parsed.namespace.get(target.id), np.ndarray):
            out.append(st)
    return out


def _reads_free_array(d: gast.FunctionDef, parsed: Parsed) -> bool:
    """Whether nested def ``d`` reads a global or closure array of the function around it
    (a name neither ``d`` nor that function binds)."""
    import numpy as np

    own = {a.id for a in d.args.args} | {n.id for n in nodes_of(d, gast.Name)
                                          if isinstance(n.ctx, gast.Store)}
    return any(isinstance(n.ctx, gast.Load) and n.id not in own and not parsed.is_local(n.id)
               and isinstance(parsed.namespace.get(n.id), np.ndarray)
               for n in nodes_of(d, gast.Name))


def _own_method(parsed: Parsed, f: gast.expr) -> Any:
    """The function ``self.m`` calls in a method whose class defines (or inherits) ``m``,
    else None."""
    import inspect
    import types

    fn = parsed.fn
    code = getattr(fn, "__code__", None)
    if not (isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and code and
            code.co_argcount and f.value.id == code.co_varnames[0]):
        return None
    owner: Any = inspect.getmodule(fn)
    for part in fn.__qualname__.split(".")[:-1]:
        owner = getattr(owner, part, None)
    if not isinstance(owner, type):
        return None
    method = inspect.getattr_static(owner, f.attr, None)
    return method if isinstance(method, types.FunctionType) else None
