"""numba_guarded_sites: the guarded mutation sites in nopython code.

Steps of the numba rewrite (:class:`adgen.transforms.numba_emit.Rewriter`):

- :func:`strict_guards`, under ``mutation="strict"``: the captures record the element
  addresses they view in a scope of the forward's (``strict_capture``), and each guarded write
  looks up the elements it overwrites (``strict_before_write``), raising what
  adgen.numba_errors makes the default backend's MutationError;
- :func:`save_guards`, under ``"save"``: the captured array is copied when captured, a number
  kept as it is, and the writes lose their checks (the pullback reads the same contents);
- :func:`remaps`: a callee's saved values that view an argument its caller overwrote,
  redirected to the copy the caller's guard took (``remap_tree``).
"""

from __future__ import annotations

import ast
import os
from typing import TYPE_CHECKING, Any

from adgen.transforms.analyses.numba_types import (
    NUMBER_KINDS,
    call_name,
    name_of,
)
from adgen.transforms.numba_statements import (
    blocks,
    expr,
    own_nodes,
    statements,
)

if TYPE_CHECKING:
    from adgen.transforms.numba_emit import Rewriter

__all__ = ["remaps", "save_guards", "strict_guards", "unwatched_captures"]


def strict_guards(rw: Rewriter, types_: dict[str, Any], callee: bool) -> None:
    """A guarded site under ``mutation="strict"``: the default backend registers each value
    the pullback reads (``saved = capture(x, ...)``) and raises MutationError when a later
    write overlaps it (``before_write(x, region, 'strict', ...)``). Here the forward keeps
    the element addresses each capture views (``strict_capture(scope, x, k)``, which
    returns ``x`` itself, as the default's capture keeps the live array) and each write
    checks the elements it overwrites (``strict_before_write(scope, x, index, value, k)``),
    raising ``StrictOverwrite(k, mask)``: ``rw.strict_writes[k]`` and the captures whose
    bits are set in ``mask`` (``rw.strict_captures``) give adgen.backends the
    MutationError the default backend raises, naming both lines. A capture of anything
    but an array or a number leaves the site refused (check_calls); so does a guarded
    site in a callee, whose captures the default backend shares with its caller."""
    unwatched_captures(rw)
    writes = [st for st in statements(rw.fwd.body) if isinstance(st, ast.Expr) and
              call_name(st.value) == "before_write" and len(st.value.args) > 6 and
              isinstance(st.value.args[2], ast.Constant) and
              st.value.args[2].value == "strict"]
    if not writes:
        return
    if callee:
        raise rw.refuse(writes[0], "the numba backend checks guarded sites under "
                          "mutation='strict' in the differentiated function, not in a "
                          "function it calls (whose captures the default backend shares "
                          "with its caller)", "use mutation='save', the default backend "
                          "(backend='default', or 'auto'), or write into a copy so the "
                          "site is free (adgen.explain lists the sites)")
    captures = [st for st in statements(rw.fwd.body) if isinstance(st, ast.Assign) and
                len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and
                call_name(st.value) == "capture" and not st.value.keywords and
                len(st.value.args) == 4 and isinstance(st.value.args[0], ast.Name)]
    kinds = [types_.get(st.value.args[0].id) for st in captures]
    # a value this analysis cannot type (np.outer(x, x)) is left to numba's typing,
    # where strict_capture refuses anything but an array or a number at this line
    if len(captures) > 62 or any(
            not (isinstance(t, tuple) and t[0] == "array") and
            t not in (*NUMBER_KINDS, None) for t in kinds) or sum(call_name(n) == "capture" for n in ast.walk(rw.fwd)) \
            != len(captures):
        return  # refused by check_calls, naming the site
    scope = rw.fresh("live_captures")
    held = set()
    for k, st in enumerate(captures):
        x, file, line, what = st.value.args
        rw.strict_captures.append([file.value, line.value, what.value])
        st.value = expr(f"strict_capture({scope}, {x.id}, {k})")
        held.add(st.targets[0].id)
    for k, st in enumerate(writes):
        target, region, _, file, line, col, construct = st.value.args[:7]
        index = region.args[1] if call_name(region) == "write_region" else \
            ast.Constant(None)
        value = st.value.args[7] if len(st.value.args) > 7 else ast.Constant(None)
        rw.strict_writes.append([file.value, line.value, col.value, construct.value])
        st.value = ast.Call(func=ast.Name(id="strict_before_write", ctx=ast.Load()),
                            args=[ast.Name(id=scope, ctx=ast.Load()), target, index,
                                  value, ast.Constant(k)], keywords=[])
    rw.fwd.body.insert(0, ast.Assign(targets=[ast.Name(id=scope, ctx=ast.Store())],
                                       value=expr("strict_scope()"), lineno=0))
    for fn in (rw.fwd, rw.pb):
        _HeldValues(held).visit(fn)


