"""``nodes_of(tree, *types)``: the nodes of a tree in ``walk``'s order, read from one walk while
the tree is frozen (``frozen(tree)``), walked again otherwise (``loaded_names``: the names
read, from them).

The analyses and the reverse pass's plan each walk the whole function several times (a
build of Polybench's ADI walked about 120,000 nodes for a 1,500-node function). Between the
front end and the forward emitter nothing adds, removes or replaces a node of the function
(analyses never rewrite; the plan, the captures and the pullback emitter build new trees),
so the pipeline declares those stretches with ``with frozen(tree):`` and every
``nodes_of(tree, ...)`` inside them reads one list made at entry: the whole tree's nodes, or a
subtree's (a loop body, a statement), each walked at most once, filtered by type once per
type asked for; ``memo(tree, key, compute)`` keeps a fact several analyses ask for (the
bindings of every name, the float facts) for the block.

Assumes: inside ``frozen(tree)`` nothing changes ``tree`` (the lists need only that no
node is added, removed or replaced; a memo, that no field changes either). Guarantees:
``nodes_of(node, *types)`` is exactly ``[n for n in walk(node) if isinstance(n, types)]``
(all nodes without types), as a tuple, frozen or not. With ``ADGEN_CHECK_FROZEN=1`` in the
environment (tests/conftest.py sets it), leaving a frozen block compares the tree with what
it was at entry (its nodes, in order, and what each holds) and raises ``CompilerError``
naming the block if it changed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import gast
from adgen.transforms.walk import body_nodes, children, walk

__all__ = ["body_nodes_of", "frozen", "loaded_names", "memo", "nodes_of", "thaw"]


class _Index:
    """One frozen tree: its nodes, the ids of all of them, and the lists asked for so far."""

    def __init__(self, tree: Any) -> None:
        self.tree = tree
        # the tree's nodes in walk's order, and each node's children (walk's pushes): a
        # subtree's nodes are read from these without reading any node's fields again
        order = [tree]
        kids: dict[int, list[Any]] = {}
        for node in order:
            found = kids[id(node)] = children(node)
            order.extend(found)
        self.all = tuple(order)
        self.kids = kids
        self.ids = set(kids)
        # (id(subtree root), types) -> the subtree's nodes of those types, in walk's order
        self.lists: dict[tuple[int, tuple[type, ...]], tuple[Any, ...]] = {
            (id(tree), ()): self.all}
        self.memo: dict[Any, Any] = {}  # facts computed once per block (memo)
        self.what = ""  # the block, for the check's error
        # what the tree held at the block's start, when checked (_fingerprint)
        self.dump: list[tuple[Any, ...]] | None = None

    def nodes(self, node: Any, types: tuple[type, ...]) -> tuple[Any, ...]:
        key = (id(node), types)
        found = self.lists.get(key)
        if found is None:
            everything = self.lists.get((id(node), ()))
            if everything is None:
                everything = self.lists[(id(node), ())] = self.subtree(node)
            found = self.lists[key] = tuple([n for n in everything if isinstance(n, types)]) \
                if types else everything
        return found


    def subtree(self, node: Any) -> tuple[Any, ...]:
        """``tuple(walk(node))``, from the children read at entry."""
        kids = self.kids
        out = [node]
        for n in out:
            out.extend(kids[id(n)])
        return tuple(out)


# id(root) -> its index, while a frozen block is open; and id(node) -> the index holding it
_FROZEN: dict[int, _Index] = {}
_OWNER: dict[int, _Index] = {}


def nodes_of(node: Any, *types: type) -> tuple[Any, ...]:
    """The nodes of ``node``'s tree (``node`` included), in ``walk``'s order; only those of
    the ``types`` given, if any. Read from the frozen index when ``node`` is in a frozen
    tree; a fresh walk otherwise."""
    index = _OWNER.get(id(node)) if _OWNER else None
    if index is not None:
        return index.nodes(node, types)
    if types:  # (a list first: tuple() of a generator expression takes a third longer)
        return tuple([n for n in walk(node) if isinstance(n, types)])
    return tuple(walk(node))


def loaded_names(node: Any) -> set[str]:
    """The names ``node``'s tree reads (``gast.Load``), through :func:`nodes_of`."""
    return {n.id for n in nodes_of(node, gast.Name) if isinstance(n.ctx, gast.Load)}


