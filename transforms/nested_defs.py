"""What a nested ``def`` may not do, checked when the enclosing function is compiled: write an
array or container of the enclosing function in place (the enclosing function's analysis
cannot see that write), or read a value with a gradient in a default (evaluated when the def
runs, out of the gradient's sight). Both are refused at the user's line, and so are
(:func:`refuse_nested_def`, asked by ``validate``) a def reading a variable the enclosing
function assigns more than once, one kept as a value past the loop step whose variable it
reads, and a decorated one. Imported where a function has a nested def (issue 15's cold
start: most have none).
"""

from __future__ import annotations

import re
from typing import Any

import gast
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError

_WRITING_METHODS = frozenset({"fill", "sort", "put", "resize", "itemset", "partition",
                              "append", "extend", "insert", "pop", "remove", "clear",
                              "update", "setdefault"})
# methods that write their object, spelled as Python's operators call them (y.__setitem__(i,
# v), y.__iadd__(v)): a nested def or lambda writing the enclosing function's y that way was a
# silently wrong gradient (the write unseen)
_WRITING_DUNDERS = frozenset({"__setitem__", "__delitem__", "__setattr__", "__delattr__",
                              "__iadd__", "__isub__", "__imul__", "__imatmul__",
                              "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
                              "__iand__", "__ior__", "__ixor__", "__ilshift__",
                              "__irshift__", "__iconcat__"})


def _writing_method(f: gast.expr) -> gast.expr | None:
    """The object of ``f`` where ``f`` is a writing method of it: ``y.fill``,
    ``y.__setitem__``, or ``getattr(y, "__setitem__")`` with the name a constant."""
    if isinstance(f, gast.Attribute) and (f.attr in _WRITING_METHODS or
                                          f.attr in _WRITING_DUNDERS):
        return f.value
    if isinstance(f, gast.Call) and isinstance(f.func, gast.Name) and \
            f.func.id == "getattr" and len(f.args) >= 2 and \
            isinstance(f.args[1], gast.Constant) and \
            (f.args[1].value in _WRITING_METHODS or f.args[1].value in _WRITING_DUNDERS):
        return f.args[0]
    return None


def written_roots(node: gast.AST) -> list[str]:
    """The names whose buffers (or containers) ``node`` writes in place: the root name of a
    store's target (``x[i] = v``, ``x.a = v``, ``x += v``), of a writing method's object
    (``x.fill(c)``, ``xs.append(v)``), of an ``out=`` keyword, of the first argument of
    ``np.copyto``, ``np.put``, ``np.fill_diagonal``, ``np.place`` and a ufunc's ``.at``."""
    def root(e: gast.expr) -> str | None:
        while isinstance(e, (gast.Subscript, gast.Attribute)):
            e = e.value
        return e.id if isinstance(e, gast.Name) else None

    found: list[str | None] = []
    if isinstance(node, (gast.Assign, gast.AugAssign)):
        targets = node.targets if isinstance(node, gast.Assign) else [node.target]
        found += [root(t) for t in targets if isinstance(t, (gast.Subscript, gast.Attribute))
                  or isinstance(node, gast.AugAssign)]
    elif isinstance(node, gast.Call):
        f = node.func
        owner = _writing_method(f)
        if owner is not None:
            found.append(root(owner))
        found += [root(k.value) for k in node.keywords if k.arg == "out"]
        if isinstance(f, gast.Attribute) and f.attr in ("copyto", "put", "fill_diagonal",
                                                        "place", "at") and node.args:
            found.append(root(node.args[0]))
    return [n for n in found if n is not None]


