"""The front end shared by reverse and forward mode: the function as Python binds it, lowered
to SSA, and what its generated code will see.

    parse -> validate -> lower_control -> desugar -> anf -> lower_mutation -> unbound -> ssa

:func:`front` runs these passes (``lifted``: free variables of a closure made trailing
parameters); :func:`run_pass` runs one, turning a crash into a CompilerError naming the pass.
:func:`namespace` is the generated code's globals with one ``Guard`` per free name of the
function (bindings.py); :func:`resolve` is the object a global name or attribute chain is
bound to, the one way the compiler reads a free name; :func:`returned_kind` the kind a user
function returns for given argument kinds; :func:`callee_symbol` the name a callee's code gets
in its caller's.
"""

from __future__ import annotations

import builtins
import functools
import keyword
import re
import types
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.kinds import kinds
from adgen.transforms.analyses.reports import reports
from adgen.transforms.anf import to_anf
from adgen.transforms.array_subclasses import refuse_array_subclasses
from adgen.transforms.bindings import (
    NOT_FOUND,
    UNBOUND,
    Guard,
    dotted_object,
    guard_for,
    lookup,
    module_attribute_guards,
    read_names,
)
from adgen.transforms.bound_callees import bind_callees
from adgen.transforms.cached_functions import uncached
from adgen.transforms.desugar import desugar, refuse_reads_before_walrus
from adgen.transforms.display_arguments import name_written_displays
from adgen.transforms.feature_names import ITEM_BUILTINS
from adgen.transforms.hoist_defs import free_names, hoist_defs
from adgen.transforms.keyword_shims import bind_keyword_calls
from adgen.transforms.lower_control import lower_control
from adgen.transforms.lower_mutation import lower_mutation
from adgen.transforms.names import Namer
from adgen.transforms.operator_classes import sees_operator_classes
from adgen.transforms.parse import Parsed, code_names, parse_function
from adgen.transforms.rename_reserved import rename_reserved
from adgen.transforms.ssa import to_ssa
from adgen.transforms.unbound import check_unbound, maybe_unbound
from adgen.transforms.unseen_calls import unwrap_checked_calls
from adgen.transforms.validate import validate
from adgen.transforms.walk import walk

from adgen import runtime
from adgen.errors import AdgenError, CompilerError
from adgen.rules import registry

FRONT_PASSES = ["parse", "validate", "lower_control", "desugar", "anf", "lower_mutation",
                "unbound", "ssa"]


def _node_classes(tree: gast.FunctionDef) -> set[type]:
    """The classes of the nodes of ``tree`` (nested defs' included): the passes for a
    construct the function does not have are skipped, and their modules not imported."""
    return {type(n) for n in walk(tree)}


def _binds_dotted(st: gast.stmt) -> bool:
    """``n = a.b`` or ``n = a``: a statement read_function_aliases may take for an alias
    (it looks at no other)."""
    return isinstance(st, gast.Assign) and len(st.targets) == 1 and \
        isinstance(st.targets[0], gast.Name) and isinstance(st.value, (gast.Attribute,
                                                                        gast.Name))


def _stores_attributes_of_names(tree: gast.FunctionDef) -> bool:
    """Whether ``tree`` stores into an attribute of a name (``m.scale = s``, ``m.scale +=
    s``): property_setters rewrites no other store."""
    return any(n.__class__ is gast.Attribute and isinstance(n.ctx, gast.Store) and
               n.value.__class__ is gast.Name for n in walk(tree))


def _reads_attributes_of_values(tree: gast.FunctionDef) -> bool:
    """Whether ``tree`` reads an attribute of a call's result or of a name it binds (a
    parameter, a local): every read properties.read_properties replaces is one (``m.area``
    of a parameter or of ``m = Circle(r)``, ``Circle(r).area``), and no attribute of a
    global (``np.sin``) is."""
    bound = {n.id for n in walk(tree) if isinstance(n, gast.Name) and
             not isinstance(n.ctx, gast.Load)}
    return any(isinstance(n, gast.Attribute) and isinstance(n.ctx, gast.Load) and
               (isinstance(n.value, gast.Call) or
                isinstance(n.value, gast.Name) and n.value.id in bound)
               for n in walk(tree))


