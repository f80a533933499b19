"""Building blocks of the reverse pass: the records its phases hand each other (sites, captures,
the recording, the result), AST constructors and small predicates over SSA statements, shared
by its modules (reverse_plan, reverse_captures, reverse_pullback, reverse_stores,
reverse_calls, reverse_forward)."""

from __future__ import annotations

import operator
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.effects import Effects
from adgen.transforms.desugar import name
from adgen.transforms.gast_ast import parse, to_ast
from adgen.transforms.node_index import loaded_names, nodes_of
from adgen.transforms.ssa import is_break_if
from adgen.transforms.walk import clone

from adgen.errors import UnsupportedError
from adgen.rules import registry

BINOPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
          gast.Div: operator.truediv, gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod,
          gast.Pow: operator.pow, gast.MatMult: operator.matmul}
UNARYOPS = {gast.USub: operator.neg, gast.UAdd: operator.pos, gast.Invert: operator.invert}
# Operators whose result carries no derivative on any operands Python or NumPy takes (bool
# masks, ints, sets: (x > 0) & ~c, rest ^ m), read through NumPy's rule of the same name
# (no_gradient): a helper given a list of masks was refused ('the operator & on values with
# a gradient'). | stays refused: d | e merges dicts of arrays.
MASK_BINOPS = {gast.BitAnd: np.bitwise_and, gast.BitXor: np.bitwise_xor}


# Calls._held_after's entries of Record.items_around (what a holder holds after a call)
HELD_AFTER = "held"
HELD_AFTER_ANY = "held, any call"

class Site:
    """A mutation site and what was decided there (becomes an adgen.MutationSite).

    ``captured_at``: the lines of the captures it overwrites; ``copied``: the captures the
    write overwrites that are copied where the pullback reads them (reverse_captures), for
    emitted_sites to say which copies the emitters kept."""

    # The records here are plain classes, not dataclasses: @dataclass execs generated code
    # for each class when the module is imported, 0.2-0.9 ms a class on the first gradient's
    # path (docs/performance.md, Update 16). They compare by identity.
    __slots__ = ("stmt", "construct", "decision", "reason", "captured_at", "copied")

    def __init__(self, stmt: gast.stmt, construct: str, decision: str, reason: str,
                 captured_at: tuple[int, ...] = (), copied: tuple[Any, ...] = ()) -> None:
        self.stmt = stmt
        self.construct = construct
        self.decision = decision
        self.reason = reason
        self.captured_at = captured_at
        self.copied = copied


class Capture:
    """A value the pullback reads that a later write may change: ``name`` as it is before
    ``stmt`` (after it, when ``after``), kept by a guard or a copy."""

    __slots__ = ("stmt", "name", "after", "loop", "base", "index", "write", "copied",
                 "copy_of")

    def __init__(self, stmt: gast.stmt, name: str, after: bool,
                 loop: gast.stmt | None = None, base: str = "",
                 index: gast.expr | None = None, write: gast.stmt | None = None,
                 copied: bool = False,
                 copy_of: tuple[tuple[int, str], list[gast.expr]] | None = None) -> None:
        self.stmt = stmt
        self.name = name
        self.after = after  # the capture of an output is taken after its statement
        # rows ahead of a loop counter (``x[c + k:]``), not written yet when read: the value
        # is the same rows of one copy of ``base`` taken before ``loop`` (no guard at the
        # writes)
        self.loop = loop
        self.base = base
        self.index = index
        self.write = write  # the loop's first write it serves (explain's bytes)
        # a part of an array that a later write of the same array overwrites: copied where
        # it is read (``write``: the first such write), no guard at the writes
        self.copied = copied
        # a copied part that is a basic index of an earlier copied capture's part, with no
        # write between (shared_copies): (that capture's key, the indices) — a view of its
        # copy
        self.copy_of = copy_of