def refuse_closure_writes(d: gast.FunctionDef, free: set[str], parsed: Parsed) -> None:
    """A nested def that writes an array (or container) of the enclosing function in place:
    the enclosing function's analysis cannot see that write, so it is refused."""
    from adgen.errors import UnsupportedError

    found = first_write(d, free, parsed)
    if found is None:
        return
    node, hit, handed = found
    shown = _users_def_name(d, parsed)
    if handed is None:
        raise UnsupportedError(
            f"the nested function {shown} writes {hit} of the enclosing function in "
            "place; adgen cannot follow that write", parsed.location(node),
            hint=f"pass {hit} to {shown} as an argument and return the new value, or "
                 f"write it in the enclosing function")
    name, callee, library = handed
    hint = f"pass {name} to {shown} as an argument and return the new value, or call " \
        f"{callee} in the enclosing function"
    if library:
        hint = f"write the change in the enclosing function in Python ({name}[i] = v, " \
            f"{name}.append(v), {name} += v), or pass {name} to {shown} as an argument " \
            "and write it there that way"
    raise UnsupportedError(
        f"the nested function {shown} hands {name} of the enclosing function to {callee}, "
        "which writes it in place; adgen cannot follow that write", parsed.location(node),
        hint=hint)


def _users_def_name(d: gast.FunctionDef, parsed: Parsed) -> str:
    """The name the user gave nested def ``d``: rename_reserved renames one named like a
    runtime helper (``def add(v)`` -> ``add_1``), which a message should not show."""
    import re

    m = re.fullmatch(r"(\w+?)_\d+", d.name)
    if m is not None and f"def {m.group(1)}(" in parsed.location(d).source_line:
        return m.group(1)
    return d.name


def first_write(d: gast.AST, names: set[str], parsed: Parsed
                ) -> tuple[gast.AST, str, tuple[str, str, bool] | None] | None:
    """The first place in ``d`` (a def or a lambda) that writes one of ``names`` in place:
    ``(node, name, None)`` for a store or a writing method (:func:`written_roots`), ``(node,
    name, (name, callee, library))`` for a call handing it to a function that writes it; None
    where ``d`` writes none of them."""
    for node in walk(d):
        hits = [n for n in written_roots(node) if n in names]
        if hits:
            return node, hits[-1], None
        if isinstance(node, gast.Call):
            handed = _handed_to_a_writer(node, names, parsed)
            if handed is not None:
                return node, handed[0], handed
    return None


def _handed_to_a_writer(call: gast.Call, free: set[str], parsed: Parsed
                        ) -> tuple[str, str] | None:
    """(name, callee) where ``call``, in a nested def, hands a name of the enclosing function
    (``free``) to a function of the user's that writes that parameter in place
    (``lap(buf, v)`` in ``def op(v)``, or a lambda): the enclosing function saw no write of
    ``buf``, a silently zero gradient. ``library``: the callee is a library function that
    writes its first argument (``operator.setitem``, ``heapq.heappush``)."""
    from adgen.transforms.front import is_user_function, resolve

    handed = [(k, a) for k, a in enumerate(call.args)] + [(k.arg, k.value)
                                                           for k in call.keywords]
    names = [(slot, a.id) for slot, a in handed if isinstance(a, gast.Name) and a.id in free]
    if not names:
        return None
    obj = resolve(parsed, call.func)
    if obj is not None and names[0][0] == 0:
        from adgen.transforms.effect_calls import writes_arguments

        if writes_arguments(obj):
            # (lambda: operator.setitem(y, 1, v))(), heapq.heappush(h, v) in a nested def:
            # a library function writing its first argument (the enclosing function's y),
            # unseen there: a silently wrong gradient under both policies
            return names[0][1], src_text_of(call.func), True
    if obj is None or not is_user_function(obj) or \
            str(getattr(obj, "__module__", "") or "").startswith(("numpy", "adgen.")):
        return None
    from adgen.transforms.pipeline import compile_function

    from adgen.errors import AdgenError

    try:
        written = compile_function(obj).written_params
    except AdgenError:
        return None  # reported where the call is compiled
    if not written:
        return None
    params = list(obj.__code__.co_varnames[:obj.__code__.co_argcount +
                                            obj.__code__.co_kwonlyargcount])
    for slot, n in names:
        param = params[slot] if isinstance(slot, int) and slot < len(params) else slot
        if written is True or param in written:
            return n, getattr(obj, "__name__", "the function"), False
    return None


def src_text_of(e: gast.expr) -> str:
    """``e`` as the user wrote it (a dotted name: ``operator.setitem``)."""
    return gast.unparse(e).strip()