def _may_view_untracked(tree: gast.FunctionDef) -> bool:
    """Whether ``tree`` reads an ``x.mT`` or makes a call of two arguments (a one-operand
    ``np.einsum``, by any name): untracked_views looks at no other function."""
    return any(n.__class__ is gast.Attribute and n.attr == "mT" or
               n.__class__ is gast.Call and len(n.args) == 2 for n in walk(tree))


def _takes_attributes_of_locals(tree: gast.FunctionDef) -> bool:
    """Whether ``tree`` reads an attribute of a name it assigns without calling it (``g =
    m.f`` of ``m = M(a)``): method_values refuses only where one of them is a method."""
    stored = {n.id for n in walk(tree) if n.__class__ is gast.Name and
              isinstance(n.ctx, gast.Store)}
    if not stored:
        return False
    called = {id(n.func) for n in walk(tree) if n.__class__ is gast.Call}
    return any(n.__class__ is gast.Attribute and isinstance(n.ctx, gast.Load) and
               n.value.__class__ is gast.Name and n.value.id in stored and
               id(n) not in called for n in walk(tree))


def _star_arguments_spelled_out(tree: gast.FunctionDef, parsed: Parsed,
                                keywords: bool) -> gast.FunctionDef:
    """star_arguments' rewrite of ``tree`` where a call may pass ``*`` or ``**`` arguments
    (``keywords``: the tree had a Starred node or a keyword; imported only then)."""
    if not keywords:
        return tree
    from adgen.transforms.star_arguments import spell_out_star_arguments

    return spell_out_star_arguments(
        tree, lambda func: writes_arguments(parsed, func),
        lambda func: writes_arguments(parsed, func, compiled=True), parsed.location)


def _may_call_single_dispatch(parsed: Parsed, code: Any, names: set[str] | None) -> bool:
    """Whether a name the code reads (a global, a closure's, an attribute of a module it
    reads) is bound to a ``functools.singledispatch`` function (whose ``registry`` a plain
    function's ``__dict__`` holds)."""
    if code is None:
        return False
    seen = (names or set()) | set(code.co_freevars)
    values = [parsed.namespace.get(n) for n in seen]
    values += [m.__dict__.get(n) for m in values if isinstance(m, types.ModuleType)
               for n in seen]
    return any(isinstance(v, types.FunctionType) and "registry" in v.__dict__
               for v in values)


