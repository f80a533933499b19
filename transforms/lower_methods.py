"""Lower mutation, calls of a method of a value (``recv.method(...)``, the receiver a name the
function reads, or a global array): ``x.fill(c)``, ``out.__setitem__(i, v)``, ``x.__iadd__(v)``,
``o.__setattr__("h", v)``, ``xs.extend(ys)`` / ``d.update(e)``, ``d.setdefault``, ``x.put``,
``x.sort()``, ``L.pop(i)`` / ``L.insert(i, v)`` / ``L.remove(v)`` of a list only ``L`` reaches,
``d.pop(k)``, and the refusals of the in-place methods adgen does not follow (module doc of
``lower_mutation``, which asks :func:`lower_method_call` for such a call, and imports this
module where a function has one: issue 15's cold start).

Input: one statement of a function in A-normal form whose call is such a method call, and the
``lower_mutation.Lower`` at work. Output: the statements it is lowered to, or None where it
is not one of these (``lower_mutation`` goes on).
"""

from __future__ import annotations

import functools
import types
from typing import TYPE_CHECKING

import gast
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.lower_mutation import call_name, ellipsis_index, np_call, store
from adgen.transforms.walk import clone

from adgen.errors import UnsupportedError

if TYPE_CHECKING:
    from adgen.transforms.lower_mutation import Lower


# Names of list, dict and ndarray methods that passes handle by name: on an object of a user's
# class defining one, it is that class's method (Receivers.built_class)
_CONTAINER_METHOD_NAMES = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort", "update",
    "setdefault", "fill", "put", "itemset", "resize", "partition", "setfield", "byteswap",
    "shuffle", "add", "discard"})


_REFUSED_METHODS = {
    "itemset": "write x[index] = value",
    "resize": "allocate a new array with np.resize(x, shape)",
    "insert": "build a new list",
    "remove": "build a new list",
    "clear": "build a new list",
    "reverse": "use xs[::-1]",
    "setdefault": "assign the key explicitly",
    "pop": "index the last element and build a shorter list",
    "partition": "use np.sort",
    "setfield": "write x[index] = value",
    "byteswap": "use x.astype(x.dtype.newbyteorder())",
    "shuffle": "permute with an index: x = x[rng.permutation(len(x))]",
}


# x.__iadd__(v) and the other in-place operators written out by name: x += v and so on
_IN_PLACE_OPERATORS = {
    "__iadd__": gast.Add, "__isub__": gast.Sub, "__imul__": gast.Mult,
    "__itruediv__": gast.Div, "__ifloordiv__": gast.FloorDiv, "__imod__": gast.Mod,
    "__ipow__": gast.Pow, "__imatmul__": gast.MatMult,
}


