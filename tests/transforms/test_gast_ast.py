"""gast_ast's conversions give the trees gast's give: the same node classes, the same fields
and locations present (a field absent stays absent), the same values, both directions."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import gast
import numpy as np
import pytest
from adgen.transforms import gast_ast
from adgen.transforms.emit import to_source
from adgen.transforms.pipeline import compile_function

import adgen

ROOT = Path(__file__).resolve().parents[2]

# every statement and expression form of the grammar, parameters of every kind
EVERYTHING = '''
import os, sys as system
from collections import abc as abstract, deque
from . import sibling


@decorator(1, key=2)
class Box(Base, metaclass=Meta):
    """A docstring."""
    size: int = 3
    other: "Box"

    def method(self, a, /, b: float = 1.0, *args: int, c, d=2, **kwargs) -> None:
        global counter
        x = y = a + b
        x += 1; x -= 1; x *= 2; x /= 2; x //= 2; x %= 3; x **= 2; x @= m; x |= 1
        x &= 1; x ^= 1; x <<= 1; x >>= 1
        z: list[int] = [1, 2, *args]
        (p, *q), r = (1, 2, 3), 4
        del z[0], r
        assert x > 0, "positive"
        if x and not y or x is None:
            pass
        elif x in z and y not in z:
            x = -x if x < 0 <= y != 3 else +x
        else:
            x = ~x
        for i in range(3):
            continue
        else:
            x = 0
        while x:
            break
        else:
            x = 1
        try:
            raise ValueError("bad") from None
        except (ValueError, TypeError) as err:
            print(err)
        except Exception:
            raise
        else:
            pass
        finally:
            x = 2
        with open("f") as f, lock:
            data = f.read()
        def inner():
            nonlocal x
            x = 1
            return lambda u, *v, w=1, **k: u + w
        values = [i * j for i in range(3) if i for j in range(i)]
        unique = {i for i in values}
        table = {k: v for k, v in zip("ab", (1, 2))}
        lazy = (i for i in values)
        text = f"{x!r:>{width}} and {y:.3f} {{literal}}"
        s = a[1:2, ::3, ..., None]
        t = a.b.c(d, *e, f=g, **h)
        if (n := len(values)) > 2:
            pass
        return {**table, "x": 1}, {1, 2}, b"bytes", 1j, True, None

    async def coroutine(self):
        async with lock as held:
            await something(held)
        async for item in stream:
            yield item
        result = [x async for x in stream]
        yield from other()


match command.split():
    case [action]:
        pass
    case ["go", direction] | ["move", direction]:
        pass
    case {"x": x, **rest}:
        pass
    case Point(x=0, y=yy) if yy > 0:
        pass
    case [1, 2, *others]:
        pass
    case str() | None as value:
        pass
    case _:
        pass

try:
    pass
except* ValueError as group:
    pass
'''


def same(a, b, where="tree"):
    """The same classes, the same fields and attributes present, the same values."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, list):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{k}]")
    elif isinstance(a, ast.AST):
        assert set(a.__dict__) == set(b.__dict__), \
            f"{where}: {sorted(a.__dict__)} vs {sorted(b.__dict__)}"
        for key, value in a.__dict__.items():
            same(value, b.__dict__[key], f"{where}.{key}")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def both_ways(source: str, name: str) -> None:
    tree = ast.parse(source)
    converted = gast.ast_to_gast(tree)
    same(gast_ast.to_gast(tree), converted, name)
    same(gast_ast.parse(source), gast.parse(source), name)
    same(gast_ast.to_ast(converted), gast.gast_to_ast(converted), name)
    # the result compiles to the same code as gast's
    assert ast.dump(gast_ast.to_ast(converted), include_attributes=True) == \
        ast.dump(gast.gast_to_ast(converted), include_attributes=True)


def test_every_construct_converts_as_gast_converts_it():
    both_ways(EVERYTHING, "EVERYTHING")


@pytest.mark.parametrize("path", ["bench/workloads/polybench_stencils.py",
                                  "bench/workloads/rk4.py", "src/adgen/api.py",
                                  "transforms/parse.py", "transforms/reverse_pullback.py"])
def test_the_projects_own_files_convert_as_gast_converts_them(path):
    both_ways((ROOT / path).read_text(), path)


def test_nodes_the_compiler_builds_convert_as_gast_converts_them():
    """Generated trees: nodes made by the passes, without locations or optional fields."""
    from bench.workloads import polybench_stencils, softdtw

    def loss(w, x):
        h = np.empty((x.shape[0], w.shape[1]))
        for i in range(x.shape[0]):
            h[i] = np.tanh(x[i] @ w)
        try:
            s = np.sum(h ** 2)
        except ValueError as err:
            raise RuntimeError("bad") from err
        return s

    for fn in (loss, polybench_stencils.adi, softdtw.soft_dtw):
        for mutation in ("save", "strict"):
            try:
                compiled = compile_function(fn, mutation=mutation)
            except adgen.AdgenError:
                continue
            for tree in compiled.trees[:2]:
                same(gast_ast.to_ast(tree), gast.gast_to_ast(tree), fn.__name__)
                text = to_source(tree)
                same(gast_ast.parse(text), gast.parse(text), fn.__name__)


def test_a_node_ast_has_no_class_for_is_dropped_as_gast_drops_it():
    class Extra(gast.AST):
        _fields = ()
        _attributes = ()

    tree = gast.Expr(value=gast.Call(func=gast.Name("f", gast.Load(), None, None),
                                     args=[Extra()], keywords=[]))
    same(gast_ast.to_ast(tree), gast.gast_to_ast(tree))