def _stores_globals(code: Any) -> bool:
    """Whether a function's own code binds a global (a ``global`` statement of its body
    naming a name it stores): the cheap test before walking the tree for one."""
    import dis

    if not code.co_names:
        return False
    return any(i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") for i in dis.get_instructions(code))


def _reads_written_globals(fn: Any, code: Any) -> bool:
    """Whether ``fn`` reads a global that a global statement of a function of its module
    updates as a counter (global_statements: the module's functions' code read once each)."""
    scope = getattr(fn, "__globals__", None)
    if code is None or not code.co_names or scope is None:
        return False
    from adgen.transforms.global_statements import written_globals

    return bool(set(code.co_names) & written_globals(scope))


def front(fn: Any, stop: str | None = None, lifted: tuple[str, ...] = ()
           ) -> tuple[Parsed, gast.FunctionDef, Namer, Any]:
    """Runs the passes up to ``reverse`` (or up to ``stop``); returns the tree and facts.

    ``lifted`` names free variables of a closure that become trailing parameters.
    """
    parsed = parse_function(fn)
    tree = parsed.tree
    # generated code differentiated again (jvp code under hessian, third derivatives):
    # checked_callable(cb)(x) there is the call cb(x), checked again where the mode says
    unwrap_checked_calls(parsed.namespace, tree)
    code = getattr(fn, "__code__", None)
    if code is not None and _stores_globals(code) or _reads_written_globals(fn, code):
        from adgen.transforms.global_statements import rewrite_global_statements

        # global calls; calls += 1: an item of the module's globals, and so are the reads
        # of such a global in the module's other functions (global_statements)
        rewrite_global_statements(parsed)
    if stop == "parse":
        return parsed, tree, None, None
    # add = np.add; add(y, t, y): read as np.add(y, t, y), which the passes know (imported
    # here, as the passes below: most functions bind no name to a name or an attribute)
    if any(_binds_dotted(st) for st in tree.body):
        from adgen.transforms.function_aliases import read_function_aliases

        parsed.aliases_in_defs = read_function_aliases(tree, lambda node: resolve(parsed, node))
    else:
        parsed.aliases_in_defs = set()
    # a closure, method or partial that writes an argument, called where adgen knows what
    # it runs: its body written out (inlined_closures), a call by name (bound_callees);
    # only a def or a lambda bound in the function's body is inlined
    if any(isinstance(st, gast.FunctionDef) or (isinstance(st, gast.Assign) and
                                                isinstance(st.value, gast.Lambda))
           for st in tree.body):
        from adgen.transforms.inlined_closures import inline_closures

        inline_closures(parsed, writes_parameters)
    bind_callees(parsed, writes_parameters)
    bind_keyword_calls(parsed)  # helper(x, scale=2.0) of def helper(x, **kw): per keywords
    if _stores_attributes_of_names(tree):  # (imported here: most functions store none)
        from adgen.transforms.property_setters import call_property_setters

        call_property_setters(parsed)  # m.scale = s of a @property: its setter's call
    if _reads_attributes_of_values(tree):  # (imported here: most read modules' only, np.sin)
        from adgen.transforms.properties import read_properties

        read_properties(parsed)  # self.scale of a @property: its getter's call
    if sees_operator_classes(parsed):  # (imported here: most functions see no such class)
        from adgen.transforms.operator_methods import call_operator_methods

        call_operator_methods(parsed)  # p + q of a user's class Vec: type(p).__add__(p, q)
    code = getattr(parsed.fn, "__code__", None)
    names = None if code is None else code_names(code)  # (None: any name, no code to read)
    if names is None or {"view", "ndarray"} <= names:  # (imported here: most call none)
        from adgen.transforms.plain_views import index_plain_views

        index_plain_views(parsed, lambda node: resolve(parsed, node))  # x.view(np.ndarray)
    if _may_call_single_dispatch(parsed, code, names):
        # (imported here: most functions call no functools.singledispatch function)
        from adgen.transforms.single_dispatch import call_dispatched

        call_dispatched(parsed)  # act(h) of a functools.singledispatch act: as it chooses
    if names is None or ITEM_BUILTINS & names:  # (imported here: most call none)
        from adgen.transforms.item_builtins import rewrite_item_builtins

        rewrite_item_builtins(parsed)  # map(lambda t: t ** 3, v): (t ** 3 for t in v)
    if names is None or "reversed" in names:  # (imported here: most call none)
        from adgen.transforms.reversed_items import rewrite_reversed

        rewrite_reversed(parsed)  # for W in reversed(weights): weights[::-1], checked
    present = _node_classes(tree)
    loops = gast.For in present or gast.comprehension in present
    if loops:  # (imported here: a function without loops needs neither check)
        from adgen.transforms.walked_lengths import check_walked_lengths
        from adgen.transforms.walked_lists import refuse_length_changes

        check_walked_lengths(parsed)  # for w in WS: grow(), a length checked at each step
        from adgen.transforms.walked_iterators import check_walked_iterators

        check_walked_iterators(parsed)  # for i in it: skip(it), an iterator refused
    if gast.GeneratorExp in present:
        from adgen.transforms.late_generators import refuse_late_generators

        refuse_late_generators(parsed)  # g = (y[i] for ...); y[0] = 5; sum(g): refused
    if gast.Lambda in present:
        from adgen.transforms.lift_lambdas import lift_lambdas

        lift_lambdas(tree, parsed.location)  # lambdas are nested defs from here on
    if gast.NamedExpr in present:
        # f(y)(1, (y := z)): desugar hoists the walrus before the earlier read of y
        refuse_reads_before_walrus(tree, parsed.location)
    validate(parsed)
    if loops:
        refuse_length_changes(parsed)  # ws.append(v) in a for loop walking ws
        from adgen.transforms.shared_iterators import refuse_shared_iterators

        refuse_shared_iterators(tree, parsed.location)  # for i in it: next(it)
    refuse_array_subclasses(parsed)  # np.matrix, masked arrays: their operators differ
    if _may_view_untracked(tree):  # (imported here: most functions make no such view)
        from adgen.transforms.untracked_views import refuse_untracked_view_writes

        refuse_untracked_view_writes(parsed)  # np.einsum('ii->i', a), a.mT: views of a
    if gast.Attribute in present and _takes_attributes_of_locals(tree):
        from adgen.transforms.method_values import refuse_methods_taken_before_changes

        refuse_methods_taken_before_changes(parsed)  # g = m.f; m.s = ...; g(x)
    if stop == "validate":
        return parsed, tree, None, None
    if gast.Match in present:
        from adgen.transforms.lower_match import lower_match

        # (its captures are names like any other from here on)
        lower_match(tree, Namer(tree, parsed.namespace))
    # fresh names clash neither with the function's own nor with those it may read: a
    # comprehension's f renamed f1 beside a global function f1 was resolved as that global
    namer = Namer(tree, parsed.namespace)
    # the free names the function reads, as Python binds them (bindings.py); those that
    # clash with the generated code's own names are read under fresh ones
    free = [n for n in read_names(tree, parsed.is_local)
            if n not in parsed.imports and n not in lifted]
    renamed = rename_reserved(tree, namer, _clashes(fn, parsed, free))
    params = {a.id for a in tree.args.args}
    parsed.renamed_params = {new: old for new, old in renamed.items() if new in params}
    keys = {old: new for new, old in renamed.items()}
    parsed.free = {n: keys.get(n, n) for n in free}
    for n, key in parsed.free.items():
        if key != n and n in parsed.namespace:
            parsed.namespace[key] = parsed.namespace[n]
    # the locals a read may find unbound, judged on the code as written (unbound.py)
    unbound = maybe_unbound(tree)
    for free in lifted:
        tree.args.args.append(gast.Name(id=free, ctx=gast.Param(), annotation=None,
                                        type_comment=None))
        parsed.namespace.pop(free, None)
    # (after the lifted parameters: a lambda a nested def returns, def make(k): return
    # lambda t: k * t * a, reads a of the enclosing function, lifted here; hoisted first, it
    # read "nothing" of make and forward mode gave it no tangent, silently)
    parsed.nested_defs, parsed.closure_free = hoist_defs(tree)
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("lower_control", lambda: lower_control(tree, namer)),
        # first, the * and ** arguments of a helper writing its arguments spelled out where
        # they are known (step(*(u, v)), args = (u, v); step(*args): star_arguments)
        ("desugar", lambda: desugar(_star_arguments_spelled_out(
            tree, parsed, gast.Starred in present or gast.keyword in present), namer)),
        ("anf", lambda: to_anf(tree, namer, lambda node: holds_array(parsed, node))),
        # first, sgd_step([W, b], ...) of a helper writing the list's arrays: t = [W, b]
        # before the call (display_arguments)
        ("lower_mutation", lambda: lower_mutation(name_written_displays(
            tree, namer, lambda func: writes_arguments(parsed, func)), namer, parsed)),
        ("unbound", lambda: check_unbound(
            tree, namer, unbound, [d.name for d in parsed.nested_defs],
            lambda node: f"{parsed.file}, line {getattr(node, 'lineno', 0)}", renamed)),
    ]
    for pass_name, step in steps:
        run_pass(pass_name, step, parsed)
        if stop == pass_name:
            return parsed, tree, namer, None
    headers = run_pass("ssa", lambda: to_ssa(tree, namer), parsed)
    return parsed, tree, namer, headers


