"""``walk``: every node of a tree, in ``ast.walk``'s order (breadth first); ``clone``: a deep copy of
one. Both faster than the standard library's, which the passes call thousands of times.

The passes walk the function tree many times; ``ast.walk`` pays for two generator layers per
node (``iter_child_nodes`` over ``iter_fields``). This one reads the fields directly.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

import gast

_AST = gast.AST


def walk(node: Any) -> Iterator[Any]:
    todo = deque([node])
    pop = todo.popleft
    push = todo.append
    while todo:
        node = pop()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, _AST):
                push(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST):
                        push(item)
        yield node


def clone(node: Any) -> Any:
    """A deep copy of an AST (or a list of them), several times faster than copy.deepcopy:
    nodes are rebuilt field by field; leaves (names, constants' values) are shared."""
    if isinstance(node, list):
        return [clone(x) for x in node]
    if not isinstance(node, _AST):
        return node
    cls = node.__class__
    new = cls.__new__(cls)
    d = node.__dict__
    nd = new.__dict__
    for key, value in d.items():
        if isinstance(value, _AST):
            nd[key] = clone(value)
        elif isinstance(value, list):
            nd[key] = [clone(x) for x in value]
        else:
            nd[key] = value
    return new