def lower_method_call(lw: Lower, s: gast.stmt, call: gast.Call, result: str | None,
                      resolved: object | None) -> list[gast.stmt] | None:
    """The statements ``s`` (whose call ``call`` of a method of a value, ``recv.method(...)``,
    binds ``result`` if not None) is lowered to; None where this module has nothing to do
    with it (``lower_mutation`` goes on)."""
    func = call.func
    # (WORK.fill(c) of a global array: its method resolves to the bound builtin, and
    # left a plain call, the write was unseen: lowered as a local array's is)
    method = func.attr
    recv = func.value
    if lw.receivers.user_method(recv, method):
        # self.update(x), self.fill(p) in a class that defines the method: a method
        # call (self.fill(p) was taken for ndarray.fill: self[...] = p)
        return [s]
    cls = lw.receivers.built_class(recv, method)
    if cls is not None and method in _CONTAINER_METHOD_NAMES:
        # d.append(v) of d = Doubler(): the class's own method, called through its
        # class (Doubler.append(d, v)), which no later pass takes for list.append
        call.func = located_at(gast.Attribute(value=clone(cls), attr=method,
                                              ctx=gast.Load()), func)
        call.args = [clone(recv), *call.args]
        return [s]
    if method == "__setitem__" and len(call.args) == 2 and not call.keywords and \
            not any(isinstance(a, gast.Starred) for a in call.args):
        # out.__setitem__(i, v) is out[i] = v for any object (Python's store calls
        # the same method): left a call, the write was unseen (a silently wrong
        # gradient, in the function or in a helper it calls)
        return [store(recv, call.args[0], call.args[1], s)] + lw.none_for(result, s)
    if method == "__setattr__" and len(call.args) == 2 and not call.keywords and \
            isinstance(call.args[0], gast.Constant) and \
            isinstance(call.args[0].value, str) and call.args[0].value.isidentifier():
        # o.__setattr__("h", v) is o.h = v (it raised 'object.__setattr__ has no
        # derivative rule')
        target = gast.Attribute(value=recv, attr=call.args[0].value, ctx=gast.Store())
        return [assign(target, call.args[1], s)] + lw.none_for(result, s)
    if method in _IN_PLACE_OPERATORS and len(call.args) == 1 and not call.keywords \
            and isinstance(recv, gast.Name) and not isinstance(call.args[0], gast.Starred) \
            and not lw.receivers.not_an_array(recv) and \
            not lw.receivers.object_like(recv):
        # out.__iadd__(v) is out += v on an array or a list (which return themselves):
        # left a call, the write was unseen (a silently wrong gradient); a user's
        # object's own __iadd__ (which may return another object) stays its call
        op = _IN_PLACE_OPERATORS[method]()
        value, first = call.args[0], []
        if not isinstance(value, (gast.Name, gast.Constant)):
            # a display (acc.__iadd__([v])): named, as for acc += [v]
            t = lw.namer.fresh("t")
            first, value = [assign(name(t, gast.Store), value, s)], name(t)
        aug = gast.copy_location(gast.AugAssign(
            target=name(recv.id, gast.Store), op=op, value=value), s)
        return first + lw.stmt(aug) + (
            [assign(name(result, gast.Store), name(recv.id), s)]
            if result is not None else [])
    if method == "fill" and not lw.receivers.not_an_array(recv):
        value = lw.arguments(call, ("value",), 1, s, method, keywords=False)[0]
        return [store(recv, ellipsis_index(), value, s)] + lw.none_for(result, s)
    if method == "append" and result is not None and len(call.args) == 1 and \
            not call.keywords and not isinstance(call.args[0], gast.Starred) and \
            not lw.receivers.object_like(recv):
        # t = hist.append(v): the append as the statement adgen follows, and t = None
        # as Python binds it (left an assignment of a call, the list's adjoint never
        # reached v: a silently zero gradient before session 21)
        lowered = [gast.copy_location(gast.Expr(value=call), s)] + \
            lw.none_for(result, s)
        if lw.receivers.built_as(recv, "list"):
            return lowered
        test = call_name("isinstance", clone(recv), name("list"))
        return [gast.copy_location(gast.If(test=test, body=lowered, orelse=[s]), s)]
    if method in ("extend", "update") and len(call.args) == 1 and not call.keywords:
        if lw.receivers.object_like(recv):
            return [s]  # model.update(x) on an object: its own method
        # list.extend / dict.update when the receiver is one at run time, else the
        # receiver's own method of that name
        lower = lw.extend if method == "extend" else functools.partial(_update, lw)
        kind = "list" if method == "extend" else "dict"
        lowered = lower(recv, call.args[0], s) + lw.none_for(result, s)
        if lw.receivers.built_as(recv, kind):
            return lowered
        test = call_name("isinstance", clone(recv), name(kind))
        return [gast.copy_location(gast.If(test=test, body=lowered, orelse=[s]), s)]
    if method == "update" and not call.args and call.keywords and \
            all(k.arg for k in call.keywords) and not lw.receivers.object_like(recv):
        # d.update(a=v, b=w): the stores d["a"] = v; d["b"] = w, where d is a dict
        lowered = [store(clone(recv), gast.Constant(k.arg, None), k.value, s)
                   for k in call.keywords] + lw.none_for(result, s)
        if lw.receivers.built_as(recv, "dict"):
            return lowered
        test = call_name("isinstance", clone(recv), name("dict"))
        return [gast.copy_location(gast.If(test=test, body=lowered, orelse=[s]), s)]
    if method == "setdefault" and len(call.args) in (1, 2) and not call.keywords and \
            not any(isinstance(a, gast.Starred) for a in call.args) and \
            not lw.receivers.object_like(recv):
        # config.setdefault("momentum", 0.9) (CS231n's optim.py), where config is a
        # dict: if "momentum" not in config: config["momentum"] = 0.9, and the result
        # config["momentum"] (it was refused as an in-place method)
        key = call.args[0]
        default = call.args[1] if len(call.args) == 2 else gast.Constant(None, None)
        # the test bound to a name in the forward: the pullback reads that, not the
        # test again on the dict the store has filled (its branch never ran there: a
        # silently zero gradient for the default before session 21)
        absent = lw.namer.fresh("absent")
        lowered: list[gast.stmt] = [
            assign(name(absent, gast.Store), gast.Compare(
                left=clone(key), ops=[gast.NotIn()], comparators=[clone(recv)]), s),
            gast.copy_location(gast.If(
                test=name(absent), body=[store(clone(recv), clone(key), default, s)],
                orelse=[]), s)]
        if result is not None:
            lowered.append(assign(name(result, gast.Store), gast.Subscript(
                value=clone(recv), slice=clone(key), ctx=gast.Load()), s))
        if lw.receivers.built_as(recv, "dict"):
            return lowered
        test = call_name("isinstance", clone(recv), name("dict"))
        return [gast.copy_location(gast.If(test=test, body=lowered, orelse=[s]), s)]
    if method == "put":
        ind, v, mode = lw.arguments(call, ("ind", "v", "mode"), 2, s, method)
        lw.refuse_mode(mode, s)
        return lw.put(recv, ind, v, s) + lw.none_for(result, s)
    if method == "sort" and isinstance(recv, gast.Name) and not call.args and \
            all(k.arg in ("key", "reverse") for k in call.keywords) and \
            (call.keywords or lw.receivers.built_as(recv, "list")) and \
            not lw.receivers.object_like(recv):
        # arrs.sort(key=...) of a list (ndarray.sort takes no key=), or vals.sort() of
        # a list the function builds (vals = x.tolist(): it was sorted as an array, a
        # raw AttributeError): the sorted list bound to the name, where only that
        # name reaches the list (as L.pop(i))
        from adgen.transforms.analyses.unshared_lists import UnsharedLists

        why = UnsharedLists(lw.parsed, lw.resolve).why_shared(recv, s)
        if why is not None:
            given = ", ".join(f"{k.arg}=..." for k in call.keywords)
            raise UnsupportedError(
                f"{recv.id}.sort({given}) is differentiated on a list that only its "
                f"name reaches; here {why}", lw.parsed.location(s),
                hint=f"sort into a new list: {recv.id} = sorted({recv.id}"
                     f"{', ' if given else ''}{given})")
        ordered = gast.Call(func=name("sorted"), args=[name(recv.id)],
                            keywords=call.keywords)
        return [assign(name(recv.id, gast.Store), ordered, s)] + lw.none_for(result, s)
    if method in ("reverse", "clear") and isinstance(recv, gast.Name) and \
            not call.args and not call.keywords and \
            lw.receivers.built_as(recv, "list") and \
            not lw.receivers.object_like(recv):
        # L.reverse(), L.clear() of a list the function builds: the reversed (empty)
        # list bound to the name, where only that name reaches the list (as L.sort())
        from adgen.transforms.analyses.unshared_lists import UnsharedLists

        why = UnsharedLists(lw.parsed, lw.resolve).why_shared(recv, s)
        if why is not None:
            raise UnsupportedError(
                f"{recv.id}.{method}() is differentiated on a list that only its "
                f"name reaches; here {why}", lw.parsed.location(s),
                hint=f"build a new list: {recv.id} = " +
                     (f"{recv.id}[::-1]" if method == "reverse" else "[]"))
        if method == "clear":
            return [assign(name(recv.id, gast.Store), gast.List(elts=[],
                                                                ctx=gast.Load()), s)] + \
                lw.none_for(result, s)
        turned = lw.namer.fresh("t")
        back = gast.Subscript(value=name(recv.id), slice=gast.Slice(
            lower=None, upper=None, step=gast.UnaryOp(
                op=gast.USub(), operand=gast.Constant(1, None))), ctx=gast.Load())
        # (list(...): a new list, so the name stays one the function builds)
        return [assign(name(turned, gast.Store), back, s),
                assign(name(recv.id, gast.Store), call_name("list", name(turned)),
                       s)] + lw.none_for(result, s)
    if method == "sort":
        # x.sort(axis=-1, kind=None, order=None, *, stable=None): every kind gives
        # the same values; the gradient follows the stable permutation
        axis, _, order, _ = lw.arguments(
            call, ("axis", "kind", "order", "stable"), 0, s, method)
        if order is not None and not (isinstance(order, gast.Constant) and
                                      order.value is None):
            raise UnsupportedError("x.sort(order=...) (a structured array) is not "
                                   "supported", lw.parsed.location(s),
                                   hint="sort a float array")
        axis = axis if axis is not None else gast.Constant(-1, None)
        perm, tmp = lw.namer.fresh("perm"), lw.namer.fresh("t")
        argsort = np_call("argsort", [recv], {"axis": axis,
                                               "kind": gast.Constant("stable", None)})
        take = np_call("take_along_axis", [recv, name(perm)], {"axis": axis})
        return [assign(name(perm, gast.Store), argsort, s),
                assign(name(tmp, gast.Store), take, s),
                store(recv, ellipsis_index(), name(tmp), s)] + lw.none_for(result, s)
    if method == "pop" and not _is_module(lw, recv) and \
            not lw.receivers.object_like(recv) and (
                lw.receivers.built_as(recv, "dict") or
                call.args and isinstance(call.args[0], gast.Constant) and
                isinstance(call.args[0].value, str)):
        # d.pop(k) / d.pop(k, default) of a dict only d reaches: the item read and
        # a new dict without it bound to d (transforms/dict_pop.py)
        why = "the call is not d.pop(k) or d.pop(k, default) of a dict named d"
        if isinstance(recv, gast.Name) and len(call.args) in (1, 2) and \
                not call.keywords and \
                not any(isinstance(a, gast.Starred) for a in call.args):
            from adgen.transforms.analyses.unshared_lists import UnsharedLists
            from adgen.transforms.dict_pop import lower_dict_pop

            why = UnsharedLists(lw.parsed, lw.resolve).why_shared(recv, s, "dict")
            if why is None:
                return lower_dict_pop(recv, call.args[0], call.args[1] if len(
                    call.args) == 2 else None, len(call.args) == 2, result,
                    lw.namer, s)
        raise UnsupportedError(
            "the in-place method .pop() of a dict is differentiated on a dict that "
            f"only its name reaches; here {why}",
            lw.parsed.location(s),
            hint="read the item (v = d[k], or d.get(k, default)) and build the dict "
                 "without it where you need one: {kk: vv for kk, vv in d.items() if "
                 "kk != k}")
    if method in ("pop", "insert", "remove") and isinstance(recv, gast.Name) and \
            not call.keywords and len(call.args) in \
            {"pop": (0, 1), "insert": (2,), "remove": (1,)}[method] and \
            not any(isinstance(a, gast.Starred) for a in call.args) and \
            not _is_module(lw, recv):
        # (imported here: most functions pop nothing, and a first gradient imports
        # little)
        from adgen.transforms.analyses.unshared_lists import UnsharedLists

        why = UnsharedLists(lw.parsed, lw.resolve).why_shared(recv, s)
        if why is None:
            if method == "pop":
                return _pop(lw, recv, call.args[0] if call.args else None, result, s)
            if method == "remove":
                # the first item equal to v, found as Python's remove finds it (its
                # ValueError where there is none), then popped
                at = lw.namer.fresh("t")
                find = gast.Call(func=gast.Attribute(value=name(recv.id), attr="index",
                                                     ctx=gast.Load()),
                                 args=[call.args[0]], keywords=[])
                return [assign(name(at, gast.Store), find, s)] + \
                    _pop(lw, recv, name(at), None, s) + lw.none_for(result, s)
            return _insert(lw, recv, call.args[0], call.args[1], s) + \
                lw.none_for(result, s)
        if lw.receivers.built_as(recv, "list") or recv.id in {
                a.id for a in lw.parsed.tree.args.args}:
            example = {"pop": "y = L[-1]; L = L[:-1]",
                       "insert": "L = L[:i] + [v] + L[i:]",
                       "remove": "i = L.index(v); L = L[:i] + L[i + 1:]"}[method]
            mine = "" if lw.receivers.built_as(recv, "list") else (
                f"; if {recv.id} is an object of one of your classes with its own "
                f"{method}(), annotate the parameter with its class (def f(..., "
                f"{recv.id}: YourClass)): its method is then called")
            raise UnsupportedError(
                f"{recv.id}.{method}() is differentiated on a list that only its "
                f"name reaches; here {why}", lw.parsed.location(s),
                hint=f"build a new list instead ({example}){mine}")
    if method in _REFUSED_METHODS and not _is_module(lw, recv):
        hint = _REFUSED_METHODS[method]
        held = _popped_attribute(lw.parsed.location(s).source_line) \
            if method == "pop" and not call.args else None
        if held is not None:
            # self.items.pop() of a Stack's method: the rewrite, in the user's words
            # (the line as written: the receiver is a name of the normal form here)
            hint = (f"read the last item and rebind a shorter list, which adgen "
                    f"follows: v = {held}[-1]; {held} = {held}[:-1] (or keep the "
                    "items in a list the function makes: v = items.pop())")
        raise UnsupportedError(
            f"the in-place method .{method}() is not supported yet",
            lw.parsed.location(s), hint=hint)
    return None



