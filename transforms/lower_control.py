"""Lower control: break, continue and early return become flags.

Input: a validated FunctionDef. Output: a function in which
- ``return`` appears once, as the last statement of the body;
- ``continue`` does not appear; ``break`` appears only as the last statement of a loop body,
  in the form ``if <flag>: break``;
- statements that an earlier break/continue/return may skip are wrapped in ``if not <flag>:``;
- ``with m(a, k=b) as v: body`` (a context manager validate allows) is
  ``context1 = enter_context(m, a, k=b)``; ``v = entered_value(context1)``; ``try: body``
  ``except BaseException: exit_context(context1); raise``; ``exit_context(context1)``
  (adgen.runtime), which runs as the with statement does (these managers never suppress an
  exception), and the body (its early exits flags) always reaches the exit;
- ``try: body finally: cleanup`` (with or without ``except`` arms; validate refuses an exit
  from the cleanup block) is ``try: body except BaseException: cleanup; raise``, then
  ``cleanup``: the cleanup runs when the body raises, as Python runs it, and after the body
  otherwise, also after a ``return``, ``break`` or ``continue`` in it (their flags are set
  before the cleanup runs and tested after it, as Python evaluates the returned value first);
  with ``except`` arms, the ``try``/``except`` statement is the body of that one. Where the
  cleanup reads a name the try statement binds, the handler does not run it (which of the
  block's values it would read is not one name after SSA): the exception goes on with a
  note saying so;
- ``global`` and ``nonlocal`` statements do not appear (validate allows only those of names
  the function reads).
So a loop iteration always runs to the end of its body, where the reverse pass records it.
"""

from __future__ import annotations

import gast
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import clone, walk


class _Loop:
    """The names of the flags the loop's ``break`` and ``continue`` set (None until one is
    lowered)."""

    __slots__ = ("broke", "cont")

    def __init__(self) -> None:
        self.broke: str | None = None
        self.cont: str | None = None


def lower_control(fn: gast.FunctionDef, namer: Namer) -> gast.FunctionDef:
    """Returns ``fn`` with early exits turned into flags (fn is changed in place)."""
    _lower_exits(fn, namer)  # (a finally block stays attached to its try statement here)
    fn.body = _without_finally(fn.body, namer)
    fn.body = _without_with(fn.body, namer)
    _drop_declarations(fn)
    return fn


def _drop_declarations(fn: gast.FunctionDef) -> None:
    """Removes ``global G`` / ``nonlocal s`` (validate let through only those whose names the
    function never assigns: the names are read as without the statement)."""
    for node in walk(fn):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and any(
                    isinstance(s, (gast.Global, gast.Nonlocal)) for s in block):
                kept = [s for s in block if not isinstance(s, (gast.Global, gast.Nonlocal))]
                setattr(node, field, kept or [gast.Pass()])


def _without_with(stmts: list[gast.stmt], namer: Namer) -> list[gast.stmt]:
    """The block with each ``with`` statement (and those nested in it) run as Python runs it:
    enter, the body in a try whose handler exits and re-raises, exit."""
    out: list[gast.stmt] = []
    for s in stmts:
        for fieldname in ("body", "orelse"):
            sub = getattr(s, fieldname, None)
            if isinstance(sub, list) and not isinstance(s, gast.FunctionDef):
                setattr(s, fieldname, _without_with(sub, namer))
        if isinstance(s, gast.Try):
            for h in s.handlers:
                h.body = _without_with(h.body, namer)
        if not isinstance(s, gast.With):
            out.append(s)
            continue
        body = s.body
        for item in reversed(s.items):  # with a, b: body  is  with a: with b: body
            context = namer.fresh("context")
            made = item.context_expr
            enter = assign(name(context, gast.Store), _call(
                "enter_context", [made.func, *made.args], made.keywords, s), s)
            leave = located_at(gast.Expr(value=_call("exit_context", [name(context)], [], s)), s)
            handler = located_at(gast.ExceptHandler(
                type=name("BaseException"), name=None,
                body=[leave, located_at(gast.Raise(exc=None, cause=None), s)]), s)
            guarded = located_at(gast.Try(body=body, handlers=[handler], orelse=[], finalbody=[]), s)
            body = [enter]
            if item.optional_vars is not None:
                body.append(assign(item.optional_vars, _call("entered_value", [name(context)],
                                                             [], s), s))
            body += [guarded, clone(leave)]
        out.extend(body)
    return out


