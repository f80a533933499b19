"""The pipeline: the one ordered list of passes, the compile cache, and stage dumps.

    parse -> validate -> lower_control -> desugar -> anf -> lower_mutation -> ssa
          -> effects + activity (analyses) -> reverse -> cleanup -> free_values -> emit

The passes up to ``ssa`` are the front end shared with forward mode (``front.py``); ``parse``
reads the function as Python binds it (``bindings``: its free names, checked at each call by
guards). ``compile_function(fn, mutation=...)`` runs the passes (cached per
function, policy and rule-registry generation, so a rule registered later takes effect at the
next call, and recompiled when a guard fails: a redefined helper, a global of another kind;
the caches are ``compile_cache``'s);
``stage_source`` shows
the code after any named pass (the debugging tool: ``adgen FILE --stage ssa``).
Forward mode's pipeline (jvp code) is ``tangent_pipeline.compile_tangent``.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import gast
from adgen.transforms.analyses.activity import activity
from adgen.transforms.analyses.changed_parameters import parameters_changed_by_calls
from adgen.transforms.analyses.effects import effects, returns_fresh
from adgen.transforms.analyses.floats import column_dtypes, float64_arrays
from adgen.transforms.analyses.kinds import (
    CONTAINERS,
    FLOAT_ARG,
    NUMBER,
    is_object_entry,
    kinds,
    param_kind,
)
from adgen.transforms.analyses.made_containers import (
    derivative_functions,
    displays,
    returned_container,
)
from adgen.transforms.analyses.number_items import (
    changed_by_caller,
    counter_stores,
    item_guards,
    number_items,
    refuse_counter_stores,
)
from adgen.transforms.analyses.number_updates import number_updates
from adgen.transforms.analyses.parameter_copies import written_parameter_copies
from adgen.transforms.analyses.returned_params import returned_free, returned_params
from adgen.transforms.analyses.shift_invariance import shift_invariant
from adgen.transforms.bindings import failed
from adgen.transforms.cached_functions import uncached
from adgen.transforms.callee_facts import (
    method_callees,
    parameters_called,
    reads_free,
    returns_free_memory,
    viewed_arguments,
)
from adgen.transforms.cleanup import cleanup
from adgen.transforms.compile_cache import (
    CLOSURES,
    COMPILE_LOCK,
    IN_PROGRESS,
    compile_key,
    compiling,
    failed_before,
    late,
    lookup,
    register_nested,
    remember,
    remember_failure,
)
from adgen.transforms.compile_cache import clear_cache as clear_cache  # pipeline.clear_cache
from adgen.transforms.compiled import Compiled
from adgen.transforms.dead_copies import drop_dead_copies, has_loop
from adgen.transforms.emit import compile_source, to_source, unnumbered
from adgen.transforms.feature_names import CALLBACK_CALLERS
from adgen.transforms.free_values import save_free_values
from adgen.transforms.free_writes import (
    free_reads,
    free_writes,
    refuse_kept_results,
    refuse_read_by_callee,
    refuse_unseen_writes,
    refuse_written_by_callee,
    refuse_written_defaults,
)
from adgen.transforms.front import (
    FRONT_PASSES,
    callee_symbol,
    free_of,
    front,
    is_user_function,
    namespace,
    resolve,
    returned_kind,
    run_pass,
)
from adgen.transforms.lean_forward import drop_dead_arrays
from adgen.transforms.lean_pullback import lean_pullback
from adgen.transforms.node_index import frozen
from adgen.transforms.object_classes import built_objects, receiver_of, typed_for
from adgen.transforms.parse import positional_params, varargs_of
from adgen.transforms.reverse import reverse
from adgen.transforms.single_use import consumable_saved, shape_numbers
from adgen.transforms.star_wrappers import shim_of
from adgen.transforms.unseen_calls import check_unseen_calls
from adgen.transforms.walk import walk

from adgen.errors import AdgenError, CompilerError, MutationError, UnsupportedError
from adgen.rules import nondiff_params, registry

PASS_NAMES = FRONT_PASSES + ["reverse", "cleanup", "free_values"]

# Names the forward function needs from adgen (the pullback gets all of adgen.runtime).
FORWARD_RUNTIME = ("capture", "before_write", "write_region", "call_forward", "loop_sequence",
                   "dict_keys", "unpacked_len", "index_with_derivative", "flat_view", "diagonal_index", "tape_columns",
                   "partial_try", "plain_result")



def compile_function(fn: Any, *, mutation: str = "save",
                     wrt: tuple[int, ...] | None = None,
                     sig: tuple[Any, ...] | None = None,
                     single_use: bool = False) -> Compiled:
    """Compiles ``fn`` (cached per function, policy, rule-registry generation, ``wrt``,
    ``sig`` and ``single_use``: ``compile_cache``); thread-safe (one compilation at a time,
    see ``compile_cache.COMPILE_LOCK``).

    Args:
        fn: the function.
        mutation: "save" or "strict".
        wrt: the positions of the parameters to differentiate (as ``grad``'s argnums); None
            for all of them (``vjp``, and every callee). The others get no adjoint code.
        sig: the argument signature (kinds.signature) to specialise to, or None.
        single_use: the pullback runs once, right after its forward (``grad``'s and
            ``value_and_grad``'s call, never ``vjp``'s nor a higher derivative's): it may
            write in place the saved arrays nothing else holds (transforms/single_use.py).

    Raises:
        AdgenError: for code adgen cannot differentiate, naming the file and line.
    """
    with COMPILE_LOCK, compiling():
        return _compile_function(fn, mutation=mutation, wrt=wrt, sig=sig,
                                 single_use=single_use)


def changes_containers(mutation: str, fn: Any) -> bool:
    """Whether a call of the user function ``fn`` may change an object, list or dict it is
    given (its compiled code's ``mutates_containers``; False where it does not compile: the
    call's own compilation says why)."""
    try:
        return compile_function(fn, mutation=mutation).mutates_containers
    except AdgenError:
        return False


def _compile_function(fn: Any, *, mutation: str = "save",
                      wrt: tuple[int, ...] | None = None,
                      sig: tuple[Any, ...] | None = None,
                      single_use: bool = False) -> Compiled:
    """:func:`compile_function`, with the compile lock held."""
    if getattr(fn, "__adgen_transform__", False):
        from adgen.errors import UnsupportedError

        raise UnsupportedError(
            f"{fn!r} is already a derivative made by adgen; adgen takes derivatives of "
            "derivatives by transforming the function itself, not through a call of one "
            "inside the function it differentiates",
            hint="transform the function itself: adgen.hessian(f), adgen.hvp(f), "
                 "adgen.jacrev(adgen.grad(f)) or adgen.grad(adgen.grad(f)) for second "
                 "derivatives; adgen.jacfwd(adgen.hessian(f)), adgen.jvp(adgen.hessian(f), "
                 "(x,), (v,)) or adgen.grad(adgen.grad(adgen.grad(f))) for third ones")
    if registry.lookup(fn) is not None:
        return _from_rule(fn)
    fn = uncached(fn)  # an lru_cache'd function: the function it wraps (cached_functions)
    if registry.lookup(fn) is not None:
        return _from_rule(fn)
    fn = shim_of(fn)  # def wrapper(*args, **kwargs) as the function it wraps takes them
    if sig is not None:  # objects' classes: a copy of fn for them where it calls methods
        fn, sig = typed_for(fn, sig)
    if wrt is not None:
        # (every parameter as the tree flattens them, keyword-only ones included: grad of
        # def f(x, *, p=3) in x compiled p's adjoint too, x ** p's xlogy(x ** p, x), and
        # reverse over reverse differentiated it: 0 * nan in jacrev(grad(f)) at a negative x)
        code = getattr(fn, "__code__", None)
        n = 0 if code is None else code.co_argcount + code.co_kwonlyargcount + (
            varargs_of(fn) is not None)
        if tuple(range(n)) == tuple(sorted(wrt)):
            wrt = None  # every parameter: the general compilation
    if sig is not None and not any(k is not None for k in sig):
        sig = None
    single_use = single_use and sig is not None  # (the facts it needs come with a signature)
    key = compile_key(fn, mutation, wrt, sig, single_use)
    hit = lookup(key, fn)
    if hit is not None:
        return hit
    earlier = failed_before(key, fn)
    if earlier is not None:
        raise earlier
    try:
        return _compile_new(fn, key, mutation, wrt, sig, single_use)
    except AdgenError as err:
        remember_failure(key, fn, err)
        raise


def _compile_new(fn: Any, key: tuple[Any, ...], mutation: str, wrt: tuple[int, ...] | None,
                 sig: tuple[Any, ...] | None, single_use: bool) -> Compiled:
    """:func:`_compile_function` where the cache has no compilation of ``fn`` under ``key``."""
    if wrt is not None or sig is not None:
        compiled = _compile(fn, mutation, wrt=wrt, sig=sig, single_use=single_use)
        if compiled.mutates_params or compiled.mutates_containers:
            _refuse_mutating_recursion(fn, compiled)
        remember(key, fn, compiled)
        return compiled
    progress = IN_PROGRESS.get((id(fn), mutation))
    if progress is not None:
        return progress  # recursion: the placeholder is filled in when compilation ends
    # a recursive call sees a placeholder that says "writes nothing"; checked below
    again = functools.partial(compile_function, fn, mutation=mutation)
    placeholder = Compiled(fn.__name__, late(again, "forward"), late(again, "pullback"), "",
                           [], False)
    IN_PROGRESS[(id(fn), mutation)] = placeholder
    try:
        try:
            compiled = _compile(fn, mutation)
        except UnsupportedError as err:
            if not getattr(err, "active_constant", False):
                raise
            # a parameter reaching a rule's argument without a derivative (np.var's ddof):
            # compiled for any arguments, every parameter has one; a constant there has
            # none. Compiled again without the refusal, which the callers that know what
            # they pass raise (callee_info, compiled_calls), and others drop
            nondiff_params.LENIENT.add(id(fn))
            try:
                compiled = _compile(fn, mutation)
            finally:
                nondiff_params.LENIENT.discard(id(fn))
            compiled.nondiff_refusal = err
    finally:
        del IN_PROGRESS[(id(fn), mutation)]
    if compiled.mutates_params or compiled.mutates_containers:
        _refuse_mutating_recursion(fn, compiled)
    remember(key, fn, compiled)
    return compiled


def _from_rule(fn: Any) -> Compiled:
    """A function that has a rule (NumPy's, or a user's rrule) runs through the rule."""
    from adgen.dispatch import forward_of, pullback_of

    def forward(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        return forward_of(fn, args, kwargs)

    def pullback(saved: Any, out_bar: Any, sh: Any = None) -> tuple[Any, ...]:
        return pullback_of(saved, out_bar, sh)

    name = getattr(fn, "__name__", "f")
    text = f"# {name} is differentiated by its registered rule; there is no generated code\n"
    return Compiled(name, forward, pullback, text, [], False, own_source=text)


def _refuse_mutating_recursion(fn: Any, compiled: Compiled) -> None:
    import re

    name = re.escape(fn.__name__)
    forward = compiled.own_source.split(f"def {fn.__name__}_pullback(")[0]
    # its forward called (a result kept), or itself called as it is, as a statement: the
    # call whose result is dropped ran unseen, and its writes had no gradient (buf[i] = x[i]
    # * buf[i - 1]; fill(buf, x, i + 1) gave [1, 0, 0, 0], silently, until session 25)
    if re.search(rf"=\s*{name}_forward\(", forward) or \
            re.search(rf"^\s*{name}\(", forward, re.MULTILINE):
        from adgen.errors import UnsupportedError

        shown = fn.__qualname__
        code = getattr(fn, "__code__", None)
        file = unnumbered(code.co_filename) if code is not None else ""
        if file.startswith("<adgen ") and file.endswith(" jvp>"):
            # the user's name, not its jvp's (also when another live jvp code had the name
            # and this one is "<adgen fill jvp #2>": CI named fill_jvp after another fill)
            shown = file[len("<adgen "):-len(" jvp>")]
        raise UnsupportedError(
            f"{shown} calls itself and writes its arguments in place; adgen does not "
            "differentiate recursive in-place updates yet",
            hint="make the recursive function return new values instead of writing in place")



def compile_closure(fn: Any, *, mutation: str = "save",
                    wrt: tuple[int, ...] | None = None) -> Compiled:
    """Compiles a nested def's closure with its free variables as trailing parameters.
    ``wrt``: the positions of the parameters (the free variables' after the def's own) given
    a value with a derivative (None: all of them), a key of the cache."""
    key = (fn.__code__, mutation, registry.generation(), wrt)
    hit = CLOSURES.get(key)
    if hit is None or (hit.guards and failed(hit.guards) is not None):
        with COMPILE_LOCK:  # as compile_function: no half-built callee seen from a thread
            hit = CLOSURES.get(key)
            if hit is None:
                hit = _compile(fn, mutation, lifted=tuple(fn.__code__.co_freevars), wrt=wrt)
                CLOSURES[key] = hit
    return hit


class _CalleeInfo:
    """A user function a compiled function calls: its symbol there, and its compilation."""

    __slots__ = ("name", "compiled")

    def __init__(self, name: str, compiled: Compiled) -> None:
        self.name = name
        self.compiled = compiled

    @property
    def mutates_params(self) -> bool:
        return self.compiled.mutates_params


def _drop_dead(forward: gast.FunctionDef, pullback: gast.FunctionDef) -> None:
    """The pullback's dead copies removed, and the tape columns it reads nowhere dropped
    from the forward's rows (dead_columns, imported where the pullback has a loop: a
    function without one has no tape)."""
    if has_loop(pullback):
        from adgen.transforms.dead_columns import drop_dead_columns

        drop_dead_columns(forward, pullback)  # (its dead copies first)
    else:
        drop_dead_copies(pullback)


def _unwrapped_rows(forward: gast.FunctionDef, pullback: gast.FunctionDef
                    ) -> tuple[gast.FunctionDef, gast.FunctionDef] | None:
    """dead_columns.unwrapped_rows: None without a loop (no tape, no row)."""
    if not has_loop(pullback):
        return None
    from adgen.transforms.dead_columns import unwrapped_rows

    return unwrapped_rows(forward, pullback)


def _compile(fn: Any, mutation: str, lifted: tuple[str, ...] = (),
             wrt: tuple[int, ...] | None = None,
             sig: tuple[Any, ...] | None = None, dump: list[str] | None = None,
             single_use: bool = False) -> Compiled:
    """Runs the passes on ``fn``. ``dump``: stop after ``reverse`` and append the code there
    (the stage dump, made by the same code as the compilation; the result is then None).
    ``single_use``: as :func:`compile_function`'s."""
    from adgen.transforms.feature_names import names_a_user_module

    names = getattr(getattr(fn, "__code__", None), "co_names", ())
    if "global_object_tangent" in names:
        # (jvp code giving a global object a tangent, differentiated again: hessian)
        from adgen.transforms.global_object_tangents import refuse_differentiated_again

        refuse_differentiated_again(fn)
    parsed, tree, namer, headers = front(fn, lifted=lifted)
    if names_a_user_module(parsed.namespace, names):
        # (cellmod.CELL.setup(x): not followed)
        from adgen.transforms.global_object_tangents import refuse_module_path_methods

        refuse_module_path_methods(parsed, tree)
    callees: dict[str, Compiled] = {}
    called: dict[int, tuple[gast.Call, Compiled]] = {}  # the user functions' calls, compiled

    def mutating_call(call: gast.Call) -> list[gast.expr]:
        obj = resolve(parsed, call.func)
        obj = registry.reference_of(obj) or obj  # copy.deepcopy: its reference is compiled
        rule = registry.lookup(obj) if obj is not None else None
        if rule is not None and rule.is_rrule and rule.mutates:
            from adgen.rule_cotangents import mutated_positions

            return [call.args[k] for k in mutated_positions(rule, len(call.args))]
        if obj is None or not is_user_function(obj) or \
                str(getattr(obj, "__module__", "")).startswith("numpy"):
            return []  # NumPy writes its arguments only through out= (lower_mutation)
        if str(getattr(obj, "__module__", "")).startswith("adgen.") and \
                not registry.is_reference_impl(obj):
            return []  # adgen's own runtime and rule helpers (as reverse_plan_calls.is_user_call)
        if registry.refusal_of(obj) is not None:
            return []  # refused where it is called, with its reason (dataclasses.replace)
        try:
            try:
                callee = compile_function(obj, mutation=mutation)
            except MutationError:
                if mutation != "strict":
                    raise
                # what it writes is the same under both policies; whether strict refuses it
                # for the arguments passed here is callee_info's (callee_activity)
                callee = compile_function(obj, mutation="save")
            refuse_written_by_callee(getattr(obj, "__qualname__", str(obj)),
                                     callee.free_writes + changed_by_caller(
                                         tree, parsed.free, callee.number_writes),
                                     parsed.location(call))
            called[id(call)] = (call, callee)
            refuse_written_defaults(obj, callee.mutates_params and callee.written_params,
                                    callee.mutates_containers, call, parsed.location(call))
            if not callee.mutates_params:
                return []
            written = callee.written_params
            if written is True:
                return list(call.args) + [k.value for k in call.keywords]
            names = positional_params(obj, len(call.args))
            out = [a for k, a in enumerate(call.args) if k < len(names) and names[k] in written]
            return out + [k.value for k in call.keywords if k.arg in written]
        except AdgenError as err:
            if err.location is None or err.location.file != parsed.file:
                err.at_call(parsed.location(call), obj)
            raise

    def fresh_call(call: gast.Call) -> bool:
        obj = resolve(parsed, call.func)
        if obj is None or not is_user_function(obj) or registry.lookup(obj) is not None or \
                str(getattr(obj, "__module__", "")).startswith(("numpy", "adgen.")):
            return False
        try:
            return compile_function(obj, mutation=mutation).returns_fresh
        except AdgenError:
            return False  # the caller's own compilation reports it (mutating_call)

    def returns_container(obj: Any) -> str | None:
        # the list or dict a user function returns wherever it returns (made_containers)
        if not is_user_function(obj) or \
                str(getattr(obj, "__module__", "")).startswith(("numpy", "adgen.")):
            return None
        try:
            return compile_function(obj, mutation=mutation).returns_container
        except AdgenError:
            return None  # the caller's own compilation reports it (mutating_call)

    bound = [] if sig is None else list(zip(tree.args.args[:fn.__code__.co_argcount], sig))
    params_kinds = {a.id: param_kind(k) for a, k in bound}
    # what a user function returns is known from its own kinds, for this compilation only (a
    # free name of the callee may hold another kind of value next time)
    returned = functools.partial(returned_kind, {})
    # the analyses annotate and never rewrite, nor does the reverse pass until its forward
    # emitter: their walks of the tree read one, and shared facts are computed once
    # (node_index)
    with frozen(tree, "the analyses and the reverse pass's plan and pullback"):
        # without a signature the parameters' kinds are unknown, and what the function makes
        # from known constructors (np.empty(...), h ** 2, a range's counter) still has one
        known = run_pass("reverse", lambda: kinds(tree, params_kinds, lambda n: resolve(parsed, n),
                                              returned), parsed)
        # names holding float64 numbers or ints (a loop may keep them in typed arrays)
        # parameters bound to float64 numbers (kinds.FLOAT_ARG): what they make is float64 too
        float_params = {a.id for a, k in bound if k == FLOAT_ARG}
        # parameters bound to arrays of another dtype (float32, ints): what they make has a
        # dtype too (analyses.floats: a float32 array stays float32, an int array divided
        # is float64)
        array_params = {a.id: k[2] for a, k in bound
                        if isinstance(k, tuple) and len(k) == 3 and k[0] == "array"}
        # one resolver for both float analyses: they share their facts (floats._facts)
        resolve_name = functools.partial(resolve, parsed)
        columns = run_pass("reverse", lambda: column_dtypes(
            tree, known, {a.id for a, k in bound if type(k) is int},
            resolve_name, float_params, array_params), parsed) if sig is not None else {}
        scalars = {n for n, k in known.items() if k == NUMBER}
        containers = {n: k for n, k in params_kinds.items() if k in CONTAINERS}
        if receiver_of(fn) is not None and tree.args.args:
            # a method compiled for its receiver's class (bound_callees): self is an object,
            # whose arrays keep their own adjoints (self.lap written by laplace(u, out=...))
            containers.setdefault(tree.args.args[0].id, "object")
        for a, k in bound:
            if is_object_entry(k):
                # an object of a user's class (kinds.OBJECT): not an array an argument may
                # share (u = step(u, cfg) in a loop was refused: 'took it for an array')
                containers.setdefault(a.id, "object")
        for n in parsed.objects:
            # so is a parameter compiled for its class (model in loss(model, u):
            # object_classes.typed_for) or an object built here (sim = Heat(dt)) that a method
            # call bound_callees rewrote runs on
            containers.setdefault(n, "object")
        stores: dict[str, int] = {}
        for node in walk(tree):
            if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
                stores[node.id] = stores.get(node.id, 0) + 1
        for n in built_objects(parsed, stores):
            # and any object built here from a class of the user's (layer = Layer(W, b)):
            # an array its method returns and the function writes in place (h = layer(x);
            # h[:, 0] *= s) was taken to share the object's memory, refused when it ran
            containers.setdefault(n, "object")
        # and a list or dict the function gets from a user function or adgen.grad (grads =
        # g_of(params), a training step's grads = adgen.grad(loss)(params, x)): handed to a
        # helper writing the arrays of another dict, it was taken for an array (a raw NumPy
        # casting error in the pullback)
        made = displays(tree, functools.partial(resolve, parsed),
                        {n: k for n, k in params_kinds.items() if k in CONTAINERS},
                        returns_container)
        for n, k in made.items():
            containers.setdefault(n, k)
        arrays = {n for n, k in known.items() if type(k) is int}  # ndarrays of a known rank
        eff = run_pass("reverse", lambda: effects(
            tree, mutating_call, scalars | derivative_functions(tree, resolve_name),
            lambda n: resolve(parsed, n), containers, arrays,
            fresh_call, free=True,
            call_views=functools.partial(viewed_arguments, parsed, mutation),
            free_result=functools.partial(returns_free_memory, parsed, mutation)), parsed)
        fresh_result = returns_fresh(tree, eff)  # before the reverse pass rewrites the returns
        container_result = returned_container(tree, made)
        views_params = returned_params(tree, eff, known)
        free_result = returned_free(tree, eff)
        # a helper whose result may outlive the call (a cached one's), written in place here
        refuse_kept_results(tree, parsed, eff,
                            functools.partial(returns_free_memory, parsed, mutation))
        # a helper that reads a global or closure array this function writes in place
        refuse_read_by_callee(tree, parsed, eff, functools.partial(reads_free, parsed, mutation))
        # ... and one that writes such an array where the call may run as a plain call
        refuse_unseen_writes(tree, parsed,
                             lambda m: compile_function(m, mutation=mutation).free_writes)
        updates = number_updates(tree, eff, parsed.lines)  # self.calls += 1
        # STATS["calls"] += 1 of a global dict or list holding a number now: no in-place
        # write (guarded below: an array there compiles again, with the write)
        numbers, item_checks = item_guards(number_items(tree, eff, parsed.free), parsed)
        # ... and a call that may put an array into one this function or another call
        # updates so (w = fill(x) storing STATS["calls"] = np.full(3, 2); count(x))
        refuse_counter_stores(parsed, numbers, list(called.values()))
        stores = counter_stores(tree, parsed, numbers) + tuple(
            s for _, c in called.values() for s in c.counter_stores)
        # parameters written in place are outputs too: a caller sees their final contents
        params = {a.id for a in tree.args.args}
        outputs = {p for p in params if "param" in eff.written} | {
            w.target for w in eff.writes if w.container and w.target in params}
        # and so are a parameter's parts written through a name (self.acts.append(h));
        # (only a function storing into a list, dict or object has one, or a part of a
        # container it builds written in place, below: analyses.parameter_parts is
        # imported where one does)
        writes_containers = any(w.container for w in eff.writes)
        if writes_containers:
            from adgen.transforms.analyses.parameter_parts import held_writes, parameter_parts

            parts = parameter_parts(tree, eff, params)
            outputs |= set(parts) | {part.param for part in parts.values()}
        # and a copy of a parameter written as a container (q = d; q["h"] = v: the caller's
        # dict; the helper's code for it was left out, silently)
        outputs |= written_parameter_copies(tree, eff, params)
        # and a parameter a call may change (self.setup(v) setting self.w; a helper by name
        # that sets o.w): the caller reads it after (its pullback was empty: a silent zero)
        changed_by_calls = parameters_changed_by_calls(
            parsed, tree, params, functools.partial(changes_containers, mutation)) - {
            w.target for w in eff.writes if not w.container}  # (arrays: written in place)
        outputs |= changed_by_calls
        # a part of a container the function builds, written in place (hist["h"].append(h)),
        # changes that container: its derivative flows from the part to the holder
        held = [({t}, {h}) for t, h in held_writes(tree, eff, params)] \
            if writes_containers else []
        closures = [(free_of(d, parsed), {d.name}) for d in parsed.nested_defs]
        for d, (free, _) in zip(parsed.nested_defs, closures):
            # (imported where a function has nested defs: most have none)
            from adgen.transforms.nested_defs import refuse_closure_writes

            refuse_closure_writes(d, free, parsed)
        # sorted(xs, key=k) with k writing what it is given: unseen inside sorted's rule
        # (imported where a call's callee has such a name: most functions make none)
        if any(isinstance(c, gast.Call) and _last_name(c.func) in CALLBACK_CALLERS
               for c in walk(tree)):
            from adgen.transforms.called_back import refuse_writing_callbacks

            refuse_writing_callbacks(tree, parsed)
        wrt_names = None if wrt is None else {tree.args.args[k].id for k in wrt
                                              if k < len(tree.args.args)}
        act = activity(tree, eff.aliases(), outputs, closures + held, wrt_names,
                       lambda n: resolve(parsed, n), {id(w.stmt) for w in eff.writes})
        # a row maximum only shifting a softmax's input has a zero derivative: a constant here
        act.varied -= shift_invariant(tree, eff, known, lambda n: resolve(parsed, n))
        others = params - wrt_names if wrt_names is not None else set()
        for d in parsed.nested_defs:
            from adgen.transforms.nested_defs import refuse_active_defaults

            refuse_active_defaults(d, act, others, parsed)

        symbols: dict[int, str] = {}
        held: list[Any] = []
        varied_at: dict[int, set[str]] = {}  # call -> the names varied when it starts

        def active_at(call: gast.Call, n: str) -> bool:
            """Whether ``n`` carries a derivative when ``call`` starts: a value varied only
            by what the call itself may write into it (pnorm(x, p) may write p) has none
            (analyses.varied_before)."""
            if not varied_at:
                from adgen.transforms.analyses.varied_before import varied_before
                from adgen.transforms.node_index import nodes_of

                for st in nodes_of(tree, gast.Assign, gast.Expr):
                    if isinstance(st.value, gast.Call):
                        varied_at[id(st.value)] = varied_before(act, st)
            return n in varied_at.get(id(call), act.varied) and n in act.useful

        def callee_info(obj: Any) -> _CalleeInfo | None:
            if not callable(obj) or registry.lookup(obj) is not None:
                return None
            try:
                c = compile_function(obj, mutation=mutation)
            except MutationError:
                # strict refused it for any arguments: compiled for what the calls here pass
                # (half_steps(v, a, x, 0.01): dt a number without a derivative)
                from adgen.transforms.callee_activity import for_calls

                c = for_calls(obj, None, mutation, tree, functools.partial(resolve, parsed),
                              act.active, known, compile_function, None, returns_container)
                if c is None:
                    raise
            if getattr(c, "nondiff_refusal", None) is not None and \
                    id(fn) not in nondiff_params.LENIENT:
                # a parameter reaching a rule's argument without a derivative (np.var's
                # ddof, polygamma's order): compiled for what the calls here pass, refused
                # if one passes a value with a derivative there (rules.nondiff_params);
                # where the calls have no pattern (h(x, d=s) by keyword), for the
                # parameters some call passes one. (This function compiled for any
                # arguments again without the refusal, _compile_new: its callers refuse.)
                from adgen.transforms.callee_activity import for_calls, for_refusing_calls

                spec = for_calls(obj, None, mutation, tree, functools.partial(resolve, parsed),
                                 act.active, known, compile_function, None, returns_container,
                                 refused=True, active_at=active_at)
                if spec is None:
                    c = for_refusing_calls(obj, c, mutation, tree,
                                           functools.partial(resolve, parsed), active_at,
                                           compile_function)
                elif getattr(spec, "nondiff_refusal", None) is not None:
                    # every parameter is passed one (mid(x, s) handing s to pnorm(x, p)):
                    # the compilation for any arguments, whose refusal this is (grad of
                    # a helper of a helper gave a zero in s)
                    raise spec.nondiff_refusal
                else:
                    c = spec
            else:
                # compiled for what the calls here pass where that may lift a refusal (a
                # dict or list they pass, which it writes by index) or, under strict, a
                # guard or a read for arguments they do not pass (g.scale(3.0): self.u *=
                # c, whose gradient in c reads the self.u it overwrites): callee_activity
                from adgen.transforms.callee_activity import for_calls

                c = for_calls(obj, c, mutation, tree, functools.partial(resolve, parsed),
                              act.active, known, compile_function,
                              {n: k for n, k in params_kinds.items() if k in CONTAINERS},
                              returns_container) or c
            # one symbol per callee object: two functions named alike (step from two modules,
            # two closures of one factory) are two callees
            cname = symbols.get(id(obj))
            if cname is None:
                cname = callee_symbol(obj, fn, tree.name, set(symbols.values()), namer.taken)
                symbols[id(obj)] = cname
                held.append(obj)  # alive while symbols is used: no other object takes its id
            callees[cname] = c
            return _CalleeInfo(cname, c)

        # arrays that are float64 at every call with this signature: a store into one keeps the
        # stored value's derivative without a run-time dtype check (reverse_stores.rev_store)
        f64 = run_pass("reverse", lambda: float64_arrays(
            tree, known, {a.id for a, k in bound if type(k) is int},
            resolve_name, float_params, array_params), parsed)
        # the reverse pass thaws the tree before its forward emitter rewrites it
        # (compiled again for any arguments without refusing a derivative that reaches a
        # rule's argument without one: _compile_new; callees compiled meanwhile refuse)
        nondiff_params.LENIENT_NOW.append(id(fn) in nondiff_params.LENIENT)
        try:
            result = run_pass("reverse", lambda: reverse(
                parsed, tree, namer, act, eff, headers, mutation, callee_info, known, columns,
                f64), parsed)
        finally:
            nondiff_params.LENIENT_NOW.pop()
        # an array the forward computed dies after its last read, not at the return
        run_pass("reverse", lambda: drop_dead_arrays(
            result.forward, {n for n, k in known.items() if type(k) is int}), parsed)
        # a function held in a variable that the forward runs as it is (cb()): refused when
        # it runs if it writes an array the call does not pass it (a global, its object's)
        calls_parameters = run_pass("reverse", lambda: check_unseen_calls(
            result.forward, functools.partial(parameters_called, parsed, mutation)), parsed)
    if dump is not None:
        # rows of one column as the compiled code records them (the value, not a 1-tuple)
        shown = _unwrapped_rows(result.forward, result.pullback) or (
            result.forward, result.pullback)
        dump.append(to_source(shown[0]) + "\n\n" + to_source(shown[1]) + "\n")
        return None  # type: ignore[return-value]
    run_pass("cleanup", lambda: cleanup(result.pullback), parsed)
    # in-place arithmetic on adjoints the pullback owns, names dropped after their last read
    if result.lean is not None:
        if single_use:  # grad's pullback runs once: it may take over what only it holds
            result.lean.consumable = run_pass("cleanup", lambda: consumable_saved(
                result.forward, result.lean.ranks, result.lean.f64), parsed)
            # grad's seed: 1.0, or a float64 array (api: _single_use_seed)
            result.lean.f64.add("out_bar")
            result.lean.weak |= shape_numbers(result.forward, result.lean.ranks)
        run_pass("cleanup", lambda: lean_pullback(result.pullback, result.lean), parsed)
    # tape columns the final pullback reads nowhere leave the forward's rows
    run_pass("cleanup", lambda: _drop_dead(result.forward, result.pullback), parsed)
    # one namespace for the forward and the pullback: adgen's names, then the values of the
    # function's free names, refreshed at each call by their guards (bindings.py); those
    # the pullback reads travel with its saved values (free_values.py)
    ns, guards = namespace(fn, parsed)
    guards.extend(item_checks)
    run_pass("free_values", lambda: save_free_values(
        result.forward, result.pullback, {g.key for g in guards if g.mode == "kind"}), parsed)
    # a tape's row of one column is the value itself in the compiled code (not a 1-tuple)
    fwd_tree, pb_tree = _unwrapped_rows(result.forward, result.pullback) or (
        result.forward, result.pullback)
    fwd_src = to_source(fwd_tree)
    pb_src = to_source(pb_tree)
    own = fwd_src + "\n\n" + pb_src + "\n"
    fname = f"<adgen {fn.__qualname__} {mutation}>"
    for cname, c in callees.items():
        ns[f"{cname}_forward"] = c.forward
        ns[f"{cname}_pullback"] = c.pullback
        guards.extend(g for g in c.guards if g not in guards)
    # (no syntax check of header + own as one module: the forward and the pullback are
    # compiled below, each alone, and two valid defs after the imports are a valid module;
    # it compiled and ran the whole text once more, 2% of a large function's build)
    ns["__adgen_file__"] = parsed.file  # where runtime.locate finds the user's file
    compile_source(fwd_src, fname + " forward", ns)
    compile_source(pb_src, fname + " pullback", ns)
    forward = ns[result.forward.name]
    pullback = ns[result.pullback.name]
    # the function's own defaults, not their source text evaluated again
    defaults = getattr(fn, "__defaults__", None)
    if defaults and varargs_of(fn) is not None:
        # def g(x, c=2.0, *xs): the forward's parameters are x, c, xs (a tuple), so the
        # defaults cover c and xs (c's alone went to xs: g_forward(z) missed c)
        defaults = defaults + ((),)
    if defaults and lifted:
        defaults = defaults + (None,) * len(lifted)
    forward.__defaults__ = defaults
    forward.__kwdefaults__ = getattr(fn, "__kwdefaults__", None)
    register_nested(forward.__code__, {d.name for d in parsed.nested_defs})
    source = own
    for cname, c in callees.items():
        if c.own_source and cname != fn.__name__:
            text = c.own_source
            if cname != c.name:  # numbered in this caller: show it under that name
                text = re.sub(rf"\b{re.escape(c.name)}_(forward|pullback)\b",
                              rf"{cname}_\1", text)
            source = text + "\n\n" + source
    from adgen.explanation import MutationSite

    sites = [MutationSite(parsed.file, getattr(s.stmt, "lineno", 0),
                          getattr(s.stmt, "col_offset", 0), s.construct, s.decision, s.reason,
                          s.captured_at) for s in result.sites]
    for c in list(callees.values()) + method_callees(parsed, tree, mutation):
        sites.extend(x for x in c.sites if x not in sites)
    guarding = {"capture", "before_write", "write_region", "call_forward", "call_starred"}
    needs_scope = bool(callees) or any(
        isinstance(c, gast.Call) and isinstance(c.func, gast.Name) and
        (c.func.id in guarding or c.func.id.endswith("_forward"))
        for c in walk(result.forward))
    return Compiled(tree.name, forward, pullback, source, sites, result.mutates_params,
                    callees, own, reads_params=result.reads_params, mutation=mutation,
                    reads_uncaptured=result.reads_uncaptured,
                    reads_result=result.reads_result,
                    # (a parameter a call changes: a caller of this one follows the call)
                    mutates_containers=result.mutates_containers or bool(changed_by_calls),
                    written_params=result.written_params, needs_scope=needs_scope,
                    guards=tuple(guards), trees=(result.forward, result.pullback, parsed.file),
                    returns_fresh=fresh_result, returns_params=views_params,
                    returns_container=container_result,
                    returns_free=free_result,
                    number_updates=updates,
                    consumes=frozenset(result.lean.consumable) if result.lean else frozenset(),
                    single_use=single_use and result.lean is not None,
                    free_writes=free_writes(eff, parsed, numbers), calls_parameters=calls_parameters,
                    number_writes=tuple(dict.fromkeys(
                        [(i.name, i.key, i.attr, parsed.location(i.stmt)) for i in numbers] +
                        [w for c in callees.values() for w in c.number_writes])),
                    counter_stores=tuple(dict.fromkeys(stores)),
                    free_reads=free_reads(eff) or any(c.free_reads for c in callees.values()),
                    function=None if lifted else fn)


def _last_name(f: gast.expr) -> str | None:
    """The last name of a dotted callee (``heapq.nsmallest``: ``nsmallest``)."""
    return f.id if isinstance(f, gast.Name) else f.attr if isinstance(f, gast.Attribute) \
        else None


def stage_source(fn: Any, stage: str, *, mutation: str = "save") -> str:
    """The code of ``fn`` after the named pass (see PASS_NAMES)."""
    try:
        return _stage_source(fn, stage, mutation)
    except (AdgenError, ValueError):
        raise
    except Exception as exc:  # noqa: BLE001 - a compiler bug: name the stage
        raise CompilerError(f"internal error while showing stage {stage!r}: "
                            f"{type(exc).__name__}: {exc}") from exc


def _stage_source(fn: Any, stage: str, mutation: str) -> str:
    if stage not in PASS_NAMES:
        raise ValueError(f"unknown stage {stage!r}; the passes are {', '.join(PASS_NAMES)}")
    if stage in ("cleanup", "free_values"):
        return compile_function(fn, mutation=mutation).own_source
    if stage == "reverse":
        text: list[str] = []
        with COMPILE_LOCK:
            _compile(fn, mutation, dump=text)
        return text[0]
    if stage == "ssa":
        _, tree, _, _ = front(fn)
        return to_source(tree)
    _, tree, _, _ = front(fn, stop=stage)
    return to_source(tree)