class Recording:
    """What the pullback emitter needs the forward to keep, by statement (``id(stmt)``): the
    forward emitter reads it. Also the sites the emitter decides (forced and elided callee
    pullbacks) after the plan's. Every field but ``sites`` starts empty."""

    __slots__ = ("sites", "extra_fwd", "tape_of", "records", "columns", "array_columns",
                 "saved_call", "saved_parts", "result_of", "arm_of", "try_ran", "cap_var",
                 "read_final", "callees", "shape_of", "lengths", "shape_after", "entry_of",
                 "result_entry", "items_around", "saved_names")

    def __init__(self, sites: list[Site]) -> None:
        self.sites = sites
        # names the forward binds for the pullback: tapes, arms, saved results, capture
        # variables
        self.extra_fwd: set[str] = set()
        self.tape_of: dict[int, str] = {}  # loop -> its tape
        self.records: dict[int, list[str]] = {}  # loop -> names per iteration
        # loop -> its typed tape: (the range's arguments, the column per recorded number)
        self.columns: dict[int, tuple[list[gast.expr], list[tuple[str, str]]]] = {}
        # recorded arrays a typed tape keeps in a two-dimensional column (a row per
        # iteration): name -> the rank of its rows (Plan.counted's ``arrays``)
        self.array_columns: dict[str, int] = {}
        self.saved_call: dict[int, str] = {}  # call -> its callee's saved values
        # a call whose callee's saved values the pullback builds again (callee_saved) -> the
        # names the forward binds to the elements the callee made, with their paths in the
        # tuple
        self.saved_parts: dict[int, list[tuple[tuple[int, ...], str]]] = {}
        self.result_of: dict[int, str] = {}  # call -> a name for its result
        self.arm_of: dict[int, str] = {}  # try -> the arm that ran
        # try -> (the flag set once a statement with a lasting effect ran, those statements)
        self.try_ran: dict[int, tuple[str, set[int]]] = {}
        self.cap_var: dict[tuple[int, str], str] = {}  # capture -> variable
        # copied captures whose copy the forward no longer takes: the pullback reads the part
        # again from its array's final contents (invariant_finals)
        self.read_final: set[tuple[int, str]] = set()
        self.callees: dict[str, Any] = {}
        # a name the pullback reads only for its shape -> the name it stands for and what the
        # forward keeps of it: "shape" (np.shape) or "tree" (shape_tree) (shape_saves)
        self.shape_of: dict[str, tuple[str, str]] = {}
        # a name a loop records for the length of a vector whose shape the pullback reads,
        # the shape bound again from it (shape_saves.lengths_not_shapes) -> that vector
        self.lengths: dict[str, str] = {}
        # a shape the same in every iteration of the loops around its array, bound by the
        # forward right after the array (``t_shape = t.shape``) and kept outside those loops
        # (analyses.loop_shapes) -> that array
        self.shape_after: dict[str, str] = {}
        # a container parameter whose slots the function rebinds -> its items as received
        self.entry_of: dict[str, str] = {}
        # a call whose result (a list, dict or object) the pullback hands back with the
        # adjoints its arrays keep in shadow memory -> its items as the call returned them
        self.result_entry: dict[int, str] = {}
        # a call given a container whose arrays the pullback keeps in shadow memory -> the
        # names the forward binds to its slots (runtime.items_at) before the call (False) and
        # after it (True): (container, name, after); and, for a name held_adjoint walks
        # (Calls._held_after), to what it holds after the call (HELD_AFTER: unless the call
        # changes no object, HELD_AFTER_ANY: always)
        self.items_around: dict[int, list[tuple[str, str, bool | str]]] = {}
        self.saved_names: list[str] = []  # what the forward hands over