def save_guards(rw: Rewriter, types_: dict[str, Any]) -> None:
    """A guarded site under ``mutation="save"``: the default backend registers each value
    the pullback reads (``saved = capture(x, ...)``) and copies it when a later write
    overlaps it (``before_write(x, region, 'save', ...)``). Here the value is copied
    when it is captured (``saved = x.copy()``; a number as it is), which keeps the same
    contents for the pullback, so the writes need no check. Under ``"strict"`` the check
    is the point: those sites stay refused (check_calls)."""
    held = unwatched_captures(rw)
    for st in statements(rw.fwd.body):
        if isinstance(st, ast.Assign) and call_name(st.value) in ("copy_before_loop",
                                                                  "copy_when_read") and \
                isinstance(st.value.args[0], ast.Name):
            # the rows a loop reads ahead of its counter: one copy, explain's count aside
            st.value = expr(f"{st.value.args[0].id}.copy()")
            continue
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], ast.Name) and call_name(st.value) == "capture" \
                and not st.value.keywords and len(st.value.args) == 4:
            x = st.value.args[0]
            t = types_.get(name_of(x) or "")
            if isinstance(t, tuple) and t[0] == "array":
                st.value = expr(f"{x.id}.copy()")
            elif t in NUMBER_KINDS:
                st.value = ast.Name(id=x.id, ctx=ast.Load())
            elif t is None and isinstance(x, ast.Name):
                # a value this analysis cannot type (np.outer(x, x)): numba's typing
                # decides, and saved_copy refuses anything but an array or a number
                st.value = expr(f"saved_copy({x.id})")
            else:
                continue  # a tuple, an object: refused by check_calls
            held.add(st.targets[0].id)
    # (with no capture left, the unwatched ones included, no write has a value to save)
    # a capture that could not be copied keeps every write's guard (then refused)
    left = any(call_name(n) == "capture" for n in ast.walk(rw.fwd))
    for fn in (rw.fwd, rw.pb):
        for b in blocks(fn):
            b[:] = [st for st in b if left or not (
                isinstance(st, ast.Expr) and call_name(st.value) == "before_write" and
                len(st.value.args) > 2 and isinstance(st.value.args[2], ast.Constant) and
                st.value.args[2].value == "save")] or [ast.Pass()]
        _HeldValues(held).visit(fn)


def unwatched_captures(rw: Rewriter) -> set[str]:
    """``saved_y_1 = capture(y, ..., watch=False)`` becomes ``saved_y_1 = y``: the caller's
    capture of an argument of a compiled callee that reads it only through captures of its
    own (``Compiled.reads_uncaptured``; a helper filling ``out`` from ``y``'s elements). The
    default backend's capture guards nothing (``guards._Unread``) and ``remap_saved`` leaves
    that argument as it is; here the name stands for the array itself (:func:`remaps` drops
    it). Returns the names so bound (their ``.value`` reads are the array)."""
    held: set[str] = set()
    for st in statements(rw.fwd.body):
        v = st.value if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
            isinstance(st.targets[0], ast.Name) else None
        if call_name(v) == "capture" and isinstance(v, ast.Call) and v.args and \
                isinstance(v.args[0], ast.Name) and len(v.keywords) == 1 and \
                v.keywords[0].arg == "watch" and isinstance(v.keywords[0].value,
                                                             ast.Constant) and \
                v.keywords[0].value.value is False:
            st.value = ast.Name(id=v.args[0].id, ctx=ast.Load())
            held.add(st.targets[0].id)
    if held:
        for fn in (rw.fwd, rw.pb):
            _HeldValues(held).visit(fn)
    return held


