"""A pullback's parameters: whose adjoint starts from the caller's, and what it hands back.

Functions taking the :class:`reverse_pullback.Pullback` (``Pullback.emit`` calls them around
the reversed body); they read the plan and note what the forward keeps in the recording.

- At entry, a list, dict or object parameter the function changes in place (``ws[0] = v``),
  one whose part it writes through a name read from it (``self.acts.append(h)``), one a call
  changes (``self.setup(v)`` setting ``self.w``), and a copy of one (``if cache is None:
  cache = {}``), also one whose part it writes (``lst = cache["h"]; lst.append(v)``; forward
  mode's ``self_dot`` of ``self.cache.append(h)``), start from the adjoint the caller handed
  over (``sh.withdraw``); the forward notes the items such a parameter had on entry
  (``Recording.entry_of``). A write into a copy's part that analyses.parameter_parts does not
  follow is refused at its line.
- At the return, one cotangent per parameter: an array kept in shadow memory hands back its
  shadow (``sh.value``, or popped where it is tracked only because arguments may alias); a
  container, and an object passed on to a function of the user's, gets the adjoints its
  arrays keep in shadow memory collected into its own (``collect``); any other its adjoint,
  or None where none flowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gast
from adgen.transforms.analyses.changed_parameters import (
    held_changed_by_calls,
    parameters_changed_by_calls,
)
from adgen.transforms.analyses.kinds import CONTAINERS
from adgen.transforms.analyses.parameter_copies import parameter_copies
from adgen.transforms.node_index import nodes_of
from adgen.transforms.user_calls import is_user_call

if TYPE_CHECKING:
    from adgen.transforms.analyses.parameter_parts import ParameterPart
    from adgen.transforms.reverse_pullback import Pullback


def taken_over(pb: Pullback, params: list[str], state: set[str]
               ) -> tuple[dict[str, ParameterPart], list[str], list[str]]:
    """The adjoints the pullback starts from the caller's, added to ``state``: (the names
    read from a parameter's part or a built container's, with that part; the container
    parameters taken over; the copies of parameters changed as containers)."""
    plan = pb.plan
    # parameters this function changes in place as containers (lists, dicts, objects):
    # their adjoint starts from what the caller handed over
    cparams = {w.target for w in plan.eff.writes if w.container and
               w.target in params and plan.act.active(w.target)}
    # a part of a parameter written through a name read from it (self.acts.append(h)):
    # the parameter's adjoint is taken over too, and the name's starts from its part
    # (only where the function stores into a list, dict or object: analyses.parameter_parts
    # is imported where one does)
    writes_containers = any(w.container for w in plan.eff.writes)
    parts: dict[str, ParameterPart] = {}
    if writes_containers:
        from adgen.transforms.analyses.parameter_parts import parameter_parts

        parts = {t: part for t, part in
                 parameter_parts(plan.fn, plan.eff, set(params)).items()
                 if plan.act.active(t) and plan.act.active(part.param)}
    taken = sorted(cparams | {part.param for part in parts.values()} | {
        # and one a call changes (self.setup(v) setting self.w; a helper by name setting
        # o.w): handed to that call's pullback (its adjoint was lost on the way: a
        # silent zero gradient two calls down)
        # (not an array a callee writes in place: tracked in shadow memory)
        p for p in parameters_changed_by_calls(
            plan.parsed, plan.fn, set(params), lambda fn: _changes_containers(plan.policy, fn))
        if plan.act.active(p) and not plan.tracked(p) and
        plan.kinds.get(p) is None and p not in plan.numeric} | {
        # and one holding arrays this function writes in place (p = params["w"]; p -= lr *
        # g, an optimizer step): the caller's adjoint of their slots goes to their shadows
        # (exit_items_to_shadows), which the writes' pullbacks read; left in the deposit,
        # what the caller read after the call never reached g (grad in g: 0, silently)
        p for p in params if p not in cparams and plan.act.active(p) and
        not plan.tracked(p) and p not in plan.numeric and
        plan.kinds.get(p) is None and p in _items_read(plan.fn) and pb.tracked_items(p)})
    # and a part of a container built here: its start is in the holder's adjoint
    if writes_containers:
        from adgen.transforms.analyses.parameter_parts import local_parts

        parts |= {t: part for t, part in
                  local_parts(plan.fn, plan.eff, set(params)).items()
                  if plan.act.active(t) and plan.act.active(part.param)}
    for p in taken:
        state |= {pb.bar(p), "owned:" + pb.bar(p)}
        # its slots may be rebound: the gradient goes to the items it was given
        pb.rec.entry_of[p] = pb.namer.fresh(f"{p}_entry")
        pb.rec.extra_fwd.add(pb.rec.entry_of[p])
    # a copy of a parameter changed in place as a container (``if cache is None: cache =
    # {}`` then ``cache["h"] = v ** 2``: SSA's cache_2 is the caller's dict or a new one):
    # its adjoint starts from the caller's when it holds the caller's container (withdraw
    # finds it by the object; a new one starts from zeros), and goes back to the parameter
    # through the copy. It started from zeros, and the caller's reads of the dict after
    # the call lost their gradient (silently)
    copies = parameter_copies(plan.fn, {p for p in params if p not in taken and
                                        plan.act.active(p)})
    joined_set = {w.target for w in plan.eff.writes if w.container and
                  w.target in copies and plan.act.active(w.target)}
    if copies:
        # and one holding a list, dict or object a call changes: the jvp code of
        # ``push(self.cache, h)``, ``t_dot = self_dot_2.cache; push_jvp(t, h, t_dot, h_dot)``
        # (the hessian through such a method was silently wrong until session 29)
        joined_set |= {p for p in held_changed_by_calls(
            plan.parsed, plan.fn, copies, lambda fn: _changes_containers(plan.policy, fn))
            if plan.act.active(p) and not plan.tracked(p) and plan.kinds.get(p) is None and
            p not in plan.numeric}
    if writes_containers and copies:
        # a part of such a copy written through a name read from it: the jvp code of
        # ``self.cache.append(h)``, ``t_dot = self_dot_2.cache; t_dot.append(h_dot)``, with
        # SSA's ``self_dot_2`` the caller's tangent or a zero one. Its adjoint starts from
        # the caller's too, and the write's from its part (the tangent's appended item got
        # a zero adjoint: the hessian through such a method, silently wrong until session 29)
        from adgen.transforms.analyses.parameter_parts import parameter_parts

        held = {t: part for t, part in parameter_parts(plan.fn, plan.eff, copies).items()
                if t not in parts and plan.act.active(t) and plan.act.active(part.param)}
        parts |= held
        joined_set |= {part.param for part in held.values()}
        _refuse_unfollowed(pb, copies)
    joined = sorted(joined_set)
    for t in joined:
        state |= {pb.bar(t), "owned:" + pb.bar(t)}
    return parts, taken, joined


def _refuse_unfollowed(pb: Pullback, copies: set[str]) -> None:
    """Refuses a write with a derivative into a list, dict or object read out of a copy of a
    parameter (``copies``) that analyses.parameter_parts does not follow, as reverse_stores
    refuses one read out of a parameter: the caller reads it again through the parameter,
    whose adjoint the write would never see (a silently wrong gradient)."""
    from adgen.transforms.analyses.parameter_parts import unfollowed

    from adgen.errors import UnsupportedError

    plan = pb.plan
    loose = {k: v for k, v in unfollowed(plan.fn, plan.eff, copies).items()
             if v[1] in copies}
    if not loose:
        return
    for st in nodes_of(plan.fn, gast.Expr, gast.Assign, gast.AugAssign):
        hit = loose.get(id(st))
        if hit is not None and any(isinstance(n, gast.Name) and n.id != hit[0] and
                                   n.id in plan.act.varied for n in nodes_of(st, gast.Name)):
            holder = plan.user_name(hit[1])
            raise UnsupportedError(
                f"{plan.construct(st)} changes {plan.user_name(hit[0])}, a part of {holder}, "
                f"in place, where adgen cannot follow it back to {holder} (it follows a list, "
                "dict or object one level inside, bound just before the write and read "
                "nowhere else)", plan.loc(st),
                hint=f"store a new value on {holder} instead, or return the value and store "
                     "it in the caller")


def _items_read(fn: gast.FunctionDef) -> set[str]:
    """The names the function reads items of: ``d["w"]``, ``d.values()``, ``d.items()``."""
    out = {n.value.id for n in nodes_of(fn, gast.Subscript) if isinstance(n.value, gast.Name)}
    return out | {c.func.value.id for c in nodes_of(fn, gast.Call)
                  if isinstance(c.func, gast.Attribute) and c.func.attr in ("values", "items")
                  and isinstance(c.func.value, gast.Name)}


def popped_first(pb: Pullback, params: list[str]) -> dict[str, str]:
    """The parameters tracked in shadow memory whose adjoints are taken out of it together
    before the return (``sh.pop_each``: numbers and arrays before lists, dicts and objects),
    each with the name it is kept under; none where they are fewer than two or all of a
    known kind. ``sh.pop`` of a list takes its items' adjoints, which are a value's own where
    the list holds it (``lst_dot.append(v_dot)`` beside ``t += v_dot`` in the jvp code of
    ``lst.append(v); self.total += v``): popped first, the list took the value's cotangent,
    which its caller had no name for, and hessian was 0 for 2, silently. Taken out first,
    the value's cotangent is its own (it holds what reached it through the list too)."""
    plan = pb.plan
    written = plan.written_params()
    popped = [p for p in params if plan.tracked(p) and not (written is True or p in written)]
    if len(popped) < 2 or all(plan.kinds.get(p) is not None for p in popped):
        return {}
    return {p: pb.namer.fresh(f"{p}_ct") for p in popped}