class Result:
    """What the reverse pass made of a function: its forward and pullback, the decisions at
    its mutation sites, and what callers need to know of its effects."""

    __slots__ = ("forward", "pullback", "sites", "callees", "mutates_params", "reads_params",
                 "reads_uncaptured", "mutates_containers", "written_params", "lean",
                 "reads_result")

    def __init__(self, forward: gast.FunctionDef, pullback: gast.FunctionDef,
                 sites: list[Site], callees: dict[str, Any] | None = None,
                 mutates_params: bool = False, reads_params: set[str] | bool = True,
                 mutates_containers: bool = False, written_params: set[str] | bool = True,
                 lean: Any = None, reads_uncaptured: set[str] | bool = True,
                 reads_result: bool = True) -> None:
        self.forward = forward
        self.pullback = pullback
        self.sites = sites
        self.callees = {} if callees is None else callees
        self.mutates_params = mutates_params
        self.reads_params = reads_params
        self.reads_uncaptured = reads_uncaptured  # (Plan.reads_uncaptured)
        self.reads_result = reads_result  # (Plan.reads_result)
        self.mutates_containers = mutates_containers
        self.written_params = written_params
        # lean_pullback.LeanFacts: what the pullback's names are known to hold
        self.lean = lean


def src_text(node: gast.AST) -> str:
    import ast

    try:
        return ast.unparse(to_ast(clone(node))).strip()
    except Exception:  # noqa: BLE001 - only for messages
        return type(node).__name__


def read_before_bound(stmts: list[gast.stmt],
                      loops: dict[int, tuple[gast.For, frozenset[str]]] | None = None
                      ) -> set[str]:
    """The names a block of generated code reads before binding them. A loop's target, and
    what a loop or a branch binds, count as bound inside it only (what it binds may not run).
    With names already bound before the block, the block's free names are this set less
    those (which is how the pullback emitter reads a loop's body once for several sets).

    ``loops``: what each loop of the block reads before binding it, kept across calls by
    id (reverse_rows reads each reversed body again at every enclosing level); the caller
    empties it when it rewrites a statement in one."""
    free: set[str] = set()
    bound: set[str] = set()
    for st in stmts:
        if isinstance(st, gast.For):
            free |= _loop_reads(st, loops) - bound
        elif isinstance(st, gast.If):
            free |= loaded_names(st.test) - bound
            free |= (read_before_bound(st.body, loops) |
                     read_before_bound(st.orelse, loops)) - bound
        else:
            names = nodes_of(st, gast.Name)  # one walk for the loads and the stores
            free |= {n.id for n in names if isinstance(n.ctx, gast.Load)} - bound
            bound |= {n.id for n in names if isinstance(n.ctx, gast.Store)}
    return free


def _loop_reads(loop: gast.For, loops: dict[int, tuple[gast.For, frozenset[str]]] | None
                ) -> frozenset[str]:
    """What the loop ``loop`` reads before binding it (its header, and its body less its
    target), from ``loops`` if it holds it."""
    if loops is not None:
        known = loops.get(id(loop))
        if known is not None and known[0] is loop:
            return known[1]
    target = {n.id for n in nodes_of(loop.target, gast.Name)}
    found = frozenset(loaded_names(loop.iter) | (read_before_bound(loop.body, loops) - target))
    if loops is not None:
        loops[id(loop)] = (loop, found)
    return found


def stored_names(nodes: list[gast.stmt]) -> set[str]:
    out: set[str] = set()
    for s in nodes:
        for n in nodes_of(s, gast.Name):
            if isinstance(n.ctx, gast.Store):
                out.add(n.id)
    return out


def parse_stmts(src: str) -> list[gast.stmt]:
    return parse(src).body


def parse_expr(src: str) -> gast.expr:
    return parse(src).body[0].value


def attr_node(obj: str | gast.expr, attr: str) -> gast.Attribute:
    value = name(obj) if isinstance(obj, str) else obj
    return gast.Attribute(value=value, attr=attr, ctx=gast.Load())


def call_node(func: gast.expr | str, *args: gast.expr) -> gast.Call:
    f = name(func) if isinstance(func, str) else func
    return gast.Call(func=f, args=list(args), keywords=[])