def _pop(lw: Lower, lst: gast.Name, index: gast.expr | None, result: str | None,
         like: gast.stmt) -> list[gast.stmt]:
    """``y = L.pop(i)`` of a list only ``L`` reaches (analyses.unshared_lists) -> ``y =
    L[i]`` (an IndexError where pop raises one), then ``L`` rebound to the list without
    that item: ``L = L[:j] + L[j + 1:]``, ``j`` the index counted from the start."""
    out: list[gast.stmt] = []

    def bind(value: gast.expr, prefix: str = "t") -> gast.Name:
        t = lw.namer.fresh(prefix)
        out.append(assign(name(t, gast.Store), value, like))
        return name(t)

    size = None
    if index is None or isinstance(index, gast.Constant) and index.value == -1:
        size = bind(call_name("len", name(lst.id)))
        at: gast.expr = bind(gast.BinOp(left=size, op=gast.Sub(),
                                        right=gast.Constant(1, None)))
    else:
        at = index
    item = gast.Subscript(value=name(lst.id), slice=clone(at), ctx=gast.Load())
    if result is not None:
        out.append(assign(name(result, gast.Store), item, like))
    else:
        bind(item)  # (read for its IndexError on an empty list or a wrong index)
    if size is None and not (isinstance(at, gast.Constant) and isinstance(at.value, int)
                             and at.value >= 0):
        size = bind(call_name("len", name(lst.id)))
        at = bind(gast.BinOp(left=clone(at), op=gast.Mod(), right=size))
    after = bind(gast.BinOp(left=clone(at), op=gast.Add(), right=gast.Constant(1, None)))
    head = bind(gast.Subscript(value=name(lst.id), slice=gast.Slice(
        lower=None, upper=clone(at), step=None), ctx=gast.Load()))
    tail = bind(gast.Subscript(value=name(lst.id), slice=gast.Slice(
        lower=after, upper=None, step=None), ctx=gast.Load()))
    out.append(assign(name(lst.id, gast.Store), gast.BinOp(left=head, op=gast.Add(),
                                                           right=tail), like))
    return out