def _without_finally(stmts: list[gast.stmt], namer: Namer) -> list[gast.stmt]:
    """The block with each ``try`` statement's ``finally`` block (and those nested in it)
    written as a handler that runs it and re-raises, then the block again after the
    statement (so the reverse pass meets only ``try``/``except``)."""
    out: list[gast.stmt] = []
    for s in stmts:
        if isinstance(s, gast.FunctionDef):
            out.append(s)
            continue
        for fieldname in ("body", "orelse", "finalbody"):
            sub = getattr(s, fieldname, None)
            if isinstance(sub, list):
                setattr(s, fieldname, _without_finally(sub, namer))
        if isinstance(s, gast.Try):
            for h in s.handlers:
                h.body = _without_finally(h.body, namer)
        if not isinstance(s, gast.Try) or not s.finalbody:
            out.append(s)
            continue
        cleanup = s.finalbody
        s.finalbody = []
        body = [s] if s.handlers else s.body + s.orelse  # (validate: no else without except)
        reraise = located_at(gast.Raise(exc=None, cause=None), s)
        read = {n.id for c in cleanup for n in walk(c) if isinstance(n, gast.Name) and
                isinstance(n.ctx, gast.Load)}
        rebound = sorted(read & _bound_names(body))
        if not rebound:
            handler = located_at(gast.ExceptHandler(
                type=name("BaseException"), name=None,
                body=[clone(c) for c in cleanup] + [reraise]), s)
        else:
            # the exception may leave any of the try block's values of the names the
            # cleanup reads, and the passes after this one bind each value to a name of
            # its own: the exception goes on with a note that the cleanup did not run
            caught = namer.fresh("exc")
            first = cleanup[0]
            note = (f"adgen: the finally block at line {getattr(first, 'lineno', '?')} did not "
                    f"run after this exception: it reads {rebound[0]!r}, which its try block "
                    "rebinds, and adgen cannot tell which value it would see there (move the "
                    "cleanup into a function called in both places, or differentiate code "
                    "that does not raise)")
            add = located_at(gast.Expr(value=gast.Call(
                func=gast.Attribute(value=name(caught), attr="add_note", ctx=gast.Load()),
                args=[gast.Constant(note, None)], keywords=[])), s)
            handler = located_at(gast.ExceptHandler(
                type=name("BaseException"), name=name(caught, gast.Store),
                body=[add, reraise]), s)
        out.append(located_at(gast.Try(body=body, handlers=[handler], orelse=[], finalbody=[]),
                              s))
        out.extend(cleanup)
    return out


def _bound_names(stmts: list[gast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in walk(s)
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del))} | {
        n.name.id for s in stmts for n in walk(s)
        if isinstance(n, gast.ExceptHandler) and isinstance(n.name, gast.Name)}


def _call(fn: str, args: list[gast.expr], keywords: list[gast.keyword], like: gast.AST
          ) -> gast.Call:
    return located_at(gast.Call(func=name(fn), args=args, keywords=keywords), like)


def _lower_exits(fn: gast.FunctionDef, namer: Namer) -> None:
    """Turns break, continue and early return into flags (fn is changed in place)."""
    body = fn.body
    returns = [n for n in walk(fn) if isinstance(n, gast.Return)]
    tail_only = len(returns) == 1 and body and body[-1] is returns[0]
    if not returns:
        body.append(located_at(gast.Return(value=gast.Constant(None, None)), body[-1] if body else fn))
        return
    if tail_only and not _has_loop_exit(fn):
        return
    lowering = _Lowering(namer, None if tail_only else namer.fresh("returned"),
                         None if tail_only else namer.fresh("retval"))
    last_return = body.pop() if tail_only else None
    new_body, _ = lowering.block(body, None)
    if lowering.returned:
        init = [assign(name(lowering.returned, gast.Store), gast.Constant(False, None), fn),
                assign(name(lowering.retval, gast.Store), gast.Constant(None, None), fn)]
        final = located_at(gast.Return(value=name(lowering.retval)), body[-1] if body else fn)
        fn.body = init + new_body + [final]
    else:
        fn.body = new_body + [last_return]


def _has_loop_exit(fn: gast.FunctionDef) -> bool:
    """A break or continue, or a loop's else arm (run after the loop: the lowering puts it
    there), anywhere in ``fn``."""
    return any(isinstance(n, (gast.Break, gast.Continue)) or
               isinstance(n, (gast.For, gast.While)) and n.orelse for n in walk(fn))


