"""The pullbacks of calls of user functions (static ``g_forward``/``g_pullback`` or dynamic
``call_forward``/``call_pullback``) and of ``rrule``s: a part of the pullback emitter
(:class:`reverse_pullback.Pullback` hands it those calls and lends it its contributions)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import gast
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.desugar import assign, name
from adgen.transforms.node_index import nodes_of
from adgen.transforms.reverse_ast import (
    HELD_AFTER,
    HELD_AFTER_ANY,
    MISSING,
    Site,
    attr_node,
    call_node,
    callee_name,
    const_node,
    is_callable_object,
    is_python_function,
    src_text,
)
from adgen.transforms.reverse_captures import users_rule
from adgen.transforms.reverse_plan_calls import call_args, info_at
from adgen.transforms.walk import clone

from adgen.rules import registry

if TYPE_CHECKING:
    from adgen.transforms.reverse_pullback import Pullback


class Calls:
    """Reverses calls of user functions and of functions with an rrule."""

    def __init__(self, pb: Pullback) -> None:
        self.pb = pb
        self.plan = pb.plan
        self.rec = pb.rec

    def rev_user_call(self, s: gast.stmt, call: gast.Call, t: str | None, state: set[str],
                      forced: bool) -> list[gast.stmt]:
        saved = self._saved_var(s, call)
        if forced:
            self.rec.sites.append(Site(s, self.plan.construct(s), "forced-pullback",
                                   "it mutates an argument the gradient flows through"))
        g: gast.expr
        if t is not None and self.pb.g_of(t, state) is not None:
            g = self._result_adjoint(t, state, s)
        else:
            # forced: the result got no gradient; the callee still runs its pullback for what
            # it wrote, with a zero for its result
            named = t is not None
            if t is None:
                t = self.pb.namer.fresh(f"{callee_name(call)}_result")
                self.rec.result_of[id(s)] = t
                self.rec.extra_fwd.add(t)
            g = call_node("zeros_like", name(t))
            if named and self.may_hold_arrays(t):
                # o = Buf(x); o.a[0] = 5.0: o's own adjoint is zero, its array's is in shadow
                # memory (with_shadows)
                g = call_node("with_shadows", name("sh"), name(self._entry(s, t)), g)
        args = list(call.args)
        receiver = None
        obj = self.plan.resolve(call.func)
        if obj is MISSING and isinstance(call.func, gast.Attribute):
            receiver = call.func.value
        elif isinstance(call.func, gast.Name) and (obj is MISSING or is_callable_object(obj)):
            # f(x) with f a variable: an object with a __call__ is its method's receiver (its
            # attributes get their gradients); a function is not passed, and gets None
            receiver = call.func
        if obj is not MISSING and is_python_function(obj):
            # cotangents come back per parameter: line the arguments up with them
            import inspect

            names = [p for p in inspect.signature(obj).parameters]
            by_name = {k.arg: k.value for k in call.keywords}
            args = call_args(self.plan, call, obj)  # *xs: the extra arguments as one tuple
            args = args + [by_name.get(p, gast.Constant(None, None))
                           for p in names[len(args):]]
        left_in_shadow = self._left_in_shadow(obj, call, args)
        keyword_values: dict[int, str] = {}
        if obj is MISSING or not is_python_function(obj):
            # resolved when it runs (call_pullback): one cotangent per argument passed,
            # positions then keywords in the order passed (dispatch.pullback_of); the
            # keywords' were dropped, and lay.apply(x=x) gave x no gradient
            args = args + [k.value for k in call.keywords]
            keyword_values = {id(k.value): k.arg for k in call.keywords}
        targets = ([receiver] if receiver is not None else []) + args
        fn_names = {d.name for d in self.plan.parsed.nested_defs}
        cts = [self.pb.namer.fresh("ct") if (isinstance(a, gast.Name) and
                                             self.plan.act.active(a.id) and
                                             a.id not in fn_names) or
               (isinstance(a, (gast.Tuple, gast.List)) and self.plan.any_active(a)) else "_"
               for a in targets]
        pull = self.callee_pullback(call)
        saved_expr: gast.expr = name(saved)
        # captures at the call: its arguments, and the enclosing names a closure reads
        caps = [self.pb.read_value(s, n) for n in sorted({n for sid, n in self.plan.caps
                                                        if sid == id(s)})
                if not self.plan.caps[(id(s), n)].copied]
        for n in sorted(n for sid, n in self.plan.caps
                        if sid == id(s) and self.plan.caps[(sid, n)].copied):
            # handed to the callee as a copy (reverse_captures.copy_passed): its saved values
            # hold that; the forward needs the copy's name
            self.pb.read_value(s, n)
        if obj is not MISSING and is_python_function(obj):
            saved_expr = self._saved_again(s, call, obj) or saved_expr
        if caps:
            # arguments overwritten after the call: the callee reads the values they had
            saved_expr = call_node("remap_saved", saved_expr,
                               gast.List(elts=[c.value for c in caps], ctx=gast.Load()),
                               name("sh"))
        out: list[gast.stmt] = []
        handed: set[str] = set()
        changes = obj is MISSING or not is_python_function(obj) or getattr(
            getattr(info_at(self.plan, obj, call), "compiled", None), "mutates_containers",
            False)
        if changes:
            # a method found when the call runs, or a function that changes the objects it
            # is given, may change its object (self.z = ...), read again after the call
            # through a container holding it (layers[0].z): its adjoint goes to the call from
            # there too
            out += self._held_adjoints(s, targets, cts, state,
                                       saved if obj is MISSING or not is_python_function(obj)
                                       else None)
        slots = self._items_around(s, targets, cts, state, changes, out)
        for a, c in zip(targets, cts):
            if c != "_" and isinstance(a, gast.Name) and id(a) in left_in_shadow and \
                    self.plan.eff.kinds.get(a.id) == "object" and \
                    self.pb.bar(a.id) not in state and a.id not in handed:
                # an object whose arrays the callee writes in place (self.x[:] += v): they
                # keep their adjoints in shadow memory, which the pullback of an earlier
                # call writing them reads (sh.pop took them into the object's adjoint, where
                # that call did not find them: p.step(dt) twice gave 16.2 for 20.1)
                b = self.pb.bar(a.id)
                out.append(assign(name(b, gast.Store), call_node("zeros_like", name(a.id)), s))
                state.add(b)
            if c != "_" and isinstance(a, gast.Name) and a.id not in self.plan.numeric and \
                    not self.plan.tracked(a.id) and self.pb.bar(a.id) in state and \
                    a.id not in handed:
                # a list/dict/object the callee may change: hand over its adjoint
                out.append(gast.Expr(value=call_node(attr_node("sh", "deposit"), name(a.id),
                                                 name(self.pb.bar(a.id)))))
                handed.add(a.id)
        closed = self._closed_objects(call, state, handed) if changes else []
        for n in closed:
            if self.pb.bar(n) not in state:  # (nothing read it after the call)
                out.append(assign(name(self.pb.bar(n), gast.Store),
                                  call_node("zeros_like", name(n)), s))
                state.add(self.pb.bar(n))
            # g(x) of a nested def or lambda of this function calling a method of an object
            # it closes over (lambda x: m.fit_step(x), setting m.h, read after): the object's
            # adjoint after the call is handed to the closure's pullback (dispatch takes its
            # cotangent back into the deposit); it got none, and the gradient through m.h
            # was zero, silently
            out.append(gast.Expr(value=call_node(attr_node("sh", "deposit"), name(n),
                                                 name(self.pb.bar(n)))))
        value = call_node(pull, saved_expr, g, name("sh"))
        if receiver is not None and isinstance(pull, gast.Name) and pull.id == "call_pullback":
            # obj.f(x) is a method (obj is its first argument) or a function held in an
            # attribute (obj is not passed): the receiver's cotangent is None then; a
            # callable object or another object's method held in an attribute (self.fc(x)):
            # the cotangent is that object's, obj's through the attribute
            extra = [clone(call.func.value), gast.Constant(call.func.attr, None)] \
                if isinstance(call.func, gast.Attribute) and \
                isinstance(call.func.value, gast.Name) else []
            if extra and self._rebinds_attribute(call.func.attr, call):
                extra.append(name(self._slots_before(s, call.func.value.id)))
            value = call_node("with_receiver", value, gast.Constant(len(targets), None),
                              *extra)
        out.append(assign(
            gast.Tuple(elts=[name(c, gast.Store) for c in cts], ctx=gast.Store()), value, s))
        for n in closed:
            b = self.pb.bar(n)
            out.append(assign(name(b, gast.Store), call_node(
                attr_node("sh", "merge"), name(n), name(b), gast.Constant(None, None)), s))
            state.discard("owned:" + b)
        for a, c in zip(targets, cts):
            if c == "_":
                continue
            if isinstance(a, (gast.Tuple, gast.List)):
                # the arguments *xs packed, or a list display passed: one cotangent each
                out += self.pb.ops.distribute(a, name(c), state, may_be_none=True)
                continue
            if a.id in handed:
                b = self.pb.bar(a.id)
                out.append(assign(name(b, gast.Store), call_node(attr_node("sh", "merge"),
                                                                 name(a.id),
                                                             name(b), name(c)), s))
                state.discard("owned:" + b)
                handed.discard(a.id)
                out += self.pb.to_shadows(a.id, slots.get(a.id))
            else:
                ct: gast.expr = name(c)
                if id(a) in left_in_shadow:
                    ct = call_node("add", ct, call_node(attr_node("sh", "pop"), name(a.id)))
                if id(a) in keyword_values:
                    # a user rule may give cotangents for the positions only: loud then
                    ct = call_node("keyword_cotangent", ct, const_node(keyword_values[id(a)]),
                                   const_node(src_text(call.func)))
                out += self.pb.contribute(a.id, ct, state, may_be_none=True,
                                          items=slots.get(a.id))
        return out

    def _closed_objects(self, call: gast.Call, state: set[str], handed: set[str]
                        ) -> list[str]:
        """The objects of this function (with an adjoint in the pullback, not handed to the
        call otherwise) that ``call``, of a nested def or lambda of this function by its
        name, reads as variables it closes over: a method it calls on one may change it."""
        if not isinstance(call.func, gast.Name):
            return []
        defs = [d for d in self.plan.parsed.nested_defs if d.name == call.func.id]
        if len(defs) != 1:
            return []
        d = defs[0]
        params = {a.id for a in d.args.args if isinstance(a, gast.Name)}
        read = {n.id for n in nodes_of(d, gast.Name) if isinstance(n.ctx, gast.Load)} - params
        return sorted(n for n in read
                      if n not in handed and self.plan.eff.kinds.get(n) == "object" and
                      not self.plan.tracked(n) and self.plan.act.active(n))

    def _rebinds_attribute(self, attr: str, call: gast.Call) -> bool:
        """Whether the function stores an attribute named ``attr`` (``m.f = other.f``) or
        calls setattr, or hands the object of ``call`` (``m.f(x)``) to another call, as
        receiver or argument, while a method of the user's classes stores such an attribute
        (``m.swap(other)`` doing ``self.f = other.f``): a method called as ``m.f(x)`` before
        such a store is found there when the pullback runs as another object's
        (with_receiver then needs m's slots as the call found them)."""
        handed = False
        receiver = call.func.value.id
        for node in nodes_of(self.plan.fn, gast.Attribute, gast.Call):
            if isinstance(node, gast.Attribute):
                if node.attr == attr and isinstance(node.ctx, gast.Store):
                    return True
            elif isinstance(node.func, gast.Name) and node.func.id == "setattr":
                return True
            elif node is not call and not handed:
                f = node.func
                handed = (isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and
                          f.value.id == receiver) or any(
                    isinstance(a, gast.Name) and a.id == receiver
                    for a in [*node.args, *(k.value for k in node.keywords)])
        if not handed:
            return False
        # (imported where an object's method is called beside another call given the object)
        from adgen.transforms.analyses.rebinding_methods import ANY, rebound_names
        from adgen.transforms.object_classes import param_classes

        classes = param_classes(self.plan.parsed.fn)
        params = [a.id for a in self.plan.fn.args.args]
        if receiver in params and params.index(receiver) not in classes:
            # an object given whose class this compilation does not know (a helper's
            # parameter): any method may rebind it (given_and_swapped(a, b, m, other))
            return True
        stored = rebound_names(self.plan.parsed.namespace, tuple(classes.values()))
        return attr in stored or ANY in stored

    def _slots_before(self, s: gast.stmt, container: str) -> str:
        """The name the forward binds, right before the call ``s``, to ``container``'s slots
        (runtime.items_at)."""
        around = self.rec.items_around.setdefault(id(s), [])
        for n, v, after in around:
            if n == container and after is False:
                return v
        v = self.pb.namer.fresh(f"{container}_before")
        self.rec.extra_fwd.add(v)
        around.append((container, v, False))
        return v

    def _items_around(self, s: gast.stmt, targets: list[gast.expr], cts: list[str],
                      state: set[str], changes: bool, out: list[gast.stmt]
                      ) -> dict[str, gast.expr]:
        """For each list, dict or object the call is given that holds arrays this function
        writes in place (their adjoints are in shadow memory): the forward keeps its slots
        before the call, and after it where the callee may rebind them (``g.scale(3.0)``
        running ``self.u = self.u * c``). Before the callee's pullback, the shadows of the
        arrays it held after the call join its adjoint, which the callee takes over
        (``shadows_to_items``, appended to ``out``); its cotangent, that of the slots it was
        given, goes back to the shadows of the arrays they held then. Returns the name ->
        its slots before the call, for ``items_to_shadows``. (Read from the container when
        the pullback runs, both found its last arrays: a zero or partial gradient, silently,
        until session 21.)"""
        slots: dict[str, gast.expr] = {}
        around = self.rec.items_around.setdefault(id(s), [])
        for a, c in zip(targets, cts):
            if c == "_" or not isinstance(a, gast.Name) or a.id in slots or \
                    a.id in self.plan.numeric or self.plan.tracked(a.id):
                continue
            arrays = self.pb.tracked_items(a.id)
            if not arrays:
                continue
            made = {(n, after): v for n, v, after in around}
            for after in (False, True) if changes else (False,):
                if (a.id, after) not in made:
                    v = self.pb.namer.fresh(f"{a.id}_{'after' if after else 'before'}")
                    self.rec.extra_fwd.add(v)
                    around.append((a.id, v, after))
                    made[(a.id, after)] = v
            slots[a.id] = name(made[(a.id, False)])
            if changes:
                b = self.pb.bar(a.id)
                current = name(b) if b in state else call_node("zeros_like", name(a.id))
                out.append(assign(name(b, gast.Store), call_node(
                    "shadows_to_items", name("sh"), name(made[(a.id, True)]), current,
                    gast.Tuple(elts=[name(e) for e in arrays], ctx=gast.Load())), s))
                state.add(b)
                state.discard("owned:" + b)
        if not around:
            del self.rec.items_around[id(s)]
        return slots

    def _held_adjoints(self, s: gast.stmt, targets: list[gast.expr], cts: list[str],
                       state: set[str], saved: str | None) -> list[gast.stmt]:
        """For each object a call resolved when it runs is given (its receiver, an argument)
        that names bound before the call may hold (``layers`` of ``m = layers[0]`` or of
        ``layers = [m]``, ``self`` of ``for l in self.layers``): the reads of it after the
        call through them are in their adjoints, not in the object's name's, which the
        pullback hands to the call (``sh.deposit``). ``held_adjoint`` moves them to the
        name's adjoint, which the name's binding gives back to the holder. ``saved``: the
        saved values of a call resolved when it runs (None for a function called by name),
        from which ``held_adjoint`` tells a callee that changes no object (it then moves
        nothing: a loop of layers is not walked at each step)."""
        eff = self.plan.eff
        before = self._bound_before(s)
        out: list[gast.stmt] = []
        for a, c in zip(targets, cts):
            if c == "_" or not isinstance(a, gast.Name) or a.id in self.plan.numeric or \
                    self.plan.tracked(a.id) or isinstance(self.plan.kinds.get(a.id), int) or \
                    self.plan.kinds.get(a.id) == NUMBER:
                continue
            mine = eff.buffers.get(a.id, set())
            holders = sorted(
                n for n in before
                if n != a.id and self.pb.bar(n) in state and n not in self.plan.numeric and
                not self.plan.tracked(n) and not isinstance(self.plan.kinds.get(n), int) and
                eff.buffers.get(n, set()) & mine)
            if not holders:
                continue
            b = self.pb.bar(a.id)
            own: gast.expr = name(b) if b in state else gast.Constant(None, None)
            pairs = [e for n in holders for e in (name(self._held_after(s, n, saved)),
                                                   name(self.pb.bar(n)))]
            out.append(assign(gast.Tuple(elts=[name(b, gast.Store)] + [
                name(self.pb.bar(n), gast.Store) for n in holders], ctx=gast.Store()),
                call_node("held_adjoint", name(a.id), own,
                          name(saved) if saved is not None else gast.Constant(None, None),
                          *pairs), s))
            state.add(b)
        return out

    def _held_after(self, s: gast.stmt, holder: str, saved: str | None) -> str:
        """The name the forward binds, right after the call ``s``, to what ``holder`` holds
        then (runtime.held_items): the holder's slots may be rebound by later lines
        (``self.fc = self.other``) before the pullback walks it."""
        around = self.rec.items_around.setdefault(id(s), [])
        kind = HELD_AFTER if saved is not None else HELD_AFTER_ANY
        for n, v, after in around:
            if n == holder and after == kind:
                return v
        v = self.pb.namer.fresh(f"{holder}_held")
        self.rec.extra_fwd.add(v)
        around.append((holder, v, kind))
        return v

    def _bound_before(self, s: gast.stmt) -> set[str]:
        """The names bound before ``s`` in the function's text (its parameters, the targets of
        statements that come before it): their bindings' pullbacks run after ``s``'s, so
        their adjoints hold only what reads after ``s`` gave them. Empty where ``s``'s place
        is not known."""
        at = self.plan.order.get(id(s))
        if at is None:
            return set()
        out = {a.id for a in self.plan.fn.args.args}
        for st in nodes_of(self.plan.fn, gast.stmt):
            k = self.plan.order.get(id(st))
            if k is None or k >= at:
                continue
            if isinstance(st, gast.Assign):
                targets = st.targets
            elif isinstance(st, (gast.For, gast.AugAssign, gast.AnnAssign)):
                targets = [st.target]
            else:
                continue
            out |= {n.id for t in targets for n in gast.walk(t)
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        return out

    def _left_in_shadow(self, obj: object, call: gast.Call, args: list[gast.expr]) -> set[int]:
        """The arguments (ids of their nodes) whose adjoints the callee's pullback may leave in
        shadow memory, where this pullback does not read them: a callee that writes its
        parameters in place hands a parameter it may have written back as ``sh.value(p) if
        top else None``, for the caller to read in shadow memory; a callee that cannot tell
        which it writes (it writes through a name bound to either of two parameters) does so
        for a number too, which a caller that knows it is a number does not track (its
        gradient was 0.0). Those are taken out of shadow memory (``sh.pop``) after the
        call."""
        if obj is MISSING or not is_python_function(obj):
            return set()
        info = info_at(self.plan, obj, call)
        written = getattr(getattr(info, "compiled", None), "written_params", set())
        if not written:
            return set()
        import inspect

        names = list(inspect.signature(obj).parameters)
        return {id(a) for p, a in zip(names, args)
                if (written is True or p in written) and isinstance(a, gast.Name) and
                self.plan.act.active(a.id) and not self.plan.tracked(a.id)}

    def _result_adjoint(self, t: str, state: set[str], s: gast.stmt | None = None
                        ) -> gast.expr:
        """The adjoint of a call's result, as the callee's pullback takes it: a value. A result
        whose adjoint lives in shadow memory may view an argument (``return a[::-1]``, ``return
        a``), whose shadow the callee's cotangent is added to again: its adjoint is taken out
        of shadow memory (``sh.pop``) and comes back through the cotangents."""
        if self.plan.tracked(t):
            return call_node(attr_node("sh", "pop"), name(t))
        g = self.pb.g_of(t, state)
        if g is not None and s is not None and self.may_hold_arrays(t):
            # a list, dict or object: the arrays in it the caller wrote in place keep their
            # adjoints in shadow memory, which the callee's pullback does not read
            g = call_node("with_shadows", name("sh"), name(self._entry(s, t)), g)
        return g

    def _entry(self, s: gast.stmt, t: str) -> str:
        """The name of the call's result's items as the call returned them (the forward
        keeps runtime.entry_items(t) after the call): the object may hold other arrays by the
        time the pullback runs (layer.cache = x in a later method call)."""
        if id(s) not in self.rec.result_entry:
            v = self.pb.namer.fresh(f"{t}_entry")
            self.rec.result_entry[id(s)] = v
            self.rec.extra_fwd.add(v)
        return self.rec.result_entry[id(s)]

    def may_hold_arrays(self, t: str) -> bool:
        """Whether the call's result ``t`` may be a container or object (not a number or
        an array, as far as the plan knows)."""
        kind = self.plan.kinds.get(t)
        return t not in self.plan.numeric and not isinstance(kind, int) and kind != NUMBER

    def _saved_var(self, s: gast.stmt, call: gast.Call) -> str:
        if id(s) not in self.rec.saved_call:
            v = self.pb.namer.fresh(f"{callee_name(call)}_saved")
            self.rec.saved_call[id(s)] = v
            self.rec.extra_fwd.add(v)
        return self.rec.saved_call[id(s)]

    def _saved_again(self, s: gast.stmt, call: gast.Call, obj: object) -> gast.Tuple | None:
        """The callee's saved values built again (callee_saved): the arguments it kept as
        this pullback reads them, and the elements it made, which the forward binds each to a
        name of its own (a loop records them, not the tuple). None where the callee has no
        layout or a parameter it kept was not passed as a name."""
        import inspect
        import types

        # (imported here: a function that calls no user function never needs the module)
        from adgen.transforms.callee_saved import elements, rebuilt, saved_layout

        if not isinstance(obj, types.FunctionType):
            return None  # a bound method: its parameters and the forward's do not line up
        info = info_at(self.plan, obj, call)
        layout = saved_layout(info.compiled) if info is not None else None
        if layout is None:
            return None
        params = list(inspect.signature(obj).parameters)
        args = call_args(self.plan, call, obj)
        by_name = {k.arg: k.value for k in call.keywords}
        value_of: dict[tuple[int, ...], gast.expr] = {}
        parts = self.rec.saved_parts.get(id(s))
        fresh = parts is None
        if fresh:
            parts = []
        for path, e in elements(layout):
            if isinstance(e, int):
                a = args[e] if e < len(args) else by_name.get(params[e]) \
                    if e < len(params) else None
                if not isinstance(a, gast.Name):
                    return None  # a packed tuple, a default: the tuple is kept whole
                cap = self.plan.caps.get((id(s), a.id))
                # an argument overwritten after the call: the object the callee kept, which
                # remap_saved redirects to its capture as it redirected the tuple's; a copy
                # handed to the callee (reverse_captures.copy_passed): that copy
                value_of[path] = self.pb.read_value(s, a) if cap is None or cap.copied \
                    else name(a.id)
            elif fresh:
                parts.append((path, self.pb.namer.fresh(f"{callee_name(call)}_{e}_")))
        if fresh:
            self.rec.saved_parts[id(s)] = parts
            self.rec.extra_fwd.update(v for _, v in parts)
        value_of.update((path, name(v)) for path, v in parts)
        return rebuilt(layout, value_of)

    def callee_pullback(self, call: gast.Call) -> gast.expr:
        obj = self.plan.resolve(call.func)
        if obj is not MISSING and is_python_function(obj):
            info = self.plan.callee_info(obj)
            self.rec.callees[info.name] = info
            return name(f"{info.name}_pullback")
        return name("call_pullback")

    def may_set_owner(self, call: gast.Call) -> bool:
        """``call`` is forward mode's call of a function found when it runs (``call_jvp``)
        given an object with a derivative it was taken from (``self`` of ``self.setup()``):
        a method may set attributes of that object and of its tangent."""
        return _jvp_of_a_call(self.plan.resolve(call.func)) and any(
            isinstance(a, gast.Name) and self.plan.act.active(a.id) and
            a.id not in self.plan.numeric for a in call.args[4:6])

    def rev_rrule(self, s: gast.stmt, t: str | None, g: gast.expr, state: set[str]
                  ) -> list[gast.stmt]:
        call = s.value
        saved = self._saved_var(s, call)
        if t is not None and self.plan.tracked(t) and not (isinstance(g, gast.Constant) and
                                                      g.value is None):
            g = self._result_adjoint(t, state)
        elif t is not None and self.may_hold_arrays(t) and not (
                isinstance(g, gast.Constant) and g.value is None):
            # a dict or list the rule returned, whose arrays the caller wrote in place (d =
            # make(x); d["a"][0] = 5.0): their adjoints are in shadow memory, which the
            # rule's pullback does not read (they were lost: a silently wrong gradient)
            g = call_node("with_shadows", name("sh"), name(self._entry(s, t)), g)
        # one cotangent per argument passed: positions, then keywords (dispatch.pullback_of)
        passed = list(call.args) + [k.value for k in call.keywords]
        # a tuple or list display passed (combine((x, y))) gets its cotangent too, spread
        # over its items (it was dropped: a silently zero gradient)
        cts = [self.pb.namer.fresh("ct") if self.plan.active(a) or
               (isinstance(a, (gast.Tuple, gast.List)) and self.plan.any_active(a)) else "_"
               for a in passed]
        out: list[gast.stmt] = []
        handed: set[str] = set()
        if cts and _jvp_of_a_call(self.plan.resolve(call.func)):
            # call_jvp(t2.e, (), (), {}, t2, t2_dot): its rule gives the function itself no
            # cotangent (the object's goes to t2, the owner); the bound method's adjoint was
            # taken into t2's as an attribute read (ObjectAdjoint of a namedtuple: a raw
            # ValueError; an accumulator a.mean() after a.add(v): refused by shadow memory)
            cts[0] = "_"
            # the method may set attributes of its object and of the object's tangent
            # (self.n = ... in __post_init__, self.total += v): their adjoints after the call
            # are handed to its pullback, which starts from them (sh.deposit; withdrawn by
            # the compiled jvp's pullback, tangent_calls._jvp_rrule), and merged back
            for a, c in zip(passed[4:6], cts[4:6]):
                if c != "_" and isinstance(a, gast.Name) and a.id not in handed and \
                        a.id not in self.plan.numeric and not self.plan.tracked(a.id) and \
                        self.pb.bar(a.id) in state:
                    out.append(gast.Expr(value=call_node(attr_node("sh", "deposit"),
                                                         name(a.id),
                                                         name(self.pb.bar(a.id)))))
                    handed.add(a.id)
        saved_expr: gast.expr = name(saved)
        obj = self.plan.resolve(call.func)
        caps = [self.pb.read_value(s, n) for n in sorted({n for sid, n in self.plan.caps
                                                        if sid == id(s)})] \
            if obj is not MISSING and users_rule(registry.lookup(obj)) else []
        if caps:
            # a user's rule's arguments overwritten after the call: its pullback runs with
            # the values they had put back (dispatch.pullback_of)
            saved_expr = call_node("remap_saved", saved_expr,
                                   gast.List(elts=[c.value for c in caps], ctx=gast.Load()),
                                   name("sh"))
        out.append(assign(
            gast.Tuple(elts=[name(c, gast.Store) for c in cts], ctx=gast.Store()),
            call_node("call_pullback", saved_expr, g, name("sh")), s))
        keywords = {id(k.value): k.arg for k in call.keywords}
        for a, c in zip(passed, cts):
            if c == "_":
                continue
            if isinstance(a, gast.Name) and a.id in handed:
                b = self.pb.bar(a.id)
                out.append(assign(name(b, gast.Store), call_node(
                    attr_node("sh", "merge"), name(a.id), name(b), name(c)), s))
                state.discard("owned:" + b)
                handed.discard(a.id)
                continue
            if isinstance(a, (gast.Tuple, gast.List)):
                out += self.pb.ops.distribute(a, name(c), state, may_be_none=True)
                continue
            ct: gast.expr = name(c)
            if id(a) in keywords:
                ct = call_node("keyword_cotangent", ct, const_node(keywords[id(a)]),
                               const_node(src_text(call.func)))
            out += self.pb.contribute(a.id, ct, state, may_be_none=True)
        return out


def _jvp_of_a_call(obj: object) -> bool:
    """``obj`` is forward mode's call of a function found when it runs (``call_jvp``, its
    tangent-only form ``call_jvp_tangent``), whose rrule gives its function no cotangent."""
    import types

    return isinstance(obj, types.FunctionType) and \
        obj.__module__ in ("adgen.runtime", "adgen.tangent_calls") and \
        obj.__name__ in ("call_jvp", "call_jvp_tangent")