def remaps(rw: Rewriter) -> None:
    """``remap_saved(callee_saved, [saved_x_1, ...], sh)``: the default pullback points a
    callee's saved values that view an argument its caller overwrote after the call at
    the copy the caller's guard took. Here each capture is a copy made when captured
    (``saved_x_1 = x.copy()``, save_guards) or ``x`` itself (``strict_capture``), and
    ``remap_tree(callee_saved, x, saved_x_1, line)`` (adgen.numba_runtime) redirects
    every array of the saved tree that lies in ``x`` to the same elements of the copy;
    ``x`` itself becomes a saved value of the forward where the pullback lacks it."""
    captured: dict[str, str] = {}  # capture name -> the array it captured
    for st in statements(rw.fwd.body):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], ast.Name):
            v = st.value
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and \
                    v.func.attr == "copy" and not v.args and isinstance(v.func.value,
                                                                        ast.Name):
                captured[st.targets[0].id] = v.func.value.id
            elif call_name(v) == "strict_capture" and len(v.args) == 3 and \
                    isinstance(v.args[1], ast.Name):
                captured[st.targets[0].id] = v.args[1].id
            elif call_name(v) == "saved_copy" and isinstance(v.args[0], ast.Name):
                captured[st.targets[0].id] = v.args[0].id
            elif isinstance(v, ast.Name):
                # an unwatched capture (unwatched_captures): the argument itself, which
                # the callee's saved values hold already
                captured[st.targets[0].id] = ""
    calls = [n for n in ast.walk(rw.pb) if call_name(n) == "remap_saved"]
    if not calls:
        return
    unpack = next((st for st in rw.pb.body if isinstance(st, ast.Assign) and
                   name_of(st.value) == "saved"), None)
    ret = rw.fwd.body[-1]
    if unpack is None or not isinstance(unpack.targets[0], ast.Tuple) or not (
            isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and
            len(ret.value.elts) == 2 and isinstance(ret.value.elts[1], ast.Tuple)):
        return  # left to check_calls, which refuses remap_saved at its line
    have = {name_of(e) for e in unpack.targets[0].elts}
    line_of = {id(n): getattr(st, "_user_line", 0) for st in statements(rw.pb.body)
               for n in own_nodes(st)}
    file = rw.place.file

    class Remap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if call_name(node) != "remap_saved" or len(node.args) < 2 or \
                    not isinstance(node.args[1], ast.List):
                return node
            caps = [name_of(e) for e in node.args[1].elts]
            if any(c not in captured for c in caps):
                return node  # refused by check_calls
            out: ast.expr = node.args[0]
            for c in caps:
                x = captured[c]  # type: ignore[index]
                if not x:
                    continue
                if x not in have:
                    have.add(x)
                    ret.value.elts[1].elts.append(ast.Name(id=x, ctx=ast.Load()))
                    unpack.targets[0].elts.append(ast.Name(id=x, ctx=ast.Store()))
                out = ast.Call(func=ast.Name(id="remap_tree", ctx=ast.Load()),
                               args=[out, ast.Name(id=x, ctx=ast.Load()),
                                     ast.Name(id=c, ctx=ast.Load()),  # type: ignore
                                     # the file's name (numba_errors.saved_view_error
                                     # finds it among the module's): no directory in the
                                     # module's source, whose hash names numba's cache
                                     ast.Constant(f"{os.path.basename(file)}:"
                                                  f"{line_of.get(id(node), 0)}")],
                               keywords=[])
            return out

    Remap().visit(rw.pb)


class _HeldValues(ast.NodeTransformer):
    """``saved.value`` of a capture ``saved`` in ``held`` as ``saved`` itself: the capture
    is the copy (or, under "strict", the array) the forward kept."""

    def __init__(self, held: set[str]) -> None:
        self.held = held

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr == "value" and name_of(node.value) in self.held:
            return ast.Name(id=node.value.id, ctx=ast.Load())
        return self.generic_visit(node)