def comment_node(text: str) -> gast.stmt:
    """A comment line in generated code (an Expr holding a marker the emitter turns into #)."""
    return gast.Expr(value=gast.Constant(value=f"\x00# {text}", kind=None))


def is_comment(st: gast.stmt) -> bool:
    """A comment line made by :func:`comment_node`."""
    return isinstance(st, gast.Expr) and isinstance(st.value, gast.Constant) and \
        isinstance(st.value.value, str) and st.value.value.startswith("\x00#")


# runtime functions the earlier passes write into the forward (they resolve to adgen.runtime)
# Runtime functions the earlier passes call (desugar, lower_control, lower_mutation,
# lower_match): resolved to adgen.runtime's by both modes, so their rules apply
RUNTIME_CALLS = frozenset({"loop_sequence", "dict_keys", "unpacked_len", "flat_view", "diagonal_index",
                           "enter_context", "entered_value", "exit_context", "call_starred",
                           "namedtuple_of", "namedtuple_replace", "field_default", "dataclass_replacer",
                           "match_sequence", "ufunc_at", "list_snapshot",
                           "concatenator_piece"})


class Missing:
    pass


MISSING = Missing()
USERCALL = object()


def const_node(value: Any) -> gast.expr:
    if isinstance(value, (int, float, str, bool, type(None))):
        return gast.Constant(value, None)
    if isinstance(value, tuple):
        return gast.Tuple(elts=[const_node(v) for v in value], ctx=gast.Load())
    raise UnsupportedError(f"cannot write the default value {value!r} into generated code")


def is_number(node: Any) -> bool:
    if isinstance(node, gast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, gast.UnaryOp):
        return is_number(node.operand)
    return False


class Subst(gast.NodeTransformer):
    def __init__(self, subst: dict[str, gast.expr]) -> None:
        self.subst = subst

    def visit_Name(self, node: gast.Name) -> gast.expr:
        if node.id in self.subst and isinstance(node.ctx, gast.Load):
            return clone(self.subst[node.id])
        return node


def names_of(arg: Any) -> set[str]:
    if arg is None or isinstance(arg, registry.Default):
        return set()
    if isinstance(arg, tuple):
        return set().union(*(names_of(a) for a in arg)) if arg else set()
    return loaded_names(arg)


def is_python_function(obj: Any) -> bool:
    import types

    return isinstance(obj, (types.FunctionType, types.MethodType)) and \
        not (getattr(obj, "__module__", "") or "").startswith("numpy")  # None: run by exec


def is_callable_object(obj: Any) -> bool:
    """An instance of the user's class with a ``__call__`` written in Python (a layer called
    as ``layer(x)``): called through adgen's dispatch, as its method with it as receiver."""
    from adgen.runtime import is_function_like

    return callable(obj) and not is_function_like(obj)


def is_user_class(obj: Any) -> bool:
    import types

    # its own __init__ or a parent's (class Left(Scaled) without one): dispatch._construct
    # runs the one Python finds
    return isinstance(obj, type) and isinstance(getattr(obj, "__init__", None),
                                                types.FunctionType)


def is_copy_of(prev: gast.stmt, aug: gast.AugAssign) -> bool:
    return isinstance(prev, gast.Assign) and isinstance(prev.targets[0], gast.Name) and \
        prev.targets[0].id == aug.target.id and isinstance(prev.value, gast.Name)


def operand_text(text: str) -> str:
    """``text`` (an expression's, in the user's names) to stand where a name stood in a
    larger expression: as it is where it is a name, an attribute, a call, an item or a
    constant (``np.isfinite(x).astype(np.float64)``, not
    ``(np.isfinite(x)).astype((np.float64))``), else in parentheses."""
    import ast

    try:
        e = ast.parse(text, mode="eval").body
    except SyntaxError:
        return f"({text})"
    primary = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
    return text if isinstance(e, primary) else f"({text})"