def refuse_active_defaults(d: gast.FunctionDef, act: Any, others: set[str],
                            parsed: Parsed) -> None:
    """A nested def whose default reads a value with a gradient (``def term(y, k=a)``): the
    default is evaluated when the def runs, out of the gradient's sight, so it is refused.
    ``others``: the parameters not differentiated (varied only as possible aliases)."""
    from adgen.errors import UnsupportedError

    active = {re.sub(r"_\d+$", "", n) for n in act.varied & act.useful} - others
    for default in list(d.args.defaults) + [k for k in d.args.kw_defaults if k is not None]:
        for n in walk(default):
            if isinstance(n, gast.Name) and n.id in active and parsed.is_local(n.id):
                raise UnsupportedError(
                    f"a default of the nested function {d.name} reads {n.id}, which has a "
                    "gradient; adgen does not follow a value into a default",
                    parsed.location(default),
                    hint=f"pass {n.id} to {d.name} as an argument at each call")


def nested_function(fn: Any, d: gast.FunctionDef, parsed: Parsed) -> tuple[Any, tuple[str, ...]]:
    """The function of the nested def (or lifted lambda) ``d`` of ``fn`` (``parsed``), made
    from its code object with its free variables' cells empty, and those free variables
    (forward mode compiles it with them as trailing parameters).

    Raises:
        UnsupportedError: where its code object cannot be told apart.
    """
    import types

    consts = [c for c in fn.__code__.co_consts if hasattr(c, "co_name")]
    code = next((c for c in consts if c.co_name == d.name and c.co_firstlineno == d.lineno),
                None)
    if code is None:
        # a def renamed apart from a runtime helper (rename_reserved: def add(a, b) is
        # add_1 here): the one def of its line
        defs = [c for c in consts if c.co_name != "<lambda>" and c.co_firstlineno == d.lineno]
        code = defs[0] if len(defs) == 1 else None
    if code is None:
        # a lambda (lift_lambdas wrote it as a def): its code is named <lambda>, and the
        # k-th lambda of its line is the k-th nested def of that line
        lambdas = [c for c in consts if c.co_name == "<lambda>" and
                   c.co_firstlineno == d.lineno]
        same = [e for e in parsed.nested_defs if e.lineno == d.lineno]
        if len(lambdas) == len(same):
            code = lambdas[same.index(d)]
    if code is None:
        from adgen.errors import UnsupportedError

        raise UnsupportedError(f"forward mode cannot find the code of {d.name}",
                               parsed.location(d))
    cells = tuple(types.CellType() for _ in code.co_freevars)
    return types.FunctionType(code, fn.__globals__, d.name, None, cells), \
        tuple(code.co_freevars)


def only_defined(tree: gast.FunctionDef, names: set[str]) -> set[str]:
    """Those of ``names`` (nested defs' names) that ``tree`` binds by their defs alone: a
    name also assigned (``step = other``) may hold another function where it is called."""
    stored = {n.id for n in walk(tree) if isinstance(n, gast.Name) and
              isinstance(n.ctx, (gast.Store, gast.Del))}
    return names - stored


def refuse_nested_def(parsed: Parsed, fn: gast.FunctionDef, node: gast.FunctionDef) -> None:
    """Refuses a def nested in ``fn`` (``validate`` asks, for each one) that reads a
    variable ``fn`` assigns more than once, one kept as a value past the loop step whose
    variable it reads, and a decorated one."""
    outer = {a.id for a in fn.args.args} | {
        n.id for n in walk(fn) if isinstance(n, gast.Name)
        and isinstance(n.ctx, gast.Store)}
    inner_bound = {a.id for a in node.args.args} | {
        n.id for n in walk(node) if isinstance(n, gast.Name)
        and isinstance(n.ctx, gast.Store)}
    free = sorted({n.id for n in walk(node) if isinstance(n, gast.Name)
                   and isinstance(n.ctx, gast.Load)} & outer - inner_bound - {node.name})
    for v in free:
        binds = sum(1 for n in walk(fn) if isinstance(n, gast.Name) and
                    isinstance(n.ctx, gast.Store) and n.id == v and
                    n not in set(walk(node)))
        binds += v in {a.id for a in fn.args.args}
        if binds > 1:
            raise UnsupportedError(
                f"the nested def {node.name}() reads {v!r}, which the enclosing "
                "function assigns more than once",
                parsed.location(node),
                hint=f"pass {v} to {node.name}() as an argument")
    _refuse_kept_across_steps(parsed, fn, node, free)
    if node.decorator_list:
        raise UnsupportedError("a decorated nested def is not supported",
                               parsed.location(node),
                               hint="define it at module level")