def _not_any(flags: list[str], like: gast.AST) -> gast.expr:
    if len(flags) == 1:
        test: gast.expr = name(flags[0])
    else:
        test = gast.BoolOp(op=gast.Or(), values=[name(f) for f in flags])
    return located_at(gast.UnaryOp(op=gast.Not(), operand=test), like)


class _Lowering:
    def __init__(self, namer: Namer, returned: str | None, retval: str | None) -> None:
        self.namer = namer
        self.returned = returned
        self.retval = retval

    def block(self, stmts: list[gast.stmt], loop: _Loop | None) -> tuple[list[gast.stmt],
                                                                          list[str]]:
        """Lowers a block; returns it and the flags that may be set when it ends early."""
        out: list[gast.stmt] = []
        for i, s in enumerate(stmts):
            new, exits = self.stmt(s, loop)
            out.extend(new)
            if exits:
                rest, rest_exits = self.block(stmts[i + 1:], loop)
                if rest:
                    out.append(located_at(gast.If(test=_not_any(exits, s), body=rest, orelse=[]), s))
                return out, sorted(set(exits) | set(rest_exits))
        return out, []

    def stmt(self, s: gast.stmt, loop: _Loop | None) -> tuple[list[gast.stmt], list[str]]:
        if isinstance(s, gast.Return):
            value = s.value if s.value is not None else gast.Constant(None, None)
            return [assign(name(self.retval, gast.Store), value, s),
                    assign(name(self.returned, gast.Store), gast.Constant(True, None), s)], \
                [self.returned]
        if isinstance(s, gast.Break):
            assert loop is not None
            loop.broke = loop.broke or self.namer.fresh("broke")
            return [assign(name(loop.broke, gast.Store), gast.Constant(True, None), s)], \
                [loop.broke]
        if isinstance(s, gast.Continue):
            assert loop is not None
            loop.cont = loop.cont or self.namer.fresh("skip")
            return [assign(name(loop.cont, gast.Store), gast.Constant(True, None), s)], \
                [loop.cont]
        if isinstance(s, gast.If):
            body, e1 = self.block(s.body, loop)
            orelse, e2 = self.block(s.orelse, loop)
            s.body = body or [located_at(gast.Pass(), s)]
            s.orelse = orelse
            return [s], sorted(set(e1) | set(e2))
        if isinstance(s, gast.Try):
            s.body, exits = self.block(s.body, loop)
            for h in s.handlers:
                h.body, e = self.block(h.body, loop)
                exits = sorted(set(exits) | set(e))
            s.orelse, e = self.block(s.orelse, loop)
            # (validate: a finally block leaves no loop around it; its own loops' exits
            # are lowered here, and it runs after the statement whatever flag is set)
            s.finalbody, _ = self.block(s.finalbody, None)
            return [s], sorted(set(exits) | set(e))
        if isinstance(s, (gast.For, gast.While)):
            inner = _Loop()
            body, exits = self.block(s.body, inner)
            pre: list[gast.stmt] = []
            if inner.cont:
                body.insert(0, assign(name(inner.cont, gast.Store),
                                      gast.Constant(False, None), s))
            stop = [f for f in (inner.broke, self.returned if self.returned in exits else None)
                    if f]
            if inner.broke:
                pre.append(assign(name(inner.broke, gast.Store), gast.Constant(False, None), s))
            if stop:
                test = name(stop[0]) if len(stop) == 1 else gast.BoolOp(
                    op=gast.Or(), values=[name(f) for f in stop])
                body.append(located_at(gast.If(test=test, body=[located_at(gast.Break(), s)], orelse=[]), s))
            s.body = body
            outer = [self.returned] if self.returned in exits else []
            after: list[gast.stmt] = []
            if s.orelse:
                # for/while ... else: the else arm runs when the loop ended without break,
                # nor a return from its body (which lowers to a flag and a break too)
                orelse, e = self.block(s.orelse, loop)
                s.orelse = []
                if stop:
                    test = name(stop[0]) if len(stop) == 1 else gast.BoolOp(
                        op=gast.Or(), values=[name(f) for f in stop])
                    after = [located_at(gast.If(test=located_at(gast.UnaryOp(
                        op=gast.Not(), operand=test), s), body=orelse, orelse=[]), s)]
                else:
                    after = orelse
                outer = sorted(set(outer) | set(e))
            return pre + [s] + after, outer
        if isinstance(s, gast.With):
            s.body, exits = self.block(s.body, loop)
            return [s], exits
        if isinstance(s, gast.FunctionDef):
            return [s], []
        return [s], []