def returned(pb: Pullback, params: list[str], state: set[str],
             first: dict[str, str] | None = None) -> list[str]:
    """The pullback's cotangent of each parameter, as the text of an expression (``top``:
    whether this pullback is the one the API called, not a caller's pullback); ``first``:
    :func:`popped_first`'s names."""
    plan = pb.plan
    ret_parts = []
    written = plan.written_params()
    passed = objects_passed_on(pb, params)
    for p in params:
        b = pb.adj.get(p)
        if plan.tracked(p) and (written is True or p in written):
            # written in place: the caller tracks it and finds its adjoint in sh
            ret_parts.append(f"sh.value({p}) if top else None")
        elif first and p in first:
            ret_parts.append(f"sh.value({p}) if top else {first[p]}")
        elif plan.tracked(p):
            # tracked here only because arguments may alias: hand the adjoint back
            ret_parts.append(f"sh.value({p}) if top else sh.pop({p})")
        elif p in plan.objlike or plan.eff.tracked(p):
            # a container argument: arrays inside it may have adjoints in shadow memory
            b = b if b is not None and b in state else None
            entry = f", entry={pb.rec.entry_of[p]}" if p in pb.rec.entry_of else ""
            if plan.eff.kinds.get(p) in CONTAINERS and not (written is True or p in written) \
                    and not any(w.container and w.target == p for w in plan.eff.writes):
                # a list or dict read here, not changed: the adjoints of its arrays this
                # pullback kept in shadow memory (grads[k], which may share the memory of
                # the params[k] it writes) go back in the cotangent; left there, a caller
                # not keeping those arrays in shadow memory lost them, silently (H6)
                ret_parts.append(f"collect(sh, {p}, {b}{entry}) if top else "
                                 f"with_shadows(sh, {p}, {b})")
            else:
                ret_parts.append(f"collect(sh, {p}, {b}{entry}) if top else {b}")
        elif p in passed and plan.act.active(p):
            # an object passed on to a function of the user's (step(u, v, cfg)): the
            # callee keeps the adjoints of the attributes it read in shadow memory, for
            # the caller to collect; they were lost here (cfg.dt's gradient was a silent 0)
            b = b if b is not None and b in state else None
            ret_parts.append(f"collect(sh, {p}, {b}) if top else {b}")
        elif b is not None and b in state:
            ret_parts.append(b)
        else:
            ret_parts.append("None")
    return ret_parts


def objects_passed_on(pb: Pullback, params: list[str]) -> set[str]:
    """The parameters of no known kind (objects: not arrays, numbers, lists or dicts),
    or taken for objects of a known class (``model`` in ``loss(model, u)``:
    object_classes.typed_for), passed as arguments to calls of the user's functions."""
    plan = pb.plan
    unknown = {p for p in params if plan.kinds.get(p) is None and
               p not in plan.numeric and
               plan.eff.kinds.get(p) in (None, "object")}
    out: set[str] = set()
    for call in nodes_of(plan.fn, gast.Call):
        if not (isinstance(call, gast.Call) and is_user_call(plan, call)):
            continue
        for a in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(a, gast.Name) and a.id in unknown:
                out.add(a.id)
    return out


def _changes_containers(policy: str, fn: Any) -> bool:
    """Whether a call of the user function ``fn`` may change an object, list or dict it
    is given (pipeline.changes_containers, under this compilation's policy)."""
    from adgen.transforms.pipeline import changes_containers  # (pipeline imports this)

    return changes_containers(policy, fn)
