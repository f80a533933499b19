"""A ``for`` loop over a list that its own body changes.

Python's ``for w in ws`` reads ``ws`` live: it walks ``ws[0], ws[1], ...`` while the index is
below the list's *current* length, so an item stored ahead of the loop (``ws[i + 1] = ...``,
``ws[-1] = ...``) is walked changed, and an item appended during the loop is walked too.
adgen's loop (desugar: ``seq = loop_sequence(ws)``, ``for i in range(len(seq)): w = seq[i]``)
reads the same list, so its forward values agree for stores, but

- its count is the length when the loop starts: ``ws.append(v)`` (``extend``, ``insert``,
  ``pop``, ``remove``, ``clear``, ``ws += [...]``) in the body walks other items than Python
  does — :func:`refuse_length_changes` refuses it at the line, in every mode;
- reverse mode follows a list's gradient by its name: the items read through ``seq`` get
  their cotangents in ``seq``'s adjoint, apart from ``ws``'s until the loop ends, so a store
  into an item a later step reads (``ws[i + 1] = ws[i + 1] * w``) gave a silently wrong
  gradient — :func:`ahead_writes` lists those stores (reverse_stores refuses them). A store
  into the item the step itself walks (``ws[i] = f(w)``, ``i`` the loop's own index; a
  dict's ``for k in d: d[k] = f(d[k])``) is read by no later step and stays right.
"""

from __future__ import annotations

import gast
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError

# list methods that change the length of the list they are called on
_LENGTH_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "clear"})


def refuse_length_changes(parsed: Parsed) -> None:
    """Refuses a call changing the length of the list (a name or an attribute chain) that
    a ``for`` loop around it walks (``for w in ws``, ``enumerate(ws)``, ``zip(xs, ws)``)."""
    for loop in walk(parsed.tree):
        if not isinstance(loop, gast.For):
            continue
        walked = {gast.dump(w): w for w in _walked(loop.iter)}
        if not walked:
            continue
        for node in _body_nodes(loop.body):
            changed = _length_change(node)
            if changed is None or gast.dump(changed[0]) not in walked:
                continue
            what = _text(changed[0])
            raise UnsupportedError(
                f"{changed[1]} changes the length of {what} while the for loop at line "
                f"{loop.lineno} walks it: Python's loop then walks the list as it is at each "
                f"step, adgen's walks the items {what} had when the loop started",
                parsed.location(node),
                hint=f"walk a copy (for ... in list({what})) if the new items should not be "
                     f"walked, or an index in a while loop (i = 0; while i < len({what}): "
                     "...; i += 1) if they should")


def ahead_writes(fn: gast.FunctionDef, written: dict[int, str]) -> dict[int, gast.For]:
    """The stores of ``written`` (statement id -> the container name it stores into; ``fn``
    in SSA form) into a list that a loop around the store walks (``seq = loop_sequence(c)``
    before it and ``v = seq[i]`` at its top), at an index other than that loop's own ``i``
    (or a plain copy of it): statement id -> the loop."""
    sequences: dict[str, str] = {}
    for s in walk(fn):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and \
                isinstance(s.value, gast.Call) and isinstance(s.value.func, gast.Name) and \
                s.value.func.id == "loop_sequence" and len(s.value.args) == 1 and \
                isinstance(s.value.args[0], gast.Name):
            sequences[s.targets[0].id] = s.value.args[0].id
    out: dict[int, gast.For] = {}
    if not sequences:
        return out
    for loop in walk(fn):
        if not isinstance(loop, gast.For) or not isinstance(loop.target, gast.Name):
            continue
        index = loop.target.id
        steps = [s for s in loop.body
                 if isinstance(s, gast.Assign) and isinstance(s.value, gast.Subscript) and
                 isinstance(s.value.value, gast.Name) and s.value.value.id in sequences and
                 isinstance(s.value.slice, gast.Name) and s.value.slice.id == index]
        lists = {sequences[s.value.value.id] for s in steps}
        if not lists:
            continue
        # the loop's own index, and the walked item itself: for k in params: params[k] =
        # ... of a dict stores at the key this step walks (it was refused as a store ahead;
        # a list's item used as its index is an int, whose store carries no derivative)
        current = {c for n in {index} | {s.targets[0].id for s in steps
                                          if isinstance(s.targets[0], gast.Name)}
                   for c in _copies_of(n, loop.body)}
        for s in walk(loop):
            target = written.get(id(s))
            if target is None or target not in lists:
                continue
            store = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                else None
            if isinstance(store, gast.Subscript) and isinstance(store.slice, gast.Name) and \
                    store.slice.id in current:
                continue  # ws[i] = f(w): the item this step walks
            out.setdefault(id(s), loop)
    return out


def _copies_of(index: str, body: list[gast.stmt]) -> set[str]:
    """``index`` and the names the loop body binds to it by plain copies (``i = i1``)."""
    names = {index}
    changed = True
    while changed:
        changed = False
        for s in body:
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and \
                    isinstance(s.value, gast.Name) and s.value.id in names and \
                    s.targets[0].id not in names:
                names.add(s.targets[0].id)
                changed = True
    return names


def _walked(it: gast.expr) -> list[gast.expr]:
    """The names or attribute chains a loop's iterable walks item by item."""
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and \
            it.func.id in ("enumerate", "zip") and not it.keywords:
        args = it.args[:1] if it.func.id == "enumerate" else it.args
        return [w for a in args for w in _walked(a)]
    return [it] if _is_chain(it) else []


def _is_chain(e: gast.expr) -> bool:
    while isinstance(e, gast.Attribute):
        e = e.value
    return isinstance(e, gast.Name)


def _body_nodes(body: list[gast.stmt]) -> list[gast.AST]:
    """The nodes of a loop body, nested defs and lambdas left out (they run elsewhere)."""
    out: list[gast.AST] = []
    todo: list[gast.AST] = list(reversed(body))
    while todo:
        n = todo.pop()
        if isinstance(n, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        out.append(n)
        todo.extend(reversed(list(gast.iter_child_nodes(n))))
    return out


def _length_change(node: gast.AST) -> tuple[gast.expr, str] | None:
    """The list a statement or call changes the length of, with the construct's words."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
            node.func.attr in _LENGTH_METHODS and _is_chain(node.func.value):
        return node.func.value, f"{_text(node.func.value)}.{node.func.attr}(...)"
    if isinstance(node, gast.AugAssign) and isinstance(node.op, gast.Add) and \
            _is_chain(node.target) and isinstance(node.value, (gast.List, gast.ListComp)):
        return node.target, f"{_text(node.target)} += [...]"  # (not an array's a += b)
    return None


def _text(e: gast.expr) -> str:
    parts: list[str] = []
    while isinstance(e, gast.Attribute):
        parts.append(e.attr)
        e = e.value
    parts.append(e.id if isinstance(e, gast.Name) else "?")
    return ".".join(reversed(parts))