def _refuse_kept_across_steps(parsed: Parsed, fn: gast.FunctionDef, d: gast.FunctionDef,
                              free: list[str]) -> None:
    """A nested def (or lambda) reading a variable the enclosing function binds in a loop,
    kept as a value past the step that made it (``fs.append(lambda t: t * c)`` with ``c =
    x[i]`` in the loop, or put in a list, a tuple, a dict, an attribute): Python reads the
    variable when the function is called, its last value then, which adgen's adjoint of
    each step's value does not follow (the gradient was silently wrong). Called by its name,
    or passed to a function by name (``apply1(g, x)``), it runs in the step: accepted."""
    inside_defs = {id(n) for g in walk(fn) if isinstance(g, gast.FunctionDef) and g is not fn
                   for n in walk(g)}
    looped = set()
    for loop in walk(fn):
        if isinstance(loop, (gast.For, gast.While)) and id(loop) not in inside_defs:
            looped |= {n.id for n in walk(loop) if isinstance(n, gast.Name) and
                       isinstance(n.ctx, gast.Store) and id(n) not in inside_defs}
    # (a counter of range(...), fns.append(lambda v: v * k) for k in range(3): an int, with
    # no derivative to lose: every one reads the last k, as in Python)
    counters = {n.id for loop in walk(fn) if isinstance(loop, gast.For) and
                isinstance(loop.iter, gast.Call) and isinstance(loop.iter.func, gast.Name) and
                loop.iter.func.id == "range" for n in walk(loop.target)
                if isinstance(n, gast.Name)}
    looped -= {v for v in counters if sum(
        1 for n in walk(fn) if isinstance(n, gast.Name) and n.id == v and
        isinstance(n.ctx, gast.Store) and id(n) not in inside_defs) == 1}
    # (a default is evaluated where the def is: def g(t, k=k) in the loop keeps each step's k)
    read = {n.id for b in d.body for n in walk(b) if isinstance(n, gast.Name) and
            isinstance(n.ctx, gast.Load)}
    late = [v for v in free if v in looped and v in read]
    if not late:
        return
    # (an argument of a call that runs it there: a function by name, np.apply_along_axis;
    # not of one that keeps it, fs.append(g), functools.partial(g, ...))
    keeping = {"append", "extend", "insert", "add", "setdefault", "update", "__setitem__",
               "appendleft", "partial"}
    plain_args = {id(a) for c in walk(fn) if isinstance(c, gast.Call) and (
                  isinstance(c.func, gast.Name) and c.func.id not in keeping or
                  isinstance(c.func, gast.Attribute) and c.func.attr not in keeping)
                  for a in c.args + [k.value for k in c.keywords]}
    kept = [n for n in walk(fn) if isinstance(n, gast.Name) and n.id == d.name and
            isinstance(n.ctx, gast.Load) and id(n) not in inside_defs and
            id(n) not in plain_args and not any(
                isinstance(c, gast.Call) and c.func is n for c in walk(fn))]
    if kept:
        shown = "a lambda" if d.name.startswith("lambda_") else f"the nested def {d.name}()"
        raise UnsupportedError(
            f"{shown} reads {late[0]!r}, which the enclosing function assigns in a loop, "
            "and is kept as a value past that step (appended, or put in a list, a tuple, a "
            f"dict or an attribute): Python reads {late[0]} when it is called, its value "
            "then, whose derivative adgen does not follow", parsed.location(d),
            hint=f"pass {late[0]} as an argument where it is called, or call it in the step "
                 "that made it")