def run_pass(pass_name: str, step: Callable[[], Any], parsed: Parsed) -> Any:
    try:
        return step()
    except AdgenError as err:
        if err.location is None:
            err.location = parsed.location(parsed.tree)
            err.args = (err.format(),)
        raise
    except Exception as exc:  # noqa: BLE001 - a compiler bug: name the pass
        raise CompilerError(f"internal error in pass {pass_name!r} "
                            f"(after {', '.join(FRONT_PASSES[:FRONT_PASSES.index(pass_name)] if pass_name in FRONT_PASSES else FRONT_PASSES)}): "
                            f"{type(exc).__name__}: {exc}",
                            parsed.location(parsed.tree)) from exc


def generated_names() -> dict[str, Any]:
    """The names generated code reads for itself, with the objects they stand for."""
    import math

    out: dict[str, Any] = {"np": np, "math": math}
    for n in ("len", "range", "list", "dict", "tuple", "isinstance", "float", "int", "max",
              "min", "enumerate", "zip"):
        out[n] = getattr(builtins, n)  # the passes call them (lower_mutation, desugar)
    for n in runtime.__all__:
        out[n] = getattr(runtime, n)
    return out


def _clashes(fn: Any, parsed: Parsed, free: list[str]) -> set[str]:
    """User names that must be renamed: a local or parameter named like one of the generated
    code's names, or a free name bound to another object than the generated code's."""
    own = generated_names()
    parsed.is_local("")  # computes the locals
    out = {n for n in parsed._locals if n in own or n.endswith(("_forward", "_pullback"))}
    for n in free:
        if n in own and parsed.namespace.get(n, own[n]) is not own[n]:
            out.add(n)
        elif n.endswith(("_forward", "_pullback")) or n in (f"{fn.__name__}_forward",):
            out.add(n)
    return out


