"""Lower mutation: every in-place array write becomes ``x[index] = value``.

Input: a function in A-normal form. Output: the same function where the mutating calls adgen
knows are rewritten into indexed stores the reverse pass handles uniformly:

- ``x.fill(c)``                      -> ``x[...] = c``
- ``x.__setitem__(i, v)``            -> ``x[i] = v``
- ``x.__iadd__(v)`` (``__isub__``, ``__imul__``, ...) -> ``x += v`` (an array or a list)
- ``o.__setattr__("h", v)``            -> ``o.h = v``
- ``np.sin(x, y)`` (an output by position) -> ``np.sin(x, out=y)``, then as below
- ``np.copyto(dst, src)``            -> ``dst[...] = src`` (with ``where=m``:
                                         ``t = np.where(m, src, dst); dst[...] = t``)
- ``f(a, b, out=o)`` (a ufunc)          -> ``o = f(a, b, out=o)`` (written in place; the new
                                         binding names the new contents of the same buffer;
                                         not a function of the user's with an out= keyword,
                                         which need not return o: an ordinary call)
- ``f(a, out=o)`` (any other rule call) -> ``t = f(a); o[...] = t`` (np.dot, np.clip, np.sum
                                         ... return a new scalar, not o, for a 0-d o)
- ``x.sort()`` (1-D or last axis)    -> ``p = np.argsort(x, axis=-1, kind="stable");
                                         t = np.take_along_axis(x, p, axis=-1); x[...] = t``
- ``np.add.at(x, i, v)`` / ``np.subtract.at`` stay calls (the reverse pass knows them).
- ``np.multiply.at(x, i, v)`` (``maximum``, ``minimum``) -> ``t = ufunc_at(np.multiply, x, i,
                                         v); x[...] = t`` (rules/scatter.py)
- ``x.put(i, v)`` / ``np.put(x, i, v)``    -> ``flat = flat_view(x); flat[i] = v``
- ``np.fill_diagonal(x, v)``             -> ``d = diagonal_index(x); x[d] = v``
- ``np.putmask(x, m, v)``             -> ``t = np.where(m, np.resize(v, np.shape(x)), x);
                                         x[...] = t`` (in steps)
- ``lst.extend(xs)`` / ``d.update(e)``   -> a loop of appends / of ``d[k] = e[k]``
- ``y = d.pop(k)`` / ``d.pop(k, default)`` of a dict only ``d`` reaches -> ``y = d[k]`` and
  ``d`` rebound to a new dict of the other items (dict_pop)
- ``y = L.pop(i)`` / ``L.insert(i, v)`` / ``L.remove(v)`` of a list only ``L`` reaches
  (analyses.unshared_lists)          -> ``y = L[i]; L = L[:j] + L[j + 1:]`` /
                                        ``L = L[:i] + [v] + L[i:]`` / ``i = L.index(v)``, popped
- ``np.divide(a, b, out=o, where=m)`` (a ufunc's ``where=``) -> ``t = np.divide(np.where(m, a,
  1), np.where(m, b, 1)); np.copyto(o, np.where(m, t, o))`` in steps (ufunc_where)
- ``np.sum(a, where=m)`` and the other reductions' ``dtype=``/``initial=``/``where=`` -> the
  plain reduction of ``np.where(m, a, 0)`` and so on (reduction_keywords)
(``np.place`` and ``np.put_along_axis`` are references that write their argument,
rules/composites_writes.py.) Mutating calls adgen does not handle yet (``x.resize``, a list's
``pop``/``insert``/``remove`` of a list another name may reach, ...) raise UnsupportedError with the line.
The calls of a method of a value (``x.fill``, ``xs.extend``, ``L.pop``, ...) are lowered by
``lower_methods.lower_method_call``, imported where a function has one (issue 15's cold start).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING

import gast
from adgen.transforms.bindings import NOT_FOUND, dotted_object
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.getattr_constant import lower_getattr, lower_setattr, lower_setitem
from adgen.transforms.names import Namer
from adgen.transforms.out_positions import out_by_keyword
from adgen.transforms.parse import Parsed
from adgen.transforms.reduction_keywords import lower_reduction
from adgen.transforms.several_results import lower_several
from adgen.transforms.ufunc_where import lower_ufunc_where
from adgen.transforms.walk import clone, statement_blocks, walk
from numpy import ndarray as _ndarray
from numpy import ufunc as _ufunc

from adgen.errors import UnsupportedError

if TYPE_CHECKING:
    from adgen.transforms.analyses.receivers import Receivers


_REFUSED_FUNCS = {"shuffle": "permute with an index: x = x[np.random.permutation(len(x))]"}


def lower_mutation(fn: gast.FunctionDef, namer: Namer, parsed: Parsed) -> gast.FunctionDef:
    """Rewrites mutating calls into indexed stores (fn is changed in place)."""
    lower = Lower(namer, parsed)
    lower.fn = fn  # (the temporaries a getattr binds: how often they are read)
    fn.body = lower.block(fn.body)
    if lower.concatenators:  # t = np.r_, read by the lowered t[z, 0.2] only
        from adgen.transforms.index_tricks import drop_unread_concatenators

        # (a nested def set aside by hoist_defs may read one: parsed.closure_free)
        drop_unread_concatenators(fn, set(lower.concatenators) - parsed.closure_free -
                                  parsed.aliases_in_defs)
    _name_stored_displays(fn.body, namer)
    if lower.grows:  # hist["h"][-1] of a list the function grows (most functions grow none)
        from adgen.transforms.list_end_reads import lower_end_reads

        lower_end_reads(fn, namer, lower.resolve)
        from adgen.transforms.grown_list_reads import snapshot_grown_reads

        snapshot_grown_reads(fn, namer, lower.resolve)  # np.array(hist), then hist.append(v)
    return fn


def _name_stored_displays(body: list[gast.stmt], namer: Namer) -> None:
    """A store the lowering made whose value is a list or tuple display of names (a call's
    argument in A-normal form: ``np.copyto(t1, [t2, t4])`` -> ``t1[...] = [t2, t4]``) gets the
    display bound to a name first, as A-normal form binds a store's value (``t5 = [t2, t4];
    t1[...] = t5``): the pullback hands a stored display's adjoint to its elements only
    through that name (their gradient was zero, silently, until session 21)."""
    for at in range(len(body) - 1, -1, -1):
        st = body[at]
        for inner in statement_blocks(st):
            _name_stored_displays(inner, namer)
        if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], (gast.Subscript, gast.Attribute)) and \
                isinstance(st.value, (gast.List, gast.Tuple)) and \
                not all(isinstance(e, gast.Constant) for e in st.value.elts):
            t = namer.fresh("t")
            body.insert(at, assign(name(t, gast.Store), st.value, st))
            st.value = located_at(name(t), st)


def store(target: gast.expr, index: gast.expr, value: gast.expr, like: gast.AST) -> gast.Assign:
    sub = gast.Subscript(value=target, slice=index, ctx=gast.Store())
    return assign(sub, value, like)


# a name bound to an index trick and to something else (np.r_ if flag else np.c_)
_SEVERAL = object()


def ellipsis_index() -> gast.Constant:
    return gast.Constant(Ellipsis, None)


class Lower:
    def __init__(self, namer: Namer, parsed: Parsed) -> None:
        self.namer = namer
        self.parsed = parsed
        self.grows = False  # some statement calls .append/.extend/.insert (list_end_reads)
        self.concatenators: dict[str, object] = {}  # t = np.r_ (transforms/index_tricks)
        # t1 = getattr(y, "__setitem__") of the normal form, called next: t1(1, v) is
        # y.__setitem__(1, v), lowered as that is (left a call through t1, the write was
        # unseen: a silently wrong gradient under both policies)
        self.bound_methods: dict[str, gast.Attribute] = {}
        self.method_bindings: dict[str, gast.Assign] = {}  # (their statements)
        self.fn: gast.FunctionDef | None = None

    @functools.cached_property
    def receivers(self) -> Receivers:
        """What the function shows its calls' receivers to be (analyses.receivers), made
        where a statement first asks: a function calling no method of a value of its own
        does not import it (issue 15's cold start)."""
        from adgen.transforms.analyses.receivers import Receivers

        return Receivers(self.parsed, self.resolve)

    def block(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for s in stmts:
            for field in ("body", "orelse"):
                if hasattr(s, field) and isinstance(getattr(s, field), list):
                    setattr(s, field, self.block(getattr(s, field)))
            if isinstance(s, gast.Try):
                for h in s.handlers:
                    h.body = self.block(h.body)
            call = getattr(s, "value", None)
            if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and \
                    call.func.attr in ("append", "extend", "insert"):
                self.grows = True
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: gast.stmt) -> list[gast.stmt]:
        if self.bound_methods:
            self._forget_bound_methods(s)
        if isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Add) and \
                isinstance(s.target, gast.Name) and isinstance(s.value, gast.Name) and \
                (self.receivers.built_as(s.target, "list") or
                 self.receivers.built_as(s.value, "list")):
            # lst += items extends the list in place, as lst.extend(items) (an alias sees the
            # new items; the pullback of a new list lst + items read a list grown since)
            if self.receivers.built_as(s.target, "list"):
                self.grows = True
                return self.extend(name(s.target.id), name(s.value.id), s)
            # a list the function was given (or an array plus a list of numbers): the
            # extension would make the name a list for the analyses on both paths, so a list
            # is refused when it runs, at this line
            loc = self.parsed.location(s)
            flag = self.namer.fresh("t")
            test = assign(name(flag, gast.Store),
                          call_name("isinstance", name(s.target.id), name("list")), s)
            error = call_name("list_iadd_error", gast.Constant(loc.file, None),
                              gast.Constant(loc.line, None))
            refuse = located_at(gast.If(test=name(flag), body=[
                located_at(gast.Raise(exc=error, cause=None), s)], orelse=[]), s)
            return [test, refuse, s]
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Dict) and \
                any(k is None for k in s.value.keys):
            return self._merged(s)
        if isinstance(s, gast.Assign) and len(s.targets) == 1:
            concatenation = self._concatenation(s)  # np.r_[z, 0.2], np.c_[a, b]
            if concatenation is not None:
                return concatenation
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.value, gast.Call):
            callee = self.resolve(s.value.func)
            reduced = lower_reduction(s, callee, self.namer)
            if reduced is not None:
                return reduced
            several = lower_several(s, callee, self.namer)  # np.atleast_2d(a, b), divmod
            if several is not None:
                return several
            read = lower_getattr(s, callee, self.namer)  # getattr(o, "name", d)
            if read is not None:
                t = s.targets[0]
                if len(read) == 1 and isinstance(t, gast.Name) and \
                        self.namer.temporary(t.id) and \
                        isinstance(read[0].value.value, gast.Name):
                    self.bound_methods[t.id] = read[0].value
                    self.method_bindings[t.id] = read[0]
                return read
            if isinstance(callee, type) and issubclass(callee, tuple) and \
                    hasattr(callee, "_fields"):
                return self._namedtuple(s, callee)
            func = s.value.func
            if callee is dataclasses.replace and len(s.value.args) == 1 and \
                    all(k.arg for k in s.value.keywords) and \
                    not isinstance(s.value.args[0], gast.Starred):
                # q = dataclasses.replace(p, w=v): t = dataclass_replacer(p, ("w",));
                # q = t(p, v), a function written for p's class when it runs
                # (adgen.dataclass_replace), differentiated as a call of the user's
                t = self.namer.fresh("replace")
                obj = s.value.args[0]
                names = gast.Tuple(elts=[gast.Constant(k.arg, None) for k in s.value.keywords],
                                   ctx=gast.Load())
                call = gast.Call(func=name(t), args=[clone(obj)] + [
                    k.value for k in s.value.keywords], keywords=[])
                return [assign(name(t, gast.Store), call_name("dataclass_replacer", obj, names), s),
                        assign(s.targets[0], located_at(call, s.value), s)]
            if isinstance(func, gast.Attribute) and func.attr == "_replace" and \
                    not s.value.args and s.value.keywords and \
                    all(k.arg for k in s.value.keywords) and \
                    (callee is None or _of_namedtuple(callee)):
                # q._replace(b=v) of a namedtuple (its method is made by exec, no source),
                # a local one's or a global one's (DEFAULTS._replace(w=x): resolved, the
                # method was compiled from collections' source and refused)
                t = self.namer.fresh("t")
                kw = gast.Dict(keys=[gast.Constant(k.arg, None) for k in s.value.keywords],
                               values=[k.value for k in s.value.keywords])
                return [assign(name(t, gast.Store), kw, s),
                        assign(s.targets[0], call_name("namedtuple_replace", func.value,
                                                       name(t)), s)]
        call = None
        result = None
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
            call = s.value
        elif isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and \
                isinstance(s.value, gast.Call):
            call, result = s.value, s.targets[0].id
        if call is None:
            return [s]
        func = call.func
        if isinstance(func, gast.Name) and func.id in self.bound_methods:
            method = self.bound_methods[func.id]
            if method.attr in ("append", "extend", "insert"):
                self.grows = True
            call.func = located_at(clone(method), func)
            binding = self.method_bindings.get(func.id)
            if binding is not None and self.fn is not None and sum(
                    isinstance(n, gast.Name) and n.id == func.id and
                    isinstance(n.ctx, gast.Load) for n in walk(self.fn)) <= 1:
                # t1 = y.__setitem__ read by this call alone: not kept (a read of y's
                # attribute made a helper's analyses take y for an object, whose write
                # its caller then missed: a silently zero gradient)
                binding.value = gast.Constant(None, None)
            return self.stmt(s)  # getattr(y, "fill")(c): y.fill(c)
        resolved = self.resolve(func)
        stored = lower_setattr(s, call, resolved, result) or \
            lower_setitem(s, call, resolved, result)  # setattr(o, "n", v), setitem(a, i, v)
        if stored is not None:
            return [t for st in stored for t in self.stmt(st)]
        out_by_keyword(call, resolved)  # np.sin(x, y): y is out=
        # np.divide(a, b, out=o, where=b != 0): a selection, then the write of o
        selected = lower_ufunc_where(s, call, resolved, result, self.namer)
        if selected is not None:
            return [t for st in selected for t in self.stmt(st)]
        out_kw = [k for k in call.keywords if k.arg == "out"]
        if out_kw and not self.receivers.own_out_keyword(func, resolved):
            out_arg = out_kw[0].value
            if isinstance(out_arg, gast.Tuple) and len(out_arg.elts) == 1:
                out_arg = out_arg.elts[0]
                out_kw[0].value = out_arg
            if not isinstance(out_arg, gast.Name):
                raise UnsupportedError("out= with several outputs is not supported",
                                       self.parsed.location(s), hint="write each output")
            if out_arg.id in self.parsed.free:
                # a global or closure array: binding it again below would make it a local of
                # the generated code (an UnboundLocalError), and in a helper the write was
                # no write of the array at all (a silently wrong gradient)
                raise UnsupportedError(
                    f"out={out_arg.id} writes the global or closure array {out_arg.id} in "
                    "place through a NumPy function, which adgen does not follow",
                    self.parsed.location(s),
                    hint=f"store the result instead: {out_arg.id}[...] = the same call "
                         "without out= (which adgen follows), or pass the array to the "
                         "function as an argument")
            if _may_return_another(func, resolved):
                # np.dot(a, b, out=o), np.sum(v, out=o), np.clip(u, 0, 1, out=o): for a 0-d o
                # (or a NumPy scalar operand) the call returns a new scalar, not o, so o bound
                # to the result named no buffer and the write had no gradient (silently): the
                # result is made, then stored into o as o[...] = t
                call.keywords = [k for k in call.keywords if k.arg != "out"]
                t = self.namer.fresh("t")
                new = [assign(name(t, gast.Store), call, s),
                       store(name(out_arg.id), ellipsis_index(), name(t), s)]
                if result is not None:
                    new.append(assign(name(result, gast.Store), name(out_arg.id), s))
                return [u for st in new for u in self.stmt(st)]
            # o = f(a, out=o): a ufunc writes o's buffer in place and returns it; binding o
            # again lets SSA name the new contents while the buffer stays the same
            new = [assign(name(out_arg.id, gast.Store), call, s)]
            if result is not None:
                new.append(assign(name(result, gast.Store), name(out_arg.id), s))
            return new
        if isinstance(func, gast.Attribute) and (resolved is None or (
                isinstance(getattr(resolved, "__self__", None), _ndarray) and
                isinstance(func.value, gast.Name) and
                func.value.id in self.parsed.free)):
            # (imported where a function calls a method of a value: lower_methods)
            from adgen.transforms.lower_methods import lower_method_call

            lowered = lower_method_call(self, s, call, result, resolved)
            if lowered is not None:
                return lowered
        if resolved is not None:
            import numpy as np

            if resolved is np.put:
                a, ind, v, mode = self.arguments(call, ("a", "ind", "v", "mode"), 3, s,
                                                   "put")
                self.refuse_mode(mode, s)
                return self.put(a, ind, v, s) + self.none_for(result, s)
            if resolved is np.fill_diagonal:
                a, val, wrap = self.arguments(call, ("a", "val", "wrap"), 2, s,
                                              "fill_diagonal")
                if wrap is not None and not (isinstance(wrap, gast.Constant) and
                                             wrap.value is False):
                    raise UnsupportedError(
                        "np.fill_diagonal with wrap= is not supported",
                        self.parsed.location(s),
                        hint="write the diagonal's indices: x[i, i] = v for i in range(n)")
                idx = self.namer.fresh("diag")
                return [assign(name(idx, gast.Store), call_name("diagonal_index", a), s),
                        store(a, name(idx), val, s)] + self.none_for(result, s)
            if isinstance(func, gast.Attribute) and func.attr == "at" and \
                    getattr(resolved, "__self__", None) in (np.multiply, np.maximum,
                                                            np.minimum) and \
                    len(call.args) == 3 and not call.keywords and \
                    isinstance(call.args[0], gast.Name):
                # not linear (np.add.at is): the new contents as a value whose pullback reads
                # the old ones, stored back (rules/scatter.py)
                tmp = self.namer.fresh("t")
                value = call_name("ufunc_at", func.value, *call.args)
                return [assign(name(tmp, gast.Store), value, s),
                        store(call.args[0], ellipsis_index(), name(tmp), s)] + self.none_for(result, s)
            if resolved is np.copyto:
                bound = self.arguments(call, ("dst", "src", "casting", "where"), 2, s,
                                       "copyto")
                return self._copyto(*bound, s) + self.none_for(result, s)
            if resolved is np.putmask:
                a, mask, values = self.arguments(call, ("a", "mask", "values"), 3, s,
                                                 "putmask")
                return self._putmask(a, mask, values, s) + self.none_for(result, s)
            fname = getattr(resolved, "__name__", "")
            if getattr(resolved, "__module__", "") and \
                    str(getattr(resolved, "__module__", "")).startswith("numpy") and \
                    fname in _REFUSED_FUNCS:
                raise UnsupportedError(f"np.{fname} (an in-place write) is not supported yet",
                                       self.parsed.location(s),
                                       hint="write " + _REFUSED_FUNCS[fname])
        return [s]

    def _namedtuple(self, s: gast.Assign, cls: type) -> list[gast.stmt]:
        """``p = Point(a, y=b)`` of a namedtuple class -> ``t1 = Point; t2 = (a, b);
        p = namedtuple_of(t1, t2)``, every field in order, a default read by
        ``field_default(t1, 'y')`` (runtime.namedtuple_of: its rule routes the cotangent
        field by field; ``__new__`` is made by exec, without source). Arguments that do not
        fit the fields keep the call as written (refused there)."""
        call = s.value
        assert isinstance(call, gast.Call)
        fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
        given: dict[str, gast.expr] = dict(zip(fields, call.args))
        for k in call.keywords:
            if k.arg not in fields or k.arg in given:
                return [s]
            given[k.arg] = k.value
        defaults = getattr(cls, "_field_defaults", {})
        if len(call.args) > len(fields) or any(isinstance(a, gast.Starred) for a in call.args) \
                or any(f not in given and f not in defaults for f in fields):
            return [s]
        out: list[gast.stmt] = []

        def bind(value: gast.expr) -> gast.expr:
            t = self.namer.fresh("t")
            out.append(assign(name(t, gast.Store), value, s))
            return name(t)

        klass = bind(clone(call.func))
        items = [given[f] if f in given else
                 bind(call_name("field_default", clone(klass), gast.Constant(f, None)))
                 for f in fields]
        values = bind(gast.Tuple(elts=items, ctx=gast.Load()))
        out.append(assign(s.targets[0], call_name("namedtuple_of", klass, values), s))
        return out

    def arguments(self, call: gast.Call, params: tuple[str, ...], required: int,
                   s: gast.stmt, method: str, keywords: bool = True) -> list[gast.expr | None]:
        """The arguments of an in-place call bound to ``params`` (None where not given);
        refused when they do not fit (a method of the same name on another type, say)."""
        bound: list[gast.expr | None] = [None] * len(params)
        ok = len(call.args) <= len(params) and not any(isinstance(a, gast.Starred)
                                                       for a in call.args)
        for k, a in enumerate(call.args[:len(params)]):
            bound[k] = a
        for kw in call.keywords:
            if not keywords or kw.arg not in params or bound[params.index(kw.arg)] is not None:
                ok = False
                break
            bound[params.index(kw.arg)] = kw.value
        if not ok or any(b is None for b in bound[:required]):
            raise UnsupportedError(
                f"the in-place call .{method}() with these arguments is not supported "
                f"(adgen knows {method}({', '.join(params)}))", self.parsed.location(s),
                hint="write the update as an indexed assignment x[index] = value")
        return bound

    def refuse_mode(self, mode: gast.expr | None, s: gast.stmt) -> None:
        if mode is not None and not (isinstance(mode, gast.Constant) and
                                     mode.value == "raise"):
            raise UnsupportedError("put with mode='clip' or 'wrap' is not supported",
                                   self.parsed.location(s),
                                   hint="clip or wrap the indices first, then write "
                                        "x.flat[index] = values")

    def _putmask(self, a: gast.expr, mask: gast.expr, values: gast.expr, s: gast.stmt
                 ) -> list[gast.stmt]:
        """``np.putmask(a, mask, values)`` -> ``t1 = np.shape(a); t2 = np.resize(values,
        t1); t3 = np.where(mask, t2, a); a[...] = t3``: where mask is true, a takes the value
        of values at the same flat position, values repeated as NumPy repeats them."""
        shape, full, new = (self.namer.fresh("t") for _ in range(3))
        return [assign(name(shape, gast.Store), np_call("shape", [clone(a)], {}), s),
                assign(name(full, gast.Store), np_call("resize", [values, name(shape)], {}),
                       s),
                assign(name(new, gast.Store), np_call("where", [mask, name(full), clone(a)],
                                                      {}), s),
                store(a, ellipsis_index(), name(new), s)]

    def _copyto(self, dst: gast.expr, src: gast.expr, casting: gast.expr | None,
                where: gast.expr | None, s: gast.stmt) -> list[gast.stmt]:
        """``np.copyto(dst, src)`` -> ``dst[...] = src``; with ``where=m`` ->
        ``t = np.where(m, src, dst); dst[...] = t`` (the elements m leaves keep their values,
        and the gradient reads m like any condition). The arguments come bound by name
        (``np.copyto(dst=buf, src=v)`` too)."""
        if (casting is not None and not (isinstance(casting, gast.Constant) and
                                         casting.value in ("same_kind", "unsafe"))):
            raise UnsupportedError("np.copyto with these arguments is not supported",
                                   self.parsed.location(s),
                                   hint="write dst[...] = src, or dst[...] = np.where(mask, "
                                        "src, dst) for where=mask")
        if where is None or (isinstance(where, gast.Constant) and where.value is True):
            return [store(dst, ellipsis_index(), src, s)]
        tmp = self.namer.fresh("t")
        return [assign(name(tmp, gast.Store), np_call("where", [where, src, dst], {}), s),
                store(dst, ellipsis_index(), name(tmp), s)]

    def counted_loop(self, count: gast.expr, body: list[gast.stmt], index: str,
              like: gast.AST) -> list[gast.stmt]:
        n = self.namer.fresh("n")
        loop = gast.For(target=name(index, gast.Store), iter=call_name("range", name(n)),
                        body=body, orelse=[], type_comment=None)
        return [assign(name(n, gast.Store), count, like), located_at(loop, like)]

    def extend(self, lst: gast.expr, items: gast.expr, like: gast.AST) -> list[gast.stmt]:
        """lst.extend(items) -> for each item: lst.append(item)."""
        seq, i, item = self.namer.fresh("seq"), self.namer.fresh("i"), self.namer.fresh("t")
        body = [assign(name(item, gast.Store), gast.Subscript(value=name(seq), slice=name(i),
                                                              ctx=gast.Load()), like),
                located_at(gast.Expr(value=gast.Call(func=gast.Attribute(value=lst, attr="append",
                                                                  ctx=gast.Load()),
                                              args=[name(item)], keywords=[])), like)]
        return [assign(name(seq, gast.Store), call_name("loop_sequence", items), like)] + \
            self.counted_loop(call_name("len", name(seq)), body, i, like)

    def put(self, x: gast.expr, ind: gast.expr, v: gast.expr,
             like: gast.AST) -> list[gast.stmt]:
        """x.put(ind, v) -> flat view of x (refused at run time if x cannot be viewed flat)."""
        flat = self.namer.fresh("flat")
        return [assign(name(flat, gast.Store), call_name("flat_view", x), like),
                store(name(flat), ind, v, like)]

    def _merged(self, s: gast.Assign) -> list[gast.stmt]:
        """``t = {**a, "k": v, **b}`` (validate lets through only this form, a name bound to
        the display) -> ``t = dict(a); t["k"] = v; t.update(b)``: a new dict, its items set
        in the display's order, as Python merges them (it was refused)."""
        target = s.targets[0]
        assert isinstance(target, gast.Name)
        pairs = list(zip(s.value.keys, s.value.values))
        first: gast.expr = gast.Dict(keys=[], values=[])
        if pairs[0][0] is None:
            first = call_name("dict", pairs.pop(0)[1])
        out = [assign(name(target.id, gast.Store), first, s)]
        for key, value in pairs:
            if key is None:
                update = gast.Call(func=gast.Attribute(value=name(target.id), attr="update",
                                                       ctx=gast.Load()),
                                   args=[value], keywords=[])
                out.extend(self.stmt(located_at(gast.Expr(value=update), s)))
            else:
                out.append(store(name(target.id), key, value, s))
        return out

    def none_for(self, result: str | None, like: gast.AST) -> list[gast.stmt]:
        if result is None:
            return []
        return [assign(name(result, gast.Store), gast.Constant(None, None), like)]

    def _concatenation(self, s: gast.Assign) -> list[gast.stmt] | None:
        """``t = np.r_`` (remembered) and ``t3 = t[items]`` lowered (transforms/index_tricks)."""
        v = s.value
        if isinstance(v, (gast.Attribute, gast.Name)) and isinstance(s.targets[0], gast.Name):
            obj = self.resolve(v) if isinstance(v, gast.Attribute) or \
                v.id not in self.concatenators else self.concatenators[v.id]
            if obj is _SEVERAL:
                self.concatenators[s.targets[0].id] = _SEVERAL  # (c = t1 of t1 = np.r_ ...)
                return None
            if obj is not None and type(obj).__name__ in ("RClass", "CClass"):
                from adgen.transforms.index_tricks import is_concatenator

                if is_concatenator(obj):
                    t = s.targets[0].id
                    # (bound again elsewhere, np.r_ if flag else np.c_: which one a read
                    # finds is known only when it runs; lowered as the last binding seen,
                    # c[z, 2.0 * z] gave np.c_'s value and gradient for np.r_, silently)
                    self.concatenators[t] = obj if self._stores(t) == 1 else _SEVERAL
            return None
        if isinstance(v, gast.Subscript) and isinstance(v.value, (gast.Name, gast.Attribute)):
            obj = self.concatenators.get(v.value.id) if isinstance(v.value, gast.Name) else None
            if obj is _SEVERAL:
                raise UnsupportedError(
                    f"{v.value.id}[...] where {v.value.id} holds np.r_ or np.c_ on one path "
                    "and another value on another (np.r_ if flag else np.c_) is not "
                    "supported: adgen lowers an index trick it knows when compiling",
                    self.parsed.location(s),
                    hint="index np.r_ / np.c_ by name in each branch (r = np.r_[z, w] if "
                         "flag else np.c_[z, w])")
            if obj is None:
                obj = self.resolve(v.value)  # from numpy import r_: r_[z, 0.2]
                if obj is None or type(obj).__name__ not in ("RClass", "CClass"):
                    return None
            from adgen.transforms.index_tricks import is_concatenator, lower_concatenation

            if is_concatenator(obj):
                return lower_concatenation(s, obj, self.namer.fresh, self.parsed.location)
        return None

    def _stores(self, n: str) -> int:
        """How many times the function binds ``n``."""
        if not hasattr(self, "_store_counts"):
            self._store_counts: dict[str, int] = {}
            for x in walk(self.parsed.tree):
                if isinstance(x, gast.Name) and isinstance(x.ctx, gast.Store):
                    self._store_counts[x.id] = self._store_counts.get(x.id, 0) + 1
        return self._store_counts.get(n, 0)

    def _forget_bound_methods(self, s: gast.stmt) -> None:
        """Drops the getattr-made methods (``self.bound_methods``) of an object ``s`` binds
        again (``f(y := z)`` between ``t1 = getattr(y, "fill")`` and ``t1(c)``: the call is
        the old ``y``'s method, left a call)."""
        stored = {n.id for n in walk(s) if isinstance(n, gast.Name) and
                  isinstance(n.ctx, gast.Store)}
        for t, m in list(self.bound_methods.items()):
            if m.value.id in stored:
                del self.bound_methods[t]

    def resolve(self, node: gast.expr) -> object | None:
        """The object a dotted name refers to in the function's namespace (builtins
        included), or None: ``bindings.dotted_object``'s walk, with nothing unwrapped or
        replaced. Unlike ``front.resolve`` (front imports this module), a bound method is the
        method itself, not None: the lowerings here ask what a call calls (so a global
        namedtuple's ``q._replace(b=v)`` is left as a call, a local one's is lowered)."""
        obj = dotted_object(self.parsed, node, builtin_names=True)
        return None if obj is NOT_FOUND else obj