def _insert(lw: Lower, lst: gast.Name, index: gast.expr, value: gast.expr, like: gast.stmt
            ) -> list[gast.stmt]:
    """``L.insert(i, v)`` of a list only ``L`` reaches -> ``L = L[:i] + [v] + L[i:]``
    (Python's insert: an index past either end puts ``v`` at that end)."""
    out: list[gast.stmt] = []

    def bind(v: gast.expr) -> gast.Name:
        t = lw.namer.fresh("t")
        out.append(assign(name(t, gast.Store), v, like))
        return name(t)

    head = bind(gast.Subscript(value=name(lst.id), slice=gast.Slice(
        lower=None, upper=clone(index), step=None), ctx=gast.Load()))
    item = bind(gast.List(elts=[value], ctx=gast.Load()))
    tail = bind(gast.Subscript(value=name(lst.id), slice=gast.Slice(
        lower=clone(index), upper=None, step=None), ctx=gast.Load()))
    front = bind(gast.BinOp(left=head, op=gast.Add(), right=item))
    out.append(assign(name(lst.id, gast.Store), gast.BinOp(left=front, op=gast.Add(),
                                                           right=tail), like))
    return out


def _update(lw: Lower, d: gast.expr, other: gast.expr, like: gast.AST) -> list[gast.stmt]:
    """d.update(other) -> for each key of other: d[key] = other[key]."""
    keys, i = lw.namer.fresh("keys"), lw.namer.fresh("i")
    key, value = lw.namer.fresh("key"), lw.namer.fresh("t")
    body = [assign(name(key, gast.Store), gast.Subscript(value=name(keys), slice=name(i),
                                                         ctx=gast.Load()), like),
            assign(name(value, gast.Store), gast.Subscript(value=other, slice=name(key),
                                                           ctx=gast.Load()), like),
            store(d, name(key), name(value), like)]
    return [assign(name(keys, gast.Store), call_name("dict_keys", other), like)] + \
        lw.counted_loop(call_name("len", name(keys)), body, i, like)


def _is_module(lw: Lower, node: gast.expr) -> bool:
    return isinstance(lw.resolve(node), types.ModuleType)


def _popped_attribute(line: str) -> str | None:
    """``self.items`` for a line that pops an attribute's list (``return self.items.pop()``),
    where that is the line's only ``.pop()``; else None."""
    import re

    found = re.findall(r"([A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)+)\.pop\(\)",
                       line or "")
    return found[0] if len(found) == 1 and line.count(".pop(") == 1 else None