def namespace(fn: Any, parsed: Parsed) -> tuple[dict[str, Any], list[Guard]]:
    """The generated code's globals, and one guard per free name of the function."""
    ns = generated_names()
    ns.update(parsed.imports)
    guards: list[Guard] = []
    cells = parsed.cells
    roots = dict(parsed.imports)  # what the function's names are bound to, for module guards
    for n, key in parsed.free.items():
        if n in parsed.bound:  # (bound_callees: guarded by parsed.bound_guards)
            ns[key] = roots[n] = parsed.bound[n]
            continue
        cell = cells.get(n)
        if cell is not None:
            try:
                value = cell.cell_contents
            except ValueError:
                value = UNBOUND
        else:
            value = lookup(fn.__globals__, n)
        g = guard_for(n, key, fn.__globals__, cell, value)
        g.ns = ns
        guards.append(g)
        if value is not UNBOUND:
            ns[key] = value
            roots[n] = value
    guards.extend(module_attribute_guards(parsed.tree, roots))
    guards.extend(parsed.bound_guards)
    for attr in ("__code__", "__defaults__", "__kwdefaults__"):
        if getattr(fn, attr, None) is not None:  # the code compiled; the forward shares them
            guards.append(Guard(attr, attr, fn, None, "attr", getattr(fn, attr)))
    return ns, guards


def free_of(d: gast.FunctionDef, parsed: Parsed) -> set[str]:
    return free_names(d, parsed.closure_free)


def resolve(parsed: Parsed, node: gast.expr) -> Any:
    """The object a global name or attribute chain is bound to, as the analyses and forward
    mode read it (None: a local, or unknown).

    The walk is ``bindings.dotted_object``'s (builtins included), as for
    ``reverse_plan.Plan.resolve`` and ``lower_mutation``'s; what differs is deliberate:

    - a bound method (``m.loss`` of a global object ``m``) is None, as in the plan: a call
      of it goes through the dispatch with its receiver (``lower_mutation`` sees the method
      itself, to tell ``q._replace`` of a namedtuple from a user's method); but a library
      method with a reference implementation (``scipy.stats.norm.cdf``) is itself, as a
      NumPy function is;
    - an ``lru_cache`` wrapper is the function it wraps (``cached_functions``; a global name's
      already is, in ``parse``'s namespace), as in the plan, which also replaces a NumPy
      function by its reference implementation (compiled as a user call there);
    - None stands for "unknown" here (the analyses compare against it); the plan returns
      ``MISSING``, since a global bound to None is a value it folds.
    """
    obj = dotted_object(parsed, node, builtin_names=True)
    if obj is NOT_FOUND or is_bound_method(obj) and not registry.has_function_reference(obj):
        return None  # (m.loss(x) of a global object m: called as self.loss(x) is)
    return uncached(obj)  # an lru_cache'd function: the function it wraps


def writes_arguments(parsed: Parsed, func: gast.expr, compiled: bool = False) -> bool:
    """Whether the callee ``func`` denotes is a function of the user's that may change an
    argument in place (transforms.argument_writes; False for NumPy, rules, adgen's own
    functions, and what is known only when it runs). ``compiled``: whether its compilation
    writes an argument or a container it is given, as the dispatch asks of a call with
    ``*args`` (exact where argument_writes only may be; False where it does not compile,
    which its call reports)."""
    obj = resolve(parsed, func)
    if obj is None or not is_user_function(obj) or \
            str(getattr(obj, "__module__", "")).startswith(("numpy", "adgen.")):
        return False
    if compiled:
        from adgen.transforms.pipeline import compile_function

        try:
            callee = compile_function(obj)
        except AdgenError:
            return False
        return callee.mutates_params or callee.mutates_containers
    if any(obj is o for o in _ASKED):
        return True  # asked again while its own front end runs (f calls g calls f): may
    _ASKED.append(obj)
    try:
        from adgen.transforms.argument_writes import leaves_arguments  # (rarely needed)

        return not leaves_arguments(obj)
    finally:
        _ASKED.pop()


_ASKED: list[Any] = []  # the functions writes_arguments is asking about (recursion)