def user_name_of(n: str) -> str:
    """The user's variable name behind an SSA version (``h_2`` -> ``h``)."""
    base, _, suffix = n.rpartition("_")
    return base if base and suffix.isdigit() else n


def opsym(op: type) -> str:
    return {gast.Mult: "*", gast.Div: "/", gast.Add: "+", gast.Sub: "-", gast.Pow: "**",
            gast.FloorDiv: "//", gast.Mod: "%", gast.MatMult: "@"}.get(op, "?")


def unsupported_operator(op: gast.operator, loc: Any) -> UnsupportedError:
    """The error for a binary operator without a derivative (``|``, ``&``, ``^``, ``<<``,
    ``>>``) applied to values with a gradient: ``d | e`` merging dicts of arrays."""
    sym = {gast.BitOr: "|", gast.BitAnd: "&", gast.BitXor: "^", gast.LShift: "<<",
           gast.RShift: ">>"}.get(type(op), type(op).__name__)
    if isinstance(op, (gast.LShift, gast.RShift)):
        hint = ("a shift has no derivative; for a power of two write the product: "
                "x * 2 ** k for x << k, x / 2 ** k for x >> k (on integers, take the "
                "shift out of the values with a gradient)")
    else:
        hint = ("to merge dicts, copy and update: g = dict(d); g.update(e) (for d |= e: "
                "d.update(e)); on arrays, use the np.logical_* functions on masks")
    return UnsupportedError(
        f"the operator {sym} on values with a gradient is not supported", loc, hint=hint)


def callee_name(call: gast.Call) -> str:
    f = call.func
    if isinstance(f, gast.Attribute):
        return f.attr
    if isinstance(f, gast.Name):
        return f.id
    return "call"


def basic_index(idx: gast.expr, ints: set[str]) -> bool:
    if isinstance(idx, gast.Name):
        return idx.id in ints
    if isinstance(idx, gast.Constant):
        return isinstance(idx.value, int) or idx.value is Ellipsis
    if isinstance(idx, gast.Slice):
        return True
    if isinstance(idx, gast.UnaryOp):
        return True
    if isinstance(idx, gast.Tuple):
        return all(basic_index(e, ints) for e in idx.elts)
    return False


def is_array_like(n: str, eff: Effects) -> bool:
    return eff.kinds.get(n) not in ("list", "dict", "object") and "param" not in \
        eff.buffers.get(n, set())


def index_value(idx: gast.expr) -> gast.expr:
    """An index written as a value (slices become slice(...) calls)."""
    if isinstance(idx, gast.Slice):
        parts = [idx.lower, idx.upper, idx.step]
        return call_node("slice", *[p if p is not None else gast.Constant(None, None)
                                for p in parts])
    if isinstance(idx, gast.Tuple):
        return gast.Tuple(elts=[index_value(e) for e in idx.elts], ctx=gast.Load())
    return idx


def reorder_zero_last(out: list[gast.stmt]) -> list[gast.stmt]:
    """Puts the ``x_bar[idx] = 0.0`` after the contribution that reads x_bar[idx]."""
    zero = [s for s in out if isinstance(s, gast.Assign) and
            isinstance(s.targets[0], gast.Subscript) and
            isinstance(s.value, gast.Constant) and s.value.value == 0.0]
    rest = [s for s in out if s not in zero]
    return rest + zero


def record_position(body: list[gast.stmt], headers: set[str]) -> int:
    """Where the per-iteration record goes: before the back-edge copies and trailing break."""
    pos = len(body)
    while pos > 0:
        s = body[pos - 1]
        if is_break_if(s):
            pos -= 1
            continue
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and \
                s.targets[0].id in headers and isinstance(s.value, gast.Name):
            pos -= 1
            continue
        break
    return pos


def args_node(names: list[str], defaults: list[gast.expr] | None = None) -> gast.arguments:
    return gast.arguments(args=[name(n, gast.Param) for n in names], posonlyargs=[],
                          vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=defaults or [])
