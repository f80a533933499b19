"""Forward mode's pipeline: the jvp code of a function, compiled (``compile_tangent``).

    parse -> ... -> ssa (``front``, shared with reverse mode) -> effects + activity
          -> tangent (``tangent.tangent_code``) -> emit

Cached per function and rule-registry generation (``compile_cache``), recompiled when a guard
fails, as ``pipeline.compile_function`` is; a user function's callees are compiled first, a
directly recursive one for every parameter. What reverse mode refuses that forward mode would
get silently wrong is refused here too: a nested def writing the enclosing function's array,
a global array written in place, a function held in a variable that writes an array the call
does not pass it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.analyses.activity import activity
from adgen.transforms.analyses.effects import effects
from adgen.transforms.analyses.number_items import item_guards, number_items
from adgen.transforms.analyses.parameter_copies import written_parameter_copies
from adgen.transforms.analyses.parameter_parts import (
    held_writes,
    parameter_parts,
    unfollowed_varied,
)
from adgen.transforms.built_object_writes import checked_writes
from adgen.transforms.cached_functions import uncached
from adgen.transforms.callee_facts import returns_free_memory
from adgen.transforms.compile_cache import (
    COMPILE_LOCK,
    TANGENT_PROGRESS,
    late,
    lookup_tangent,
    remember_tangent,
    tangent_key,
)
from adgen.transforms.compiled import CompiledTangent
from adgen.transforms.emit import compile_source, to_source
from adgen.transforms.free_writes import free_write_sites, refuse_in_forward_mode
from adgen.transforms.front import (
    callee_symbol,
    free_of,
    front,
    is_user_function,
    namespace,
    resolve,
    run_pass,
)
from adgen.transforms.global_reads_after_writes import reads_after_writes
from adgen.transforms.ieee_tangents import with_ieee_fallbacks
from adgen.transforms.jvp_parameters import MISSING_DEFAULT, given_tangents, jvp_defaults
from adgen.transforms.object_classes import param_classes, receiver_of
from adgen.transforms.parse import Parsed, positional_params, varargs_of
from adgen.transforms.star_wrappers import shim_of
from adgen.transforms.tangent_only import tangent_only_maker
from adgen.transforms.unseen_calls import check_unseen_calls

from adgen.errors import AdgenError, UnsupportedError
from adgen.rules import registry


def compile_tangent(fn: Any, lifted: tuple[str, ...] = (),
                    wrt: tuple[int, ...] | None = None, packed: bool = False
                    ) -> CompiledTangent:
    """Compiles the forward-mode (jvp) code of ``fn`` (cached per function and registry
    generation, recompiled when a guard fails, as :func:`compile_function`).

    ``wrt``: the positions of the only parameters whose tangents the caller gives (None: all
    of them); the others are constants, so no tangent flows from them (JAX's symbolic zeros):
    ``x / gamma`` with an infinite ``x`` has the tangent ``x_dot / gamma``, not one with
    ``gamma_dot * x / gamma`` = 0 * inf = nan in it. A directly recursive function, whose
    calls of itself may pass a varying value where a constant was, is compiled for all.
    ``packed``: ``wrt`` counts a function's ``*xs`` as one parameter, the tuple the tree packs
    them into (``jvp_parameters.given_tangents``); without it, a function with ``*xs`` is
    compiled for all.

    Raises:
        AdgenError: for code forward mode cannot differentiate, naming the file and line.
    """
    if registry.frule_of(fn) is not None:  # the user's jvp rule (adgen.custom_jvp)
        from adgen.custom_jvp import frule_tangent

        return frule_tangent(fn)
    with COMPILE_LOCK:
        from adgen.rules import jvps

        jvps.register_runtime_jvps()
        # a nested def is compiled from its code object (lifted: its free variables)
        plain = getattr(uncached(fn), "__code__", None)
        # (a *args wrapper compiles as its shim, whose parameters are the wrapped function's)
        star = plain is not None and varargs_of(uncached(fn)) is not None
        if wrt is not None and (plain is None or star and (
                not packed or shim_of(uncached(fn)) is not uncached(fn)) or
                any(k >= plain.co_argcount + star + plain.co_kwonlyargcount + len(lifted)
                    for k in wrt)):
            # (positions among the parameters as the tree flattens them: positional, then
            # *xs as one, then keyword-only, then a nested def's lifted free variables)
            wrt = None
        key = tangent_key(fn, lifted, wrt)
        hit = lookup_tangent(key, fn, lifted)
        if hit is not None:
            return hit
        compiled = _compile_tangent(fn, lifted, wrt)
        if compiled is None:  # recursive: the jvp of every parameter
            return compile_tangent(fn, lifted)
        remember_tangent(key, fn, compiled)
        return compiled


def _compile_tangent(fn: Any, lifted: tuple[str, ...] = (),
                     wrt: tuple[int, ...] | None = None) -> CompiledTangent | None:
    """:func:`compile_tangent`'s compilation; None when ``wrt`` is given and ``fn`` calls
    itself (the caller compiles it for every parameter then)."""
    from adgen.transforms.argument_writes import calls_change_parameters, leaves_arguments
    from adgen.transforms.result_derivatives import returns_no_derivative
    from adgen.transforms.tangent import CalleeJvp, tangent_code, tangent_params

    if getattr(fn, "__adgen_transform__", False):
        from adgen.errors import UnsupportedError

        raise UnsupportedError(f"{fn!r} is already a derivative made by adgen; forward mode "
                               "differentiates the function itself, not a call of one",
                               hint="third derivatives: adgen.jvp(adgen.hessian(f), (x,), "
                                    "(v,)) or adgen.jacfwd(adgen.hessian(f))")
    from adgen.transforms.global_object_tangents import (
        refuse_differentiated_again,
        refuse_module_path_methods,
    )

    refuse_differentiated_again(fn)  # (jvp code giving a global object a tangent)
    fn = shim_of(uncached(fn))  # the function an lru_cache wraps; a *args wrapper's
    parsed, tree, namer, _ = front(fn, lifted=lifted)
    refuse_module_path_methods(parsed, tree)  # (cellmod.CELL.setup(x): not followed)
    params = [a.id for a in tree.args.args]
    tparams = tangent_params(tree, namer)
    # (fn, its jvp's signature) while fn compiles: a recursive call finds it; the entry
    # holds fn, so no other object is found by its id (a stale entry was checked by `is`)
    TANGENT_PROGRESS[id(fn)] = (fn, CalleeJvp(tree.name, tparams, params))
    callees: dict[str, CompiledTangent] = {}
    symbols: dict[int, str] = {}
    held: list[Any] = []

    recursive = [False]

    def callee(obj: Any, node: gast.AST) -> Any:
        if obj is fn:
            recursive[0] = True
            return TANGENT_PROGRESS[id(fn)][1]
        given = given_tangents(node, obj, lambda n: act.active(n.id) and
                                resolve(parsed, n) is None)
        try:
            progress = TANGENT_PROGRESS.get(id(obj))
            c = progress[1] if progress is not None and progress[0] is obj else \
                compile_tangent(obj, wrt=given, packed=True)
        except AdgenError as err:
            if err.location is None or err.location.file != parsed.file:
                err.at_call(parsed.location(node), obj)
            raise
        # one symbol per callee and set of arguments given tangents (its jvp for them)
        sym = symbols.get((id(obj), given))
        if sym is None:
            sym = callee_symbol(obj, fn, tree.name, set(symbols.values()), namer.taken)
            symbols[(id(obj), given)] = sym
            held.append(obj)  # alive while symbols is used: no other object takes its id
        if isinstance(c, CompiledTangent):
            callees[sym] = c
            return CalleeJvp(sym, c.tangent_params, c.params)
        callees[sym] = c  # a function being compiled (mutual recursion): bound when done
        return CalleeJvp(sym, c.tangent_params, c.params)

    def nested_function(d: gast.FunctionDef) -> Any:
        """The function of a nested def and its free variables (nested_defs)."""
        from adgen.transforms.nested_defs import nested_function as made

        inner, lifted = made(fn, d, parsed)
        held.append(inner)  # alive while summaries is used: no other object takes its id
        return inner, lifted

    def nested(d: gast.FunctionDef, own: tuple[int, ...] | None = None,
               varies: Callable[[str], bool] | None = None) -> Any:
        """The jvp of a nested def, its free variables lifted into trailing parameters,
        for tangents of its own parameters at ``own`` and the free variables that ``varies``
        alone (None: all of them): ``inner(y)`` of ``def inner(v): return np.log(v) * x``
        under ``hessian`` in x passes y no tangent, and a zero one made ``log``'s ``0 / 0``
        a NaN in the Hessian at y = 0."""
        inner, lifted = nested_function(d)
        given = None if own is None or varies is None else own + tuple(
            len(d.args.args) + j for j, f in enumerate(lifted) if varies(f))
        c = compile_tangent(inner, lifted, wrt=given)
        sym = symbols.get((id(inner.__code__), given))
        if sym is None:
            sym = callee_symbol(inner, fn, tree.name, set(symbols.values()), namer.taken)
            symbols[(id(inner.__code__), given)] = sym
        callees[sym] = c
        return CalleeJvp(sym, c.tangent_params, c.params), list(lifted)

    def leaving(d: gast.FunctionDef) -> bool:
        """Whether no call of the nested def ``d`` changes a value passed to it."""
        from adgen.transforms.argument_writes import leaves_arguments

        try:
            inner, lifted = nested_function(d)
        except AdgenError:
            return False
        return leaves_arguments(inner, summaries, lifted)

    try:
        closures = [(free_of(d, parsed), {d.name}) for d in parsed.nested_defs]
        for d, (free, _) in zip(parsed.nested_defs, closures):
            from adgen.transforms.nested_defs import refuse_closure_writes

            # as in reverse mode: the jvp of a nested def writing the enclosing function's
            # array (def put(): out[:] = x ** 2) left out's tangent as it was (silently)
            refuse_closure_writes(d, free, parsed)
        from adgen.transforms.called_back import refuse_writing_callbacks

        refuse_writing_callbacks(tree, parsed)  # sorted(xs, key=k), k writing its argument
        eff = run_pass("tangent", lambda: effects(tree, None, set(), lambda n: resolve(parsed, n)),
                   parsed)
        # forward mode has no tangent for a global array written in place (it raised
        # NameError: 'WORK_dot' is not defined), nor for one passed to a helper that writes
        # it (lap(u, out=BUF), OP(u) of OP = partial(lap, out=BUF): a zero tangent, silently)
        summaries: dict[int, bool] = {}
        # (and B = basis(n) of a cached helper or one returning a global array: B *= x)
        kept = functools.partial(returns_free_memory, parsed, "save")
        free_eff = effects(tree, functools.partial(_arguments_written, parsed, summaries),
                           set(), lambda n: resolve(parsed, n), free=True, free_result=kept)
        # (STATS["calls"] += 1 of a global dict holding a number writes no array: guarded)
        numbers, item_checks = item_guards(number_items(tree, free_eff, parsed.free), parsed)
        # (a write into an array of an object the function builds by a call, s.x[:] = x0 of
        # s = System(A0, B0), is followed, checked when it runs: built_object_writes)
        free_sites = free_write_sites(free_eff, numbers)
        refused, checks = checked_writes(tree, free_eff, free_sites, kept)
        refuse_in_forward_mode(tuple(parsed.location(w.stmt) for w in refused))
        outputs = {p for p in params if "param" in eff.written} | {
            w.target for w in eff.writes if w.container and w.target in params}
        # a part of a container, written in place, changes its holder (as in pipeline._compile)
        parts = parameter_parts(tree, eff, set(params))
        outputs |= set(parts) | {part.param for part in parts.values()}
        # and a copy of a parameter written as a container (q = d; q["h"] = v: the caller's
        # dict; the helper's code for it was left out, silently)
        outputs |= written_parameter_copies(tree, eff, params)
        # ... and a helper called by name that writes them (argument_writes)
        if calls_change_parameters(parsed, tree, eff.buffers, summaries):
            outputs |= set(params)
        held_sets = [({t}, {h}) for t, h in held_writes(tree, eff, set(params), by_index=True)]
        varied = None if wrt is None else {params[k] for k in wrt if k < len(params)}
        # with constants among the parameters, a plain binding varies its own name only (as
        # in pipeline._compile): parameters may share memory, and only a write in place into one
        # changes the others (with every parameter varied it changes nothing)
        # a helper that changes none of its arguments leaves them constant: the self.gamma
        # passed to softmin(a, b, c, gamma) takes no tangent (argument_writes)
        # a nested def that changes none of its arguments leaves them constant too (every
        # def of its name: one bound in each branch of an if is one name)
        from adgen.transforms.nested_defs import only_defined

        names = only_defined(tree, {d.name for d in parsed.nested_defs})
        leaving_defs = frozenset(n for n in names if all(
            leaving(d) for d in parsed.nested_defs if d.name == n))
        act = activity(tree, eff.aliases(), outputs, closures + held_sets, varied,
                       lambda n: resolve(parsed, n),
                       None if wrt is None else {id(w.stmt) for w in eff.writes},
                       functools.partial(leaves_arguments, memo=summaries), leaving_defs,
                       attribute_constants=True,
                       result_free=functools.partial(returns_no_derivative, memo={}))
        _refuse_unfollowed_part(tree, eff, set(params), act.varied, parsed)
        code = run_pass("tangent", lambda: tangent_code(parsed, tree, namer, act,
                                                    lambda n: resolve(parsed, n), callee,
                                                    tparams, nested, checks), parsed)
        # as in reverse mode: a function held in a variable that the jvp code runs as it is
        # (cb()) and that writes an array the call does not pass it (jvp(f, (WORK, cb), ...)
        # with cb tripling WORK: the tangent missed the write, silently) is refused when it
        # runs (transforms/unseen_calls.py)
        run_pass("tangent", lambda: check_unseen_calls(code.function, lambda call: ()), parsed)
    finally:
        del TANGENT_PROGRESS[id(fn)]
    if wrt is not None and recursive[0]:
        return None
    ns, guards = namespace(fn, parsed)
    guards.extend(item_checks)
    # (tangents of Python floats are floats: their operators that raise in Python compute
    # again as NumPy's where they raise, ieee_tangents; not in the tree tangent_only gives
    # second derivatives, whose tangents are NumPy numbers)
    own = to_source(with_ieee_fallbacks(code.function, code.tangents)) + "\n"
    for sym, c in callees.items():
        if isinstance(c, CompiledTangent):
            ns[f"{sym}_jvp"] = c.jvp
            guards.extend(g for g in c.guards if g not in guards)
        else:  # mutual recursion: looked up at call time
            ns[f"{sym}_jvp"] = late(functools.partial(compile_tangent, code.callees[sym]),
                                    "jvp")
    ns["__adgen_file__"] = parsed.file
    if code.global_objects:  # (kf_dot = global_object_tangent(kf, key): its state at the call)
        from adgen.transforms.global_object_tangents import global_object_tangent

        ns["global_object_tangent"] = global_object_tangent
    compile_source(own, f"<adgen {fn.__qualname__} jvp>", ns)
    jvp = ns[code.function.name]
    if params and wrt is not None and 0 not in wrt:
        # a constant first parameter (a method's object): whether its stores vary it (so
        # every other read of it takes its tangent) and the attributes read as constants
        # (analyses.constant_attributes), for tangent_calls to call this jvp code on an
        # object whose tangent is zero in those attributes only (a second m.keeps(w))
        jvp.__adgen_first_constants__ = (params[0] in act.varied, frozenset(
            a for p, a in (act.constant_reads or {}).values() if p == params[0]))
    # the same code returning out_dot only, for second derivatives (made when first asked)
    jvp.__adgen_tangent_only__ = tangent_only_maker(code.function, ns, fn.__qualname__)
    # where it writes a parameter in place (itself or by a call): jvp refuses an argument
    # with a tangent that shares memory with a global array it reads (aliased_globals)
    # (only where a read of a global may come after the write: y = G * x; x[0] = 5.0 is
    # right with G passed as x, the jvp code runs in the program's order)
    param_writes = [w.stmt for w in free_eff.writes if "param" in w.buffers and not w.container]
    if param_writes and reads_after_writes(
            tree, {id(w) for w in param_writes}, free_eff.free,
            lambda c: (obj := resolve(parsed, c.func)) is None or is_user_function(obj)):
        jvp.__adgen_param_writes__ = tuple(parsed.location(w) for w in param_writes)
    if param_classes(fn):
        # a method compiled for its receiver's class: so is its jvp code, which reverse mode
        # differentiates again (hessian), where self is an object of that class (and the
        # parameters compiled for their classes: object_classes.typed_for)
        jvp.__adgen_receiver__ = receiver_of(fn)
        # (a tangent of an object is an object of its class, runtime.object_with: model_dot
        # of loss_jvp(model, u, model_dot, u_dot) is one, not an array u may share)
        jvp.__adgen_param_classes__ = getattr(fn, "__adgen_param_classes__", ()) + tuple(
            (len(params) + k, c) for k, c in sorted(param_classes(fn).items())
            if len(tparams) == len(params) and not lifted)
    defaults = jvp_defaults(fn, params, len(lifted), len(tparams))
    kwonly = jvp.__code__.co_kwonlyargcount
    if kwonly:  # keyword-only parameters and the tangents after them: by name
        names = jvp.__code__.co_varnames[jvp.__code__.co_argcount:][:kwonly]
        everything = jvp_defaults(fn, params, len(lifted), len(tparams), every=True)
        jvp.__kwdefaults__ = {n: v for n, v in zip(names, everything[-kwonly:])
                              if v is not MISSING_DEFAULT}
        positional = list(everything[:-kwonly])
        defaults = ()
        while positional and positional[-1] is not MISSING_DEFAULT:  # the suffix with defaults
            defaults = (positional.pop(),) + defaults
    jvp.__defaults__ = defaults
    source = own
    for sym, c in callees.items():
        if isinstance(c, CompiledTangent) and c.name != tree.name:
            text = c.own_source if sym == c.name else re.sub(
                rf"\b{re.escape(c.name)}_jvp\b", f"{sym}_jvp", c.own_source)
            source = text + "\n\n" + source
    followed = [parsed.location(w.stmt) for w in free_sites if id(w.stmt) in checks] + [
        loc for c in callees.values() if isinstance(c, CompiledTangent)
        for loc in c.object_writes]
    return CompiledTangent(tree.name, jvp, source, own, params, tparams, tuple(guards),
                           tuple(followed))


def _arguments_written(parsed: Parsed, summaries: dict[int, bool], call: gast.Call
                       ) -> list[gast.expr]:
    """Forward mode's summary of a call for the effects analysis: the arguments a call of a
    user function writes in place, as its reverse-mode compilation says (its
    ``written_params``), or, where that fails, every argument of one that may change one
    (transforms.argument_writes); none for other calls."""
    from adgen.transforms.argument_writes import leaves_arguments

    obj = resolve(parsed, call.func)
    if obj is None or not is_user_function(obj) or registry.lookup(obj) is not None or \
            str(getattr(obj, "__module__", "")).startswith(("numpy", "adgen.")) or \
            leaves_arguments(obj, summaries):
        return []
    every = list(call.args) + [k.value for k in call.keywords]
    from adgen.transforms.pipeline import compile_function

    try:
        compiled = compile_function(obj)
    except AdgenError:
        return every
    written = compiled.written_params
    if not compiled.mutates_params:
        return []
    if written is True:
        return every
    names = positional_params(obj, len(call.args))
    return [a for k, a in enumerate(call.args) if k < len(names) and names[k] in written] + \
        [k.value for k in call.keywords if k.arg in written]


def _refuse_unfollowed_part(tree: gast.FunctionDef, eff: Any, params: set[str],
                            varied: set[str], parsed: Parsed) -> None:
    """Refuses, as reverse mode does, a value with a derivative put into a list, dict or
    object read out of a parameter where the analyses do not follow it back to the parameter
    (analyses.parameter_parts.unfollowed_varied): its jvp code kept no tangent for it."""
    hit = unfollowed_varied(tree, eff, params, varied)
    if hit is None:
        return
    st, _, holder = hit
    raise UnsupportedError(
        f"forward mode (jvp) does not support changing in place a list, dict or object read "
        f"out of {holder} where adgen cannot follow it back to {holder} (it follows one "
        f"level inside {holder}, written through the name it was read into, with no other "
        f"use of {holder} between)", parsed.location(st),
        hint=f"compute what goes in first (v = ...), then change it on a line of its own "
             f"({holder}.items.append(v)), or build a new list and store it ({holder}.items "
             f"= {holder}.items + [v])")
