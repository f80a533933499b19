"""SSA renaming for structured code: every binding a pullback may read has one static definition.

Input: a function in A-normal form. Output: the same function where
- a name assigned a second time gets a fresh version (``h``, ``h_1``, ``h_2``...);
- at the end of each arm of an if, the versions that differ are copied into one merge version;
- a name assigned inside a loop and defined before it is carried in a *header* version:
  ``h_1 = h`` before the loop, ``h_1 = h_3`` at the end of the body (before a trailing
  ``if flag: break``), and reads in the body see ``h_1``;
- ``x op= v`` on a name becomes ``x_1 = x`` followed by ``x_1 op= v`` (an ndarray is updated in
  place and both names see it; a float rebinds ``x_1`` only).
So within one iteration of any loop, each name is bound at most once before the iteration's
end, and a value recorded at the end of the iteration is the value every read in it saw.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable

import gast
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError


def to_ssa(fn: gast.FunctionDef, namer: Namer) -> set[str]:
    """Renames ``fn`` into SSA form (changed in place).

    Returns:
        The loop header versions: names assigned by a back-edge copy at the end of a body.
    """
    r = _Ssa(namer)
    from collections import Counter

    r.loads = Counter(n.id for n in walk(fn) if isinstance(n, gast.Name) and
                      isinstance(n.ctx, gast.Load))
    env = {a.id: a.id for a in fn.args.args}
    r.defined |= set(env)
    fn.body, _ = r.block(fn.body, env)
    # names bound in one arm only that a loop header copies: bind them to None first, as a
    # plain call would leave them unbound (and never read them) when the arm did not run
    fn.body = [assign(name(n, gast.Store), gast.Constant(None, None), fn)
               for n in sorted(r.preinit)] + fn.body
    return r.headers


def assigned_names(stmts: list[gast.stmt]) -> set[str]:
    """Names a block binds (targets of assignments and for loops, at any depth)."""
    return _bound_by(n for s in stmts for n in walk(s))


def _bound_by(nodes: Iterable[gast.AST]) -> set[str]:
    """Names the ``nodes`` bind (:func:`assigned_names` of the statements they are)."""
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            out.add(n.id)
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            out.add(n.target.id)
        elif isinstance(n, gast.ExceptHandler) and n.name is not None:
            out.add(n.name.id if isinstance(n.name, gast.Name) else n.name)
    return out


def _read_before_bound(h: gast.ExceptHandler) -> set[str]:
    """The names the handler reads before it binds them itself (``r = prev; r_dot =
    zero_tangent(r)``, forward mode's copy on the handler's path, reads its own ``r``):
    statement by statement, a name a top-level assignment of the handler bound is its own."""
    own: set[str] = set()
    out: set[str] = set()
    if h.type is not None:
        out |= {n.id for n in walk(h.type) if isinstance(n, gast.Name)}
    for st in h.body:
        out |= {n.id for n in walk(st) if isinstance(n, gast.Name) and
                isinstance(n.ctx, gast.Load)} - own
        if isinstance(st, gast.Assign):
            own |= {t.id for t in st.targets if isinstance(t, gast.Name)}
    return out


class _Ssa:
    loads: Counter[str]

    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self.defined: set[str] = set()
        self.headers: set[str] = set()
        self.maybe_unbound: set[str] = set()  # versions bound on some paths only
        self.preinit: set[str] = set()

    def version(self, base: str) -> str:
        if base not in self.defined:
            self.defined.add(base)
            return base
        return self.namer.fresh(base.split("__")[0] + "_")

    def load(self, node: gast.AST, env: dict[str, str]) -> gast.AST:
        for n in walk(node):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in env:
                n.id = env[n.id]
        return node

    def block(self, stmts: list[gast.stmt], env: dict[str, str]) -> tuple[list[gast.stmt],
                                                                           dict[str, str]]:
        out: list[gast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s, env))
        return out, env

    def stmt(self, s: gast.stmt, env: dict[str, str]) -> list[gast.stmt]:
        if isinstance(s, gast.Assign):
            self.load(s.value, env)
            target = s.targets[0]
            if isinstance(target, gast.Name):
                base = target.id
                target.id = self.version(base)
                env[base] = target.id
            else:
                # x[i] = v / x.a = v: a write through the current version, no new binding
                self.load(target, env)
                if isinstance(target.value, gast.Name) and target.value.id in env:
                    target.value.id = env[target.value.id]
            return [s]
        if isinstance(s, gast.AugAssign):
            self.load(s.value, env)
            base = s.target.id
            old = env.get(base, base)
            new = self.version(base)
            env[base] = new
            s.target = name(new, gast.Store)
            return [assign(name(new, gast.Store), name(old), s), s]
        if isinstance(s, (gast.Expr, gast.Return, gast.Raise, gast.Assert)):
            self.load(s, env)
            return [s]
        if isinstance(s, gast.If):
            self.load(s.test, env)
            e1, e2 = dict(env), dict(env)
            s.body, e1 = self.block(s.body, e1)
            s.orelse, e2 = self.block(s.orelse, e2)
            self.merge(env, [(s.body, e1), (s.orelse, e2)], s)
            if not s.body:
                s.body = [located_at(gast.Pass(), s)]
            return [s]
        if isinstance(s, gast.Try):
            before = dict(env)
            body_assigned = assigned_names(s.body)
            last = _bound_last(s.body)
            if last is not None and last not in assigned_names(s.body[:-1]):
                # try: x /= y (ieee_tangents' try around a tangent's in-place division, in a
                # helper's jvp code the hessian differentiates; t = ...; x /= t in the user's):
                # x is bound by the body's last statement only, which binds it after all else
                # it runs; raising, the body has not rebound x, so the except arm reads the x
                # from before the try
                body_assigned = body_assigned - {last}
            for h in s.handlers:
                clash = sorted(_read_before_bound(h) & body_assigned)
                if clash:
                    # (named by lines: this pass does not know the file; the error is placed
                    # at the def)
                    v = clash[0]
                    read = min(n.lineno for n in walk(h) if isinstance(n, gast.Name) and
                               n.id == v and isinstance(n.ctx, gast.Load))
                    bound = min(n.lineno for st in s.body for n in walk(st)
                                if isinstance(n, gast.Name) and n.id == v and
                                isinstance(n.ctx, gast.Store))
                    raise UnsupportedError(
                        f"the except arm reads {v!r} (line {read}), which the try body "
                        f"rebinds (line {bound}): adgen cannot tell which value of {v!r} the "
                        "except arm sees",
                        hint=f"compute the new value into a name of its own in the try body "
                             f"and in the except arm (t = ...), and rebind {v!r} from it "
                             "after the try statement")
            arms = []
            eb = dict(env)
            s.body, eb = self.block(s.body, eb)
            eo = eb
            s.orelse, eo = self.block(s.orelse, eo)
            arms.append((s.orelse if s.orelse else s.body, eo))
            for h in s.handlers:
                eh = dict(before)
                if h.type is not None:
                    self.load(h.type, eh)
                h.body, eh = self.block(h.body, eh)
                arms.append((h.body, eh))
            self.merge(env, arms, s)
            return [s]
        if isinstance(s, (gast.For, gast.While)):
            return self.loop(s, env)
        return [s]

    def merge(self, env: dict[str, str], arms: list[tuple[list[gast.stmt], dict[str, str]]],
              like: gast.AST) -> None:
        names = set()
        for _, e in arms:
            names |= {k for k, v in e.items() if env.get(k) != v}
        for base in sorted(names):
            defining = [(body, e) for body, e in arms if base in e and e[base] != env.get(base)]
            if base not in env and len(defining) == 1:
                # bound in one arm only (a temporary, or a name used only after that arm)
                env[base] = defining[0][1][base]
                self.maybe_unbound.add(env[base])
                continue
            merged = self.version(base)
            for body, e in arms:
                if base in e:
                    if e[base] in self.maybe_unbound:
                        # bound in a nested arm only: the copy reads it on every path
                        # through this arm (hits_2 = hits_1 after an inner if that binds
                        # hits_1 in one arm was an UnboundLocalError in the forward)
                        self.preinit.add(e[base])
                    _insert_before_break(body, assign(name(merged, gast.Store),
                                                      name(e[base]), like))
            env[base] = merged

    def loop(self, s: gast.For | gast.While, env: dict[str, str]) -> list[gast.stmt]:
        pre: list[gast.stmt] = []
        if isinstance(s, gast.For):
            self.load(s.iter, env)
        # the body's nodes, walked once for the names it binds and the loop's reads
        body = [n for st in s.body for n in walk(st)]
        bound = _bound_by(body) | ({s.target.id} if isinstance(s, gast.For) else set())
        rest = [s.target, s.iter] if isinstance(s, gast.For) else [s.test]
        inside = Counter(n.id for n in body + [n for x in rest + s.orelse for n in walk(x)]
                         if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load))
        # a name the body binds is carried when it was bound before the loop, when it is
        # read after the loop (its last iteration's value escapes: give it a header too), or
        # when the body may read it before binding it in an iteration (bound in a nested
        # loop that may run no iteration, or in one arm of an if: the previous iteration's
        # value is read)
        exposed = _exposed_reads(s.body, bound, {s.target.id} if isinstance(s, gast.For)
                                 else set())
        carried = sorted(b for b in bound if b in env or self.loads[b] > inside[b] or
                         b in exposed)
        headers: dict[str, str] = {}
        for base in carried:
            h = self.version(base)
            init = name(env[base]) if base in env else gast.Constant(None, None)
            if base in env and env[base] in self.maybe_unbound:
                self.preinit.add(env[base])
            pre.append(assign(name(h, gast.Store), init, s))
            headers[base] = h
            self.headers.add(h)
            env[base] = h
        if isinstance(s, gast.While):
            self.load(s.test, env)
        inner = dict(env)
        if isinstance(s, gast.For):
            base = s.target.id
            s.target.id = self.version(base)
            inner[base] = s.target.id
        s.body, inner = self.block(s.body, inner)
        for base, h in headers.items():
            if inner.get(base) != h:
                _insert_before_break(s.body, assign(name(h, gast.Store), name(inner[base]), s))
        if isinstance(s, gast.While):
            # The test is evaluated again after the back edge: it must read the header names.
            pass
        for base, v in inner.items():
            if base not in env:
                env[base] = v
        for base, h in headers.items():
            env[base] = h
        return pre + [s]


def _exposed_reads(body: list[gast.stmt], names: set[str], bound: set[str]) -> set[str]:
    """The ``names`` that ``body`` may read before it binds them, when it runs with ``bound``
    bound (definite assignment: a loop's body may run no iteration, an if binds what both
    arms bind, a try's handlers may run after any part of its body)."""
    out: set[str] = set()

    def reads(node: gast.AST, done: set[str]) -> None:
        for n in walk(node):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and \
                    n.id in names and n.id not in done:
                out.add(n.id)

    def block(stmts: list[gast.stmt], done: set[str]) -> set[str]:
        done = set(done)
        for st in stmts:
            if isinstance(st, gast.Assign):
                reads(st.value, done)
                for target in st.targets:
                    if isinstance(target, gast.Name):
                        done.add(target.id)
                    else:
                        reads(target, done)
            elif isinstance(st, gast.AugAssign):
                reads(st.value, done)
                reads(gast.Name(st.target.id, gast.Load(), None, None)
                      if isinstance(st.target, gast.Name) else st.target, done)
                if isinstance(st.target, gast.Name):
                    done.add(st.target.id)
            elif isinstance(st, gast.If):
                reads(st.test, done)
                done |= block(st.body, done) & block(st.orelse, done)
            elif isinstance(st, gast.For):
                reads(st.iter, done)
                block(st.body, done | ({st.target.id} if isinstance(st.target, gast.Name)
                                       else set()))
                block(st.orelse, done)
            elif isinstance(st, gast.While):
                reads(st.test, done)
                block(st.body, done)
                block(st.orelse, done)
            elif isinstance(st, gast.Try):
                block(st.body, done)
                for h in st.handlers:
                    block(h.body, done)
                block(st.orelse, done)
                block(st.finalbody, done)
            else:
                reads(st, done)
        return done

    block(body, bound)
    return out


def _insert_before_break(body: list[gast.stmt], stmt: gast.stmt) -> None:
    """Appends ``stmt`` to a block, before a trailing ``if flag: break``."""
    if body and is_break_if(body[-1]):
        body.insert(len(body) - 1, stmt)
    else:
        body.append(stmt)


def is_break_if(s: gast.stmt) -> bool:
    """True for the ``if flag: break`` that lower_control puts at the end of a loop body."""
    return isinstance(s, gast.If) and len(s.body) == 1 and isinstance(s.body[0], gast.Break) \
        and not s.orelse


_ = copy


def _bound_last(body: list[gast.stmt]) -> str | None:
    """The name the last statement of ``body`` binds, where it is ``x = v`` or ``x op= v``."""
    st = body[-1] if body else None
    if isinstance(st, gast.AugAssign) and isinstance(st.target, gast.Name):
        return st.target.id
    if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
            isinstance(st.targets[0], gast.Name):
        return st.targets[0].id
    return None