def memo(tree: Any, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()``, once per frozen block of ``tree`` and ``key`` (each time when ``tree`` is
    not frozen). The key must name everything the result depends on besides the tree's
    nodes; the result is shared, so callers must not change it."""
    index = _FROZEN.get(id(tree)) if _FROZEN else None
    if index is None:
        return compute()
    try:
        return index.memo[key]
    except KeyError:
        found = index.memo[key] = compute()
        return found


def body_nodes_of(fn: Any) -> tuple[Any, ...]:
    """``walk.body_nodes(fn.body)`` (the nodes that run when ``fn``'s body runs, outside
    nested functions), once per frozen block of ``fn``."""
    return memo(fn, "body_nodes", lambda: tuple(body_nodes(fn.body)))


@contextmanager
def frozen(tree: Any, what: str = "the analyses") -> Iterator[None]:
    """Declares that nothing changes ``tree`` inside the block (``what`` names the block for
    the check's error), or until ``thaw(tree)``; ``nodes_of`` then walks each subtree at
    most once, and ``memo`` keeps its facts. Nested blocks of the same tree share the outer
    one's index."""
    if id(tree) in _FROZEN:
        yield
        return
    index = _Index(tree)
    index.what = what
    if os.environ.get("ADGEN_CHECK_FROZEN") == "1":
        index.dump = _fingerprint(index.all)
    _FROZEN[id(tree)] = index
    for i in index.ids:
        _OWNER.setdefault(i, index)
    try:
        yield
    finally:
        released = _release(index)
    if released:  # the block ended without an error (an error of its own goes first)
        _check(index)


def thaw(tree: Any) -> None:
    """Ends the frozen block of ``tree`` here, before the block's own end (the reverse pass's
    forward emitter rewrites the function's statements in place): ``nodes_of`` walks again
    from here on. Nothing happens if ``tree`` is not frozen."""
    index = _FROZEN.get(id(tree))
    if index is not None and _release(index):
        _check(index)


def _release(index: _Index) -> bool:
    """Forgets ``index``; False if it was already forgotten (thawed)."""
    if _FROZEN.get(id(index.tree)) is not index:
        return False
    del _FROZEN[id(index.tree)]
    for i in index.ids:
        if _OWNER.get(i) is index:
            del _OWNER[i]
    return True


def _fingerprint(nodes: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """What the nodes hold besides other nodes (names, attributes, constants, locations),
    node by node: with the nodes themselves, in order, the whole tree."""
    out = []
    for n in nodes:
        values: list[Any] = [n.__class__]
        for field in n._fields + n._attributes:
            v = getattr(n, field, None)
            if isinstance(v, list):
                values.extend(x for x in v if not isinstance(x, gast.AST))
                values.append(len(v))
            elif not isinstance(v, gast.AST):
                values.append(v)
            elif isinstance(v, gast.expr_context):  # (walk does not yield contexts)
                values.append(v.__class__)
        out.append(tuple(values))
    return out


def _check(index: _Index) -> None:
    """With ``ADGEN_CHECK_FROZEN=1`` (the tests): raises if the tree changed since the block
    began."""
    if index.dump is None:
        return
    now = tuple(walk(index.tree))
    if len(now) != len(index.all) or any(a is not b for a, b in zip(now, index.all)) or \
            _fingerprint(now) != index.dump:
        from adgen.errors import CompilerError

        raise CompilerError(f"{index.what} changed the tree of {getattr(index.tree, 'name', '?')}, "
                            "which they declared frozen (node_index.frozen)")
