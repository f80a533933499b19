"""What a MutationError says to do instead of an in-place write that overwrites a value the
gradient reads (``copy_hint``), in the user's code: write into a copy of the written array (made
before the loop the read is outside of), read a copy of the old value, or compute the new value
out of place. Used by the guards' refusal (``guards.before_write``), the compile-time refusal of a
certain conflict (``reverse_captures``) and the numba backend's (``numba_errors``); ``-o`` modules
copy its source (transforms/standalone.py), so it uses only numpy.
"""

from __future__ import annotations

import numpy as np


def _operand(value: str) -> str:
    """``value``, the right side of ``x op= value``, as the right operand of ``x op ...``:
    in parentheses where it is itself an operation (``c *= 1.0 - k`` is c = c * (1.0 - k),
    not c * 1.0 - k)."""
    import ast

    try:
        node = ast.parse(value.strip(), mode="eval").body
    except SyntaxError:
        return f"({value})"
    if isinstance(node, (ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Lambda,
                         ast.NamedExpr, ast.UnaryOp)):
        return f"({value})"
    return value


def copy_hint(construct: str, captured: str, capture_line: int, line: int,
              file: str | None = None) -> str:
    """What to do instead of an in-place write that overwrites a value a gradient reads,
    said in the user's code: write into a copy of the written array, or, when the write's own
    gradient reads what it overwrites (``Z /= Z.std()``), compute the value out of place.
    Given the user's ``file``, a copy for a write in a loop that the read is outside of is
    made before the loop (once, not in each iteration: the numba backend refuses an array
    made anew in each iteration)."""
    import re

    save = 'use mutation="save" (adgen keeps a copy)'
    # (an attribute chain is the written array too: self.w *= 2)
    aug = re.match(r"^\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\[.*\])?\s*"
                   r"(\*\*|//|>>|<<|[-+*/@%&|^])=\s*(.+)$", construct)
    if capture_line == line:
        if aug and not aug.group(2):
            return (f"{save}, or compute it out of place: {aug.group(1)} = {aug.group(1)} "
                    f"{aug.group(3)} {_operand(aug.group(4))}")
        if aug:
            item = aug.group(1) + aug.group(2)
            value = aug.group(4)
            captured = re.sub(r"^\((.*)\)(\[.*\])$", r"\1\2", captured)  # (self.buf)[:-1]
            if captured != item and captured in value:
                # another region of the array, read in the value (w[1:] += w[:-1] ** 2): a
                # copy of the written region would not help, a copy of the read one does
                value = value.replace(captured, f"{captured}.copy()", 1)
                return f"{save}, or read a copy: {item} {aug.group(3)}= {value}"
            return (f"{save}, or read a copy of the old value: {item} = {item}.copy() "
                    f"{aug.group(3)} {_operand(value)}")
        masked = _masked_form(construct)
        if masked is not None:
            return f"{save}, or write {masked} (the same values; its gradient reads a mask)"
        return f"{save}, or compute the new value into a new array instead of in place"
    # (a method of the user's too: model.step(u, dt) writing u; not an array's own, x.fill(0),
    # which writes x)
    called = re.match(r"^\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(", construct)
    if called and "." in called.group(1) and (
            hasattr(np.ndarray, called.group(1).rsplit(".", 1)[1]) or
            called.group(1).startswith(("np.", "numpy."))):
        called = None  # (np.copyto(x, y), np.add.at(x, i, v): the written array is named)
    if called and not re.search(r"\bout=", construct):
        # a user function that writes an argument in place (scatter(x, v)): not its name
        return (f"{save}, or pass {called.group(1)} a copy of the array it writes in place "
                f"(a.copy() for an argument a) at line {line}")
    # the written array: out=..., the first argument of np.copyto / np.add.at / ..., or the
    # name the statement starts with (x.fill(0), x[i] = v)
    found = re.search(r"\bout=\s*\(?\s*([A-Za-z_]\w*)", construct) or \
        re.match(r"^\s*(?:np|numpy)\.[\w.]+\(\s*([A-Za-z_]\w*)", construct) or \
        re.match(r"^\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?!\w*\()", construct)
    name = found.group(1) if found else captured
    if re.match(rf"^{re.escape(name)}\[\s*['\"]", captured):
        # an array in a dict (st["x"] += dt * st["v"]): a copy of the dict would hold the
        # same array, a copy of the array is what the write must go into
        name = captured
    loop = loop_around(file, line, capture_line) if file else None
    where = f"before line {line}" if loop is None else \
        f"before line {loop} (before the loop holding line {line})"
    return f"{save}, or write into a copy: {name} = {name}.copy() {where}"


def _masked_form(construct: str) -> str | None:
    """``h[h < 0] = 0`` for ``np.maximum(h, 0, out=h)`` (``np.minimum``: ``>``; ``np.clip(h,
    lo, hi, out=h)`` and ``h.clip(lo, hi, out=h)``: both stores), where the bounds are
    numbers written out: in place, with a gradient that reads the masks,
    not the values the write overwrites (a bound a value equals keeps its own gradient
    there, where np.maximum splits it in half). None for anything else."""
    import re

    arr = r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"
    bound = r"(-?\s*\d[\d.]*(?:e-?\d+)?)"  # a number written out (a name may be an array)
    m = re.match(rf"^\s*(?:np|numpy)\.(maximum|minimum)\(\s*{arr}\s*,\s*{bound}\s*,"
                 rf"\s*out=\s*{arr}\s*\)\s*$", construct)
    if m and m.group(2) == m.group(4):
        x, c = m.group(2), m.group(3)
        return f"{x}[{x} {'<' if m.group(1) == 'maximum' else '>'} {c}] = {c}"
    m = re.match(rf"^\s*(?:(?:np|numpy)\.clip\(\s*{arr}\s*,|{arr}\.clip\()\s*{bound}\s*,"
                 rf"\s*{bound}\s*,\s*out=\s*{arr}\s*\)\s*$", construct)
    if m:
        x = m.group(1) or m.group(2)
        lo, hi = m.group(3), m.group(4)
        if x == m.group(5):
            return f"{x}[{x} < {lo}] = {lo}; {x}[{x} > {hi}] = {hi}"
    return None


def loop_around(file: str, line: int, outside: int) -> int | None:
    """The first line of the outermost loop of ``file`` that holds ``line`` and not
    ``outside``, or None (no such loop, or a file that does not parse)."""
    import ast
    import linecache

    try:
        tree = ast.parse("".join(linecache.getlines(file)))
    except (SyntaxError, ValueError):
        return None
    loops = [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While)) and
             n.lineno <= line <= (n.end_lineno or n.lineno) and
             not n.lineno <= outside <= (n.end_lineno or n.lineno)]
    return min(loops) if loops else None
