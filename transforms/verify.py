"""Verify: check the invariants each pass promises (used by the tests after every pass).

Not a pass of the pipeline: ``verify(stage, tree)`` raises CompilerError naming the stage and
the offending statement when the tree after ``stage`` breaks what that pass's docstring says.
"""

from __future__ import annotations

import gast
from adgen.transforms.anf import is_atom
from adgen.transforms.ssa import is_break_if
from adgen.transforms.walk import walk

from adgen.errors import CompilerError


def _fail(stage: str, node: gast.AST, what: str) -> None:
    from adgen.transforms.emit import to_source

    try:
        text = to_source(node).splitlines()[0]
    except Exception:  # noqa: BLE001
        text = type(node).__name__
    raise CompilerError(f"after pass {stage!r}: {what}: {text} "
                        f"(line {getattr(node, 'lineno', '?')})")


def verify(stage: str, fn: gast.FunctionDef) -> None:
    """Checks the invariants that hold after ``stage`` (and every earlier pass)."""
    order = ["lower_control", "desugar", "anf", "lower_mutation", "ssa"]
    if stage not in order:
        return
    done = order[: order.index(stage) + 1]
    if "lower_control" in done:
        _check_control(fn, stage)
    if "desugar" in done:
        _check_desugar(fn, stage)
    if "anf" in done:
        _check_anf(fn, stage)
    if "lower_mutation" in done:
        _check_mutation(fn, stage)
    if "ssa" in done:
        _check_ssa(fn, stage)


def _check_control(fn: gast.FunctionDef, stage: str) -> None:
    returns = [n for n in walk(fn) if isinstance(n, gast.Return)]
    if len(returns) != 1 or fn.body[-1] is not returns[0]:
        _fail(stage, fn, "return must appear once, as the last statement")
    for n in walk(fn):
        if isinstance(n, gast.Continue):
            _fail(stage, n, "continue survived")
    for loop in (n for n in walk(fn) if isinstance(n, (gast.For, gast.While))):
        if loop.orelse:
            # (the passes after lower_control read a loop's body only: an else arm left
            # there lost its derivative, silently, until 465cbb4)
            _fail(stage, loop, "a loop's else arm survived")
        for k, s in enumerate(loop.body):
            for sub in walk(s):
                if isinstance(sub, gast.Break) and not (k == len(loop.body) - 1 and
                                                       is_break_if(s)):
                    # a break is allowed only in the trailing `if flag: break` (and the
                    # loop condition re-evaluation desugar may append after it)
                    if not any(is_break_if(t) and sub in list(walk(t))
                               for t in loop.body):
                        _fail(stage, s, "break outside the trailing `if flag: break`")


def _check_desugar(fn: gast.FunctionDef, stage: str) -> None:
    for n in walk(fn):
        if isinstance(n, (gast.ListComp, gast.DictComp, gast.GeneratorExp, gast.IfExp,
                          gast.NamedExpr)):
            _fail(stage, n, f"{type(n).__name__} survived")
        if isinstance(n, gast.For):
            it = n.iter
            if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and
                    it.func.id == "range"):
                _fail(stage, n, "a for loop must iterate over range(...)")
        if isinstance(n, gast.Assign) and len(n.targets) != 1:
            _fail(stage, n, "an assignment must have one target")
        if isinstance(n, gast.Assign) and isinstance(n.targets[0], (gast.Tuple, gast.List)):
            _fail(stage, n, "tuple targets must be unpacked")


def _atomic_parts(node: gast.expr) -> list[gast.expr]:
    if isinstance(node, gast.BinOp):
        return [node.left, node.right]
    if isinstance(node, gast.UnaryOp):
        return [node.operand]
    if isinstance(node, gast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, (gast.List, gast.Tuple)):
        return list(node.elts)
    if isinstance(node, gast.Dict):
        return [*node.keys, *node.values]
    if isinstance(node, gast.Subscript):
        return [node.value]
    return []


def _check_anf(fn: gast.FunctionDef, stage: str) -> None:
    for s in walk(fn):
        if isinstance(s, gast.Assign):
            t = s.targets[0]
            if isinstance(t, gast.Name):
                if not is_atom(s.value):
                    for part in _atomic_parts(s.value):
                        if not is_atom(part):
                            _fail(stage, s, "an operand is not an atom")
                    if isinstance(s.value, gast.Call):
                        for a in s.value.args:
                            if not (is_atom(a) or isinstance(a, (gast.Tuple, gast.List))):
                                _fail(stage, s, "a call argument is not an atom")
            elif not is_atom(s.value):
                _fail(stage, s, "a store's value is not an atom")
        if isinstance(s, gast.Return) and s.value is not None and not is_atom(s.value):
            _fail(stage, s, "return value is not an atom")
        if isinstance(s, gast.If) and not is_atom(s.test) and not isinstance(
                s.test, (gast.UnaryOp, gast.BoolOp)):
            _fail(stage, s, "if test is not an atom")


def _check_mutation(fn: gast.FunctionDef, stage: str) -> None:
    for n in walk(fn):
        if isinstance(n, gast.Call):
            if isinstance(n.func, gast.Attribute) and n.func.attr in ("fill", "sort") and \
                    not n.args:
                _fail(stage, n, f".{n.func.attr}() survived")


def _check_ssa(fn: gast.FunctionDef, stage: str) -> None:
    # Within one loop body (or the function body), outside back-edge copies and if-merges,
    # a name is bound by at most one statement.
    def bound_in(stmts: list[gast.stmt]) -> list[str]:
        out = []
        for s in stmts:
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                out.append(s.targets[0].id)
        return out

    def walk(stmts: list[gast.stmt]) -> None:
        names = bound_in(stmts)
        plain = [s for s in stmts if isinstance(s, gast.Assign) and
                 isinstance(s.targets[0], gast.Name) and not isinstance(s.value, gast.Name)]
        seen: set[str] = set()
        for s in plain:
            n = s.targets[0].id
            if n in seen:
                _fail(stage, s, f"{n} is bound twice in one block")
            seen.add(n)
        _ = names
        for s in stmts:
            for field in ("body", "orelse"):
                sub = getattr(s, field, None)
                if isinstance(sub, list):
                    walk(sub)

    walk(fn.body)