def _may_return_another(func: gast.expr, resolved: object) -> bool:
    """A NumPy function or array method given ``out=`` that may return a new value, not its
    out array (np.dot, np.clip, np.sum of a NumPy scalar; a 0-d out): anything NumPy's but a
    ufunc, which returns its out array. (A function found only when it runs keeps the call.)"""
    if resolved is None:
        return isinstance(func, gast.Attribute) and hasattr(_ndarray, func.attr)  # v.dot(w)
    return not isinstance(resolved, _ufunc) and \
        str(getattr(resolved, "__module__", "") or "").startswith("numpy")


def _of_namedtuple(method: object) -> bool:
    """A method bound to a namedtuple instance (``DEFAULTS._replace`` of a global one)."""
    owner = getattr(method, "__self__", None)
    return isinstance(owner, tuple) and hasattr(type(owner), "_fields")


def call_name(fname: str, *args: gast.expr) -> gast.Call:
    return gast.Call(func=name(fname), args=list(args), keywords=[])


def np_call(fname: str, args: list[gast.expr], kwargs: dict[str, gast.expr]) -> gast.Call:
    return gast.Call(func=gast.Attribute(value=name("np"), attr=fname, ctx=gast.Load()),
                     args=args, keywords=[gast.keyword(arg=k, value=v)
                                          for k, v in kwargs.items()])


_ = located_at