def writes_parameters(fn: Any) -> bool:
    """Whether a call of the user function ``fn`` writes a parameter in place, as its compiled
    code says (a method whose writes are ``self.calls += 1`` updates of numbers only, which
    the dispatch checks and follows: False; one that also writes an array argument, ``u[1:]
    += ...`` next to ``self.steps += 1``: True, which bound_callees follows, where the
    dispatch refused it until session 19); False where it does not compile (its call reports
    why)."""
    from adgen.transforms.pipeline import compile_function

    try:
        compiled = compile_function(fn)
    except AdgenError:
        return False
    updates = compiled.number_updates
    return compiled.mutates_params and not (updates is not None and updates.exact)


def holds_array(parsed: Parsed, node: gast.expr) -> bool:
    """Whether the global name or attribute chain ``node`` holds an ndarray or a scipy.sparse
    matrix now (anf: its methods are NumPy's functions of it)."""
    from adgen.rules.helpers import is_sparse

    obj = resolve(parsed, node)
    return isinstance(obj, np.ndarray) or is_sparse(obj)


def is_bound_method(obj: Any) -> bool:
    """A Python function bound to an object or a class (``m.loss`` of a global model ``m``,
    a classmethod): its compiled code takes the receiver first, so a call of it goes through
    adgen's dispatch with its receiver, as ``self.loss(x)`` does (compiled as a plain
    callee, the receiver was not passed: a raw TypeError, or the first argument taken for
    ``self``)."""
    import types

    # (a method behind functools.lru_cache too: the dispatch calls the function it wraps)
    return isinstance(obj, types.MethodType) and isinstance(uncached(obj.__func__),
                                                            types.FunctionType)


def returned_kind(memo: dict[tuple[Any, ...], Any], obj: Any, arg_kinds: tuple[Any, ...]
                   ) -> Any:
    """The kind (analyses.kinds) a user function returns for arguments of ``arg_kinds``: the
    kinds analysis of its own tree, specialised to them (None: unknown, or not a plain
    function of its positional parameters). The caller's compiled code is guarded on the
    callee's binding and its free names (bindings.py), so the fact holds for every call it
    serves. ``memo``: (callee, argument kinds) -> the kind, for one compilation (None while
    one is computed: a recursive callee's result is unknown)."""
    import types

    if not isinstance(obj, types.FunctionType) or obj.__closure__ or \
            registry.lookup(obj) is not None or registry.reference_of(obj) is not None or \
            str(getattr(obj, "__module__", "")).startswith("adgen."):
        return None
    key = (obj, arg_kinds)
    if key in memo:
        return memo[key]
    memo[key] = None
    try:
        parsed, tree, _, _ = front(obj)
    except Exception:  # noqa: BLE001 - compiling the call reports what is wrong with it
        return None
    params = tree.args.args
    if len(arg_kinds) > len(params) or len(params) != obj.__code__.co_argcount:
        return None
    known = kinds(tree, {a.id: k for a, k in zip(params, arg_kinds)},
                  lambda n: resolve(parsed, n), functools.partial(returned_kind, memo))
    out: Any = None
    for node in walk(tree):
        if isinstance(node, gast.Return):
            k = known.get(node.value.id) if isinstance(node.value, gast.Name) else None
            if k is None or (out is not None and k != out):
                return None
            out = k
    memo[key] = out
    return out


def is_user_function(obj: Any) -> bool:
    import types

    # not a derivative adgen made (an adgen.grad result: called when it runs, through its vjp,
    # derivative_calls), nor logging's functions (analyses.reports: kept like print)
    return isinstance(obj, types.FunctionType) and registry.lookup(obj) is None and \
        not reports(obj)


def callee_symbol(obj: Any, caller: Any = None, own: str = "", used: set[str] | None = None,
                   taken: set[str] | None = None) -> str:
    """The name a callee's forward and pullback get in its caller's generated code: its
    ``__name__`` made an identifier, numbered when another callee (or a user name) has it."""
    base = re.sub(r"\W", "_", str(getattr(obj, "__name__", "") or "callee"))
    if not base.isidentifier() or keyword.iskeyword(base):
        base = "f_" + base
    if obj is caller:
        return own or base  # recursion: the function's own forward
    used = used or set()
    taken = taken or set()
    cname, k = base, 1
    while cname in used or cname == own or f"{cname}_forward" in taken or \
            f"{cname}_pullback" in taken:
        k += 1
        cname = f"{base}_{k}"
    return cname
