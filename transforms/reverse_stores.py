"""The pullbacks of reads and writes of elements and slices, attribute stores, augmented
assignments and ``ufunc.at``: a part of the pullback emitter (:class:`reverse_pullback.Pullback`
hands it those statements and lends it its contributions)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import gast
from adgen.transforms.analyses.container_aliases import aliased_writes
from adgen.transforms.analyses.kinds import NUMBER, definitions
from adgen.transforms.analyses.parameter_parts import first_part, unfollowed
from adgen.transforms.desugar import assign, name
from adgen.transforms.getattr_constant import bypasses_setattr
from adgen.transforms.node_index import nodes_of
from adgen.transforms.reverse_ast import (
    BINOPS,
    MISSING,
    Site,
    attr_node,
    basic_index,
    call_node,
    index_value,
    parse_stmts,
    reorder_zero_last,
    src_text,
    user_name_of,
)
from adgen.transforms.reverse_plan_calls import mutating_call
from adgen.transforms.user_calls import is_user_call
from adgen.transforms.walk import clone, walk

from adgen.errors import UnsupportedError, users_line
from adgen.rules import registry

if TYPE_CHECKING:
    from adgen.transforms.reverse_pullback import Pullback


class Stores:
    """Reverses stores into elements, slices and attributes, and augmented assignments."""

    def __init__(self, pb: Pullback) -> None:
        self.pb = pb
        self.plan = pb.plan
        self.rec = pb.rec
        self._aliased_writes: dict[int, Any] | None = None
        self._unfollowed: dict[int, tuple[str, str]] | None = None
        self._ahead_writes: dict[int, gast.For] | None = None

    def rev_getitem(self, s: gast.Assign, v: gast.Subscript, t: str, g: gast.expr,
                    state: set[str]) -> list[gast.stmt]:
        if not self.plan.active(v.value):
            return []
        x = v.value.id
        idx = self.read_index(s, v.slice)
        if self.plan.tracked(t) and not self.plan.tracked(x):
            if x in self.plan.objlike:
                # an array held by a container: its adjoint lives in shadow memory; a number's
                # goes to the container's adjoint here (what made it may not read its shadow:
                # ps = list(xs); ps[0] *= 2.0 lost it, a zero gradient)
                b = self.pb.bar(x)
                out = self.pb.own(x, b, state, s)
                out.append(gast.Expr(value=call_node(
                    "add_item", name(b), index_value(idx),
                    call_node("pop_number", name("sh"), name(t)))))
                return out
            # an element or view of an untracked array that is itself tracked: its shadow
            # holds its adjoint, which goes to the array's: moved there (sh.pop), as
            # pop_number moves a number's. Left in shadow memory, it went to the array a
            # second time where the array is a call's result, whose pullback takes the
            # adjoints its entries keep there (with_shadows): w, u = two(x) with w read by
            # a lambda gave w's gradient twice (grad 2.4 off, silently)
            b = self.pb.bar(x)
            out = self.pb.own(x, b, state, s)
            out.append(gast.Expr(value=call_node("add_item", name(b), index_value(idx),
                                             call_node(attr_node("sh", "pop"), name(t)))))
            return out
        if self.plan.tracked(x):
            if self.plan.tracked(t):
                if t in self.plan.view_of:
                    return []  # a view (kinds known): it shares x's shadow
                # t views x's buffer (basic index) and shares its shadow, or is a copy
                return [gast.Expr(value=call_node("scatter_if_copy", name("sh"), name(x),
                                              index_value(idx), name(t)))]
            b = self.pb.bar(x)
            if b in state and isinstance(self.plan.kinds.get(x), int) and \
                    basic_index(v.slice, self.plan.int_names):
                # an element or a basic slice of an array whose shadow is at hand
                return [gast.AugAssign(target=gast.Subscript(value=name(b), slice=idx,
                                                             ctx=gast.Store()),
                                       op=gast.Add(), value=g)]
            return [gast.Expr(value=call_node("add_item", call_node(attr_node("sh", "of"), name(x)),
                                          index_value(idx), g))]
        b = self.pb.bar(x)
        out: list[gast.stmt] = self.pb.own(x, b, state, s)
        if self.plan.kinds.get(x) in (NUMBER, None, 0) and (
                isinstance(v.slice, gast.Tuple) and not v.slice.elts or
                isinstance(v.slice, gast.Constant) and v.slice.value is Ellipsis):
            # s[()] / s[...] of a NumPy scalar (np.sum(...)[()]), a 0-d array or a value of
            # unknown kind: the value itself (an array's too), whose adjoint may be a number
            # (zeros_like of a scalar, zeros_of_tree of shape ()), not an array to index
            out.append(assign(name(b, gast.Store), call_node("add", name(b), g), s))
            return out
        has_names = any(isinstance(e, gast.Name) for e in walk(v.slice))
        if basic_index(v.slice, self.plan.int_names) and (
                not has_names or isinstance(self.plan.kinds.get(x), int)):
            target = gast.Subscript(value=name(b), slice=idx, ctx=gast.Store())
            if x not in self.plan.numeric:
                out.append(gast.Expr(value=call_node("add_item", name(b), index_value(idx), g)))
            else:
                out.append(gast.AugAssign(target=target, op=gast.Add(), value=g))
        else:
            out.append(gast.Expr(value=call_node("add_item", name(b), index_value(idx), g)))
        return out

    def refuse_aliased_container(self, s: gast.stmt) -> None:
        """Refuses a write to a list, dict or object that another name may also reach
        (analyses.container_aliases): its adjoint follows the name, so a read through the
        other name would get a silently wrong gradient."""
        if self._aliased_writes is None:
            self._aliased_writes = {id(a.stmt): a
                                    for a in aliased_writes(self.plan.fn, self.plan.eff)}
        self.refuse_unfollowed_part(s)
        self.refuse_ahead_write(s)
        a = self._aliased_writes.get(id(s))
        if a is None:
            return
        part = getattr(self.pb, "parts", {}).get(a.target)
        if part is not None and a.other == part.param:
            return  # a parameter's part: its adjoint is taken from the parameter's (own)
        if isinstance(s, gast.Assign) and _only_text(s.value, *definitions(self.plan.fn)):
            # for bn_param in self.bn_params: bn_param["mode"] = mode (CS231n's nets), mode
            # a str: no read of what it stores carries a gradient, through either name, so
            # no adjoint is left to the item's old value that the store should have cleared
            return
        other = self.plan.user_name(a.other)  # a temporary as its expression (self.vals)
        line = self.plan.loc(a.other_stmt).line
        if user_name_of(a.target).endswith("_dot") or user_name_of(a.other).endswith("_dot"):
            # reverse over the jvp code adgen generated (hessian, hvp, jacrev of grad): its
            # names are not the user's (it said 'self_dot.calls = t2_dot changes self_dot')
            store = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                else getattr(s, "target", None)
            if isinstance(store, gast.Subscript):
                # params[k] -= lr * grads[k] in a loop over params: an item of a dict or
                # list, not an attribute (it said "sets an attribute of an object")
                held = user_name_of(self.plan.user_name(a.target)).removesuffix("_dot")
                raise UnsupportedError(
                    "second derivatives (hessian, hvp, jacfwd or jacrev of grad) of code "
                    f"that writes an item of {held} in place (this line) while another name "
                    f"reaches {held} too (a loop over {held} itself, or a second name for it) "
                    "are not supported yet: the forward-mode code adgen differentiates again "
                    "follows a container's tangent by its name, not through aliases",
                    self.plan.loc(s),
                    hint=(f"loop over a copy (for i, v in enumerate(list({held})): ...), or "
                          f"build a new one ({held} = [... for v in {held}])"
                          if self.plan.eff.kinds.get(a.target) == "list" else
                          f"loop over a copy (for k in list({held}): ...), or build a new "
                          f"one ({held} = {{k: ... for k in {held}}})") +
                    "; adgen differentiates both to second order")
            raise UnsupportedError(
                "second derivatives (hessian, hvp, jacfwd or jacrev of grad) of code that sets "
                "an attribute of an object it is given (this line) are not supported yet: the "
                "forward-mode code adgen differentiates again stores the attribute's tangent "
                "into the object's tangent", self.plan.loc(s),
                hint="keep such bookkeeping (a call counter, a cache) out of the function "
                     "whose second derivatives you take: count in a wrapper that calls it")
        generated = self.plan.parsed.file.startswith("<adgen ")
        if generated and not _first_order_copy(self.plan.parsed.file):
            # reverse over the jvp code adgen generated (hessian of a helper's `if acc is
            # None: acc = []; acc.append(v)`): its lines and SSA names are not the user's (it
            # said 'changes acc_2 ... joined at line 16', a line of the generated code)
            joined = self.plan.loc(a.other_stmt)
            file, line = users_line(joined.file, joined.line)
            where = f"line {line}" if file.startswith("<") else \
                f"line {line} of {os.path.basename(file)}"
            target, other = (user_name_of(self.plan.user_name(n)) for n in (a.target, a.other))
            also = f"{other} reaches it too" if other != target else \
                f"{target} may be the one given or a new one"
            raise UnsupportedError(
                f"second derivatives (hessian, hvp, jacfwd or jacrev of grad) through "
                f"{self.plan.construct(s)}, which changes {target} in place where {also} "
                f"(the two joined at {where}): the forward-mode code adgen differentiates "
                "again follows a container's gradient by its name, not yet through aliases",
                self.plan.loc(s), hint=f"pass {target} in every call (no default that makes a "
                                       "new one), or build and return a new one instead of "
                                       "changing it in place")
        where = f"at line {line}"
        if generated:
            # a nested def compiled from the generated forward's copy of it (first order):
            # the line the user wrote, not the copy's (it said "second derivatives")
            joined = self.plan.loc(a.other_stmt)
            file, line = users_line(joined.file, joined.line)
            where = "in the nested def" if file.startswith("<") else f"at line {line}"
        raise UnsupportedError(
            f"{self.plan.construct(s)} changes {self.plan.user_name(a.target)} in place, and "
            f"{other} "
            f"reaches the same list, dict or object (joined {where}): adgen follows a "
            "container's gradient by its name, not yet through aliases",
            self.plan.loc(s), hint=f"have {self.plan.fn.name} change it and return nothing "
                                   "(the caller reads its own name for it), or build and "
                                   "return a new one (return acc + [v])"
            if other.startswith("what ") else "use one name for it, or build a new one "
                                            "instead of changing it in place")

    def refuse_ahead_write(self, s: gast.stmt) -> None:
        """Refuses a store into a list that a loop around it walks, at an item a later step
        of that loop reads (transforms/walked_lists.py): the walked items' adjoints follow
        the loop's sequence, apart from the list's (a silently wrong gradient)."""
        if self._ahead_writes is None:
            from adgen.transforms.walked_lists import ahead_writes

            self._ahead_writes = ahead_writes(self.plan.fn, {
                id(w.stmt): w.target for w in self.plan.eff.writes if w.container})
        loop = self._ahead_writes.get(id(s))
        if loop is None:
            return
        target = next(w.target for w in self.plan.eff.writes if w.stmt is s)
        what = self.plan.user_name(target)
        raise UnsupportedError(
            f"{self.plan.construct(s)} stores into {what} while the for loop at line "
            f"{self.plan.loc(loop).line} walks {what}, at an item other than the one this step "
            "walks: a later step reads the stored value, and adgen's gradient follows the "
            "walked items apart from the list's until the loop ends",
            self.plan.loc(s), hint=f"walk the indices (for i in range(len({what})): w = "
                                   f"{what}[i]), which reads the list itself")

    def refuse_unfollowed_part(self, s: gast.stmt) -> None:
        """Refuses a write with a derivative into a list, dict or object read out of a
        parameter (``acts = self.acts``) that analyses.parameter_parts does not follow: the
        caller reads it again through the parameter, whose adjoint the write never saw."""
        if self._unfollowed is None:
            self._unfollowed = unfollowed(self.plan.fn, self.plan.eff,
                                          {a.id for a in self.plan.fn.args.args})
        found = self._unfollowed.get(id(s))
        if found is None:
            return
        t, p = found
        if not any(isinstance(n, gast.Name) and n.id != t and n.id in self.plan.act.varied
                   for n in walk(s)):
            return
        first = first_part(self.plan.fn, t, p)
        p, part = self.plan.user_name(p), self.plan.user_name(t)
        construct = self.plan.construct(s)
        if first is not None:
            # model.layers[0].W = w: two levels inside the parameter; storing a new list or
            # object one level inside it is followed (model.layers = layers)
            top = p + src_text(first)[len(first.value.id):]
            hint = (f"store a new {top} on {p} instead (for a list: new = list({top}); "
                    f"new[k] = <a new item>; {top} = new; for an object: new = "
                    f"copy.copy({top}); new.a = v; {top} = new), or differentiate with "
                    f"respect to {p} itself: its gradient has {p}'s structure")
        elif ".extend(" in construct:
            # (lower_mutation writes xs.extend(v) as appends in a loop, to a part read once
            # before it: the hint is for the user's line, which the loop's append is not)
            hint = (f"append the items one at a time (for v in items: {part}.append(v)), "
                    f"which adgen follows, or store a new list ({part} = {part} + items)")
        elif self.plan.eff.kinds.get(t) == "list" or ".append(" in construct:
            hint = (f"compute what goes in first (v = ...{part}[-1]...), then change it on "
                    f"a line of its own ({part}.append(v)), or build a new list and store it "
                    f"({part} = {part} + [v])")
        else:
            hint = (f"change it through {p} directly on the line ({p}[k]... = v), or build "
                    f"the new values and return them instead of changing {p}")
        raise UnsupportedError(
            f"{construct} changes {part}, a part of "
            f"{p}, in place, where adgen cannot follow it back to {p} (it follows "
            f"a list, dict or object one level inside {p}, written through the name it was "
            f"read into, with no other use of {p} between and no other name for it read "
            "after this line)", self.plan.loc(s), hint=hint)

    def refuse_varied_into_alias(self, s: gast.stmt, value: gast.expr) -> None:
        """Refuses a value with a derivative stored into a container that another name
        reaches (refuse_aliased_container) where the store got no pullback: the activity
        analysis follows a container by its name, so ``d = {"a": []}; d["a"].append(x * 2)``
        left ``d`` without a derivative, a silently zero gradient."""
        if not any(isinstance(n, gast.Name) and n.id in self.plan.act.varied
                   for n in walk(value)):
            return
        self.refuse_aliased_container(s)
        tgt = s.targets[0] if isinstance(s, gast.Assign) else None
        if not (isinstance(tgt, gast.Subscript) and isinstance(tgt.value, gast.Name)):
            return
        x = tgt.value.id
        # (def_stmt is empty where no kind is known, in a callee compiled without a
        # signature: the refusal must not depend on it, it was a silently zero gradient)
        bindings = [st for st in nodes_of(self.plan.fn, gast.Assign)
                    if isinstance(st.targets[0], gast.Name) and st.targets[0].id == x]
        at = bindings[0] if len(bindings) == 1 else None
        if isinstance(at, gast.Assign) and isinstance(at.value, gast.Subscript) and \
                isinstance(at.value.value, gast.Name) and \
                self.plan.eff.kinds.get(at.value.value.id) in ("list", "dict", "tuple") and \
                type(self.plan.kinds.get(x)) is not int:
            # L = [[0.0, 0.0]]; L[0][1] = x[0] * 3.0: an item of a container, written by
            # index, that is not an array written in place (whose write the container's
            # buffers would show): a list or dict, whose change nothing follows
            raise UnsupportedError(
                f"{self.plan.construct(s)} changes {self.plan.user_name(x)}, an item of "
                f"{self.plan.user_name(at.value.value.id)}, in place: adgen follows a list or "
                "dict held by another container by its name, not yet through the container",
                self.plan.loc(s), hint="build the inner list or dict with its values "
                                       "(L = [[0.0, x[0] * 3.0]]), or keep it in a name of "
                                       "its own")

    def read_index(self, s: gast.stmt, idx: gast.expr) -> gast.expr:
        """An index as the forward used it: each name its capture where a later write may
        change it (an index array, a mask)."""
        node = clone(idx)
        if isinstance(node, gast.Name):
            return self.pb.read_value(s, node)
        for parent in walk(node):
            for field, value in gast.iter_fields(parent):
                if isinstance(value, gast.Name) and isinstance(value.ctx, gast.Load):
                    setattr(parent, field, self.pb.read_value(s, value))
                elif isinstance(value, list):
                    value[:] = [self.pb.read_value(s, e) if isinstance(e, gast.Name) and
                                isinstance(e.ctx, gast.Load) else e for e in value]
        return node

    def rev_store(self, s: gast.Assign, state: set[str]) -> list[gast.stmt]:
        tgt = s.targets[0]
        x = tgt.value.id
        v = s.value
        if not self.plan.act.active(x):
            self.refuse_varied_into_alias(s, v)
            return []
        idx = self.read_index(s, tgt.slice)
        kind = self.plan.eff.kinds.get(x)
        out: list[gast.stmt] = []
        if kind in ("list", "dict"):
            self.refuse_aliased_container(s)
            b = self.pb.bar(x)
            out += self.pb.own(x, b, state, s)
            taken = call_node("take_item", name(b), index_value(idx))
            if self.plan.active(v):
                out += self.pb.contribute(v.id, taken, state, may_be_none=True)
            else:
                out.append(gast.Expr(value=taken))
            return out
        if isinstance(v, gast.Name) and self.plan.tracked(v.id) and \
                self.plan.same_view(v.id, x, idx):
            return []  # x[idx] = x[idx] updated in place: nothing was overwritten
        b = self.pb.bar(x)
        if b not in state:
            out.append(assign(name(b, gast.Store), self.pb.shadow(x, state), s))
            state.add(b)
        region = gast.Subscript(value=name(b), slice=idx, ctx=gast.Load())
        if self.plan.active(v):
            g = self.pb.namer.fresh(f"{v.id}_g") if self.plan.tracked(v.id) else None
            if self.plan.kind_of(gast.Subscript(value=name(x), slice=idx, ctx=gast.Load())) == \
                    NUMBER:
                # an element: a NumPy scalar, a copy already
                val = clone(region)
                if self.plan.kinds.get(v.id) != NUMBER:
                    val = call_node("unbroadcast", val,
                                    call_node(attr_node("np", "shape"), name(v.id)))
            elif basic_index(tgt.slice, self.plan.int_names | self.plan.counters()):
                val = call_node("unbroadcast", call_node(attr_node(region, "copy")),
                            call_node(attr_node("np", "shape"), name(v.id)))
                if self.plan.same_shape_as_part(v.id, x, tgt.slice):
                    val = val.args[0]  # v has the part's shape: nothing was broadcast
            else:
                # an index array may name an element twice: only the write NumPy kept counts
                val = call_node("unbroadcast", call_node("stored_part", name(b), index_value(idx)),
                            call_node(attr_node("np", "shape"), name(v.id)))
            if x not in self.plan.f64_arrays:
                # an integer or bool array truncates what is stored: no gradient (the dtype
                # is checked at run time unless x is a float64 array for this signature)
                val = call_node("stored_into", name(x), val)
            if g:
                out.append(assign(name(g, gast.Store), val, s))
                val = name(g)
            out.append(assign(gast.Subscript(value=name(b), slice=clone(idx),
                                             ctx=gast.Store()), gast.Constant(0.0, None), s))
            out += self.pb.contribute(v.id, val, state)
            if not g:
                # the contribution was computed before the zeroing: reorder
                out = reorder_zero_last(out)
        else:
            out.append(assign(gast.Subscript(value=name(b), slice=idx, ctx=gast.Store()),
                              gast.Constant(0.0, None), s))
        return out

    def rev_setattr(self, s: gast.Assign, state: set[str]) -> list[gast.stmt]:
        tgt = s.targets[0]
        obj = tgt.value.id
        if not self.plan.act.active(obj):
            self.refuse_varied_into_alias(s, s.value)
            return []
        self.refuse_aliased_container(s)
        b = self.pb.bar(obj)
        out: list[gast.stmt] = self.pb.own(obj, b, state, s)
        # the object too: a store through a property's setter is refused there
        taken = call_node("take_attr", name(b), gast.Constant(tgt.attr, None), name(obj))
        if bypasses_setattr(tgt):  # object.__setattr__(o, "name", v): not o's __setattr__
            taken.args.append(gast.Constant(True, None))
        # (a nested def or lambda stored, self.act = lambda z: z * sc: the values it closes
        # over get their adjoints where it is called, dispatch's closure pullback; the
        # function has none, and its shadow was asked for a name the pullback lacks)
        if self.plan.active(s.value) and not (
                isinstance(s.value, gast.Name) and
                s.value.id in {d.name for d in self.plan.parsed.nested_defs}):
            out += self.pb.contribute(s.value.id, taken, state, may_be_none=True)
        else:
            out.append(gast.Expr(value=taken))
        return out

    def rev_augassign(self, s: gast.AugAssign, copy_stmt: gast.Assign,
                      state: set[str]) -> list[gast.stmt]:
        new = s.target.id
        old = copy_stmt.value.id
        v = s.value
        if not self.plan.act.active(new):
            return []
        op = type(s.op)
        if not self.plan.tracked(new):
            # a rebinding (float, tuple): x_1 = x op v with the operator's rule
            rule = registry.lookup(BINOPS[op])
            g = self.pb.g_of(new, state)
            if g is None:
                return []
            bound = rule.bind([name(old), v], {})
            return self.pb.ops.apply_templates(s, rule, bound, new, g, state)
        out: list[gast.stmt] = []
        b = self.pb.bar(new)
        if b not in state:
            out.append(assign(name(b, gast.Store), self.pb.shadow(new, state), s))
            state.add(b)
        # an ndarray (kinds known) is updated in place: new is old
        in_place = isinstance(self.plan.kinds.get(new), int)
        if op in (gast.Add, gast.Sub):
            if self.plan.active(v):
                val = call_node("unbroadcast", call_node(attr_node(name(b), "copy")),
                            call_node(attr_node("np", "shape"), name(v.id)))
                if self.plan.same_shape(v.id, new):
                    val = val.args[0]
                if op is gast.Sub:
                    val = gast.UnaryOp(op=gast.USub(), operand=val)
                out += self.pb.contribute(v.id, val, state)
            if not in_place:
                out += parse_stmts(f"if {new} is not {old}:\n    sh.of({old})[...] += {b}")
            return out
        if op in (gast.Mult, gast.Div) and not self.plan.active(v):
            # the factor as the forward used it: its capture if a later write may change it
            vsrc = src_text(self.pb.read_value(s, v))
            sym = "*" if op is gast.Mult else "/"
            if in_place:
                out += parse_stmts(f"{b} {sym}= {vsrc}")
            else:
                out += parse_stmts(f"if {new} is {old}:\n    {b} {sym}= {vsrc}\nelse:\n"
                                    f"    sh.of({old})[...] += {b} {sym} {vsrc}")
            return out
        # general: the new value's adjoint goes through the operator's rule; for an ndarray
        # updated in place the old value's adjoint restarts from zero in the same shadow
        rule = registry.lookup(BINOPS[op])
        g = self.pb.namer.fresh(f"{user_name_of(new)}_g")
        out.append(assign(name(g, gast.Store), call_node(attr_node(name(b), "copy")), s))
        out += parse_stmts(f"{b}[...] = 0.0" if in_place else
                            f"if {new} is {old}:\n    {b}[...] = 0.0")
        bound = rule.bind([name(old), v], {})
        for d, tpl in zip(rule.diff, rule.templates):
            arg = bound.get(d)
            if not self.plan.any_active(arg):
                continue
            expr = self.pb.ops.instantiate(s, tpl, rule, bound, new, name(g))
            out += self.pb.contribute(arg.id, expr, state)
        return out

    def rev_expr_call(self, s: gast.Expr, state: set[str]) -> list[gast.stmt]:
        call = s.value
        f = call.func
        if isinstance(f, gast.Attribute) and f.attr == "append" and \
                isinstance(f.value, gast.Name) and self.plan.resolve(f) is MISSING:
            lst = f.value.id
            if not self.plan.act.active(lst) or not call.args:
                if call.args:
                    self.refuse_varied_into_alias(s, call.args[0])
                return []
            self.refuse_aliased_container(s)
            b = self.pb.bar(lst)
            out: list[gast.stmt] = self.pb.own(lst, b, state, s)
            item = call_node("pop_adjoint", name(b))
            arg = call.args[0]
            if self.plan.active(arg):
                out += self.pb.contribute(arg.id, item, state, may_be_none=True)
            elif isinstance(arg, (gast.Tuple, gast.List)) and self.plan.any_active(arg):
                # lst.append((a, b)): the item's adjoint goes to the display's names
                ct = self.pb.namer.fresh("item_ct")
                out.append(assign(name(ct, gast.Store), item, s))
                out += self.pb.ops.distribute(arg, name(ct), state)
            else:
                out.append(gast.Expr(value=item))
            return out
        if isinstance(f, gast.Attribute) and f.attr == "at" and call.args and \
                isinstance(call.args[0], gast.Name):
            return self.rev_ufunc_at(s, call, state)
        obj = self.plan.resolve(call.func)
        rule = registry.lookup(obj) if obj is not MISSING else None
        if rule is not None and rule.is_rrule and rule.mutates:
            self.rec.sites.append(Site(s, self.plan.construct(s), "forced-pullback",
                                   "its rule says it writes an argument in place"))
            return self.pb.calls.rev_rrule(s, None, gast.Constant(None, None), state)
        if is_user_call(self.plan, call):
            if mutating_call(self.plan, call):
                return self.pb.calls.rev_user_call(s, call, None, state, forced=True)
            self.rec.sites.append(Site(s, self.plan.construct(s), "elided-pullback",
                                   "its result is discarded and it mutates nothing active"))
            return []
        if obj is not MISSING and rule is None:
            from adgen.transforms.effect_calls import refuse_unknown_effect  # (cold start)

            refuse_unknown_effect(self.plan, s, call, obj, result_used=False)
        return []

    def rev_ufunc_at(self, s: gast.Expr, call: gast.Call, state: set[str]) -> list[gast.stmt]:
        import numpy as np

        ufunc = self.plan.resolve(call.func.value)
        x = call.args[0].id
        if ufunc not in (np.add, np.subtract) or len(call.args) != 3:
            raise UnsupportedError(
                f"{src_text(call.func)}"
                f"{'(a, indices) of a unary ufunc' if len(call.args) == 2 else ''} is not "
                "supported (np.add.at, np.subtract.at, and np.multiply.at, np.maximum.at, "
                "np.minimum.at with an array, indices and values are)", self.plan.loc(s),
                hint="write the update as an indexed assignment of new values (x[i] = "
                     "f(x[i]) for indices without repeats), or compute it into a new array")
        v = call.args[2]
        if not self.plan.active(v) or not self.plan.act.active(x):
            return []
        b = self.pb.bar(x)
        out: list[gast.stmt] = []
        if b not in state:
            out.append(assign(name(b, gast.Store), call_node(attr_node("sh", "of"), name(x)), s))
            state.add(b)
        gathered = call_node("unbroadcast", gast.Subscript(value=name(b),
                                                      slice=self.read_index(s, call.args[1]),
                                                      ctx=gast.Load()),
                         call_node(attr_node("np", "shape"), name(v.id)))
        if ufunc is np.subtract:
            gathered = gast.UnaryOp(op=gast.USub(), operand=gathered)
        # into an integer array the added values are truncated: no gradient (as x[i] = v)
        gathered = call_node("stored_into", name(x), gathered)
        out += self.pb.contribute(v.id, gathered, state)
        return out


def _only_text(value: gast.expr, defs: dict[str, list[Any]], unknown: set[str],
               seen: frozenset[str] = frozenset()) -> bool:
    """``value`` is a str, bytes, bool or None constant, or a name every binding of which
    is one (through SSA's copies at joins: ``mode = "test" if y is None else "train"``)."""
    if isinstance(value, gast.Constant):
        return value.value is None or isinstance(value.value, (str, bytes, bool))
    if isinstance(value, gast.Name) and value.id in defs and value.id not in unknown and \
            value.id not in seen:
        return all(isinstance(v, gast.expr) and _only_text(v, defs, unknown, seen | {value.id})
                   for v in defs[value.id])
    return False


def _first_order_copy(file: str) -> bool:
    """Whether ``file`` is the generated forward a nested def is compiled from at first order
    (``<adgen f save>``, ``<adgen f strict>``), not jvp code differentiated again."""
    import re

    return re.match(r"<adgen .* (save|strict)( #\d+)?>", file) is not None
