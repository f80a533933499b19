"""parse reads a function's def without inspect's tokenizer (issue 15, cold start).

``parse._quick_def`` takes the lines from the def (or its first decorator) to the last line
indented deeper, at least to the last line the code runs, and keeps them only when they
compile to the function's code; otherwise parse asks ``inspect`` as before. Here: the trees
it gives are the ones the inspect path gives (every field and location) on defs whose end
is not where the code's last instruction is, the forms it leaves to inspect, and gradients
of such functions written in a user's file against central differences.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import textwrap
from pathlib import Path
from typing import Any

import gast
import numpy as np
import pytest
from adgen.transforms import parse
from gradcheck import check_grad

import adgen

USER_FILE = '''import numpy as np


def ends_with_nested_def(x):
    scale = 2.0
    def inner(v):
        return v * scale
    return np.sum(inner(x) ** 2)


def comment_at_column_zero(x):
    y = np.sin(x)
# a comment at the margin, inside the body
    return np.sum(y * x)


def header_at_column_zero(x,
y=3.0):
    return np.sum(x ** 2 * y)


def closing_bracket_alone(x):
    return np.sum(
        x * np.cos(x)
    )


def trailing_no_op(x):
    y = np.exp(x)
    if np.sum(y) > 0.0:
        pass
    return np.sum(y)


def decorated(fn):
    return fn


@decorated
def with_decorator(x):
    return np.sum(np.tanh(x))  # a comment after the last line
    # and one below it


class Model:
    def __init__(self, w):
        self.w = w

    def __loss(self, x):
        return np.sum((self.w * x) ** 2)

    def loss(self, x):
        return self.__loss(x)


def string_at_margin(x):
    doc = """a string
at the margin"""
    return np.sum(x * len(doc))


lam = lambda x: np.sum(x ** 3)  # noqa: E731


def with_except(x):
    try:
        y = np.log(x)
    except ValueError as err:
        y = x * len(str(err))
    return np.sum(y)


class Solver:
    def step(self, x):
        try:
            return np.sum(np.sqrt(x))
        except (ValueError, TypeError) as err:
            raise RuntimeError("no step") from err
'''

NAMES = ["ends_with_nested_def", "comment_at_column_zero", "header_at_column_zero",
         "closing_bracket_alone", "trailing_no_op", "with_decorator", "string_at_margin"]


@pytest.fixture(scope="module")
def user_module(tmp_path_factory: Any) -> Any:
    path = tmp_path_factory.mktemp("quick") / "quick_user.py"
    path.write_text(USER_FILE)
    spec = importlib.util.spec_from_file_location("quick_user", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["quick_user"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("quick_user", None)


def _by_inspect(fn: Any) -> gast.AST:
    lines, first = inspect.getsourcelines(fn)
    return parse._parse_block(fn, lines, first)[1]


@pytest.mark.parametrize("name", NAMES + ["Model.loss", "Model._Model__loss"])
def test_the_quick_def_is_the_one_inspect_reads(user_module: Any, name: str) -> None:
    fn = user_module
    for part in name.split("."):
        fn = getattr(fn, part)
    quick = parse._quick_def(fn, fn.__code__)
    assert quick is not None
    node, file = quick
    assert file == inspect.getsourcefile(fn)
    assert gast.dump(node, include_attributes=True) == \
        gast.dump(_by_inspect(fn), include_attributes=True)


def test_forms_left_to_inspect(user_module: Any) -> None:
    assert parse._quick_def(user_module.lam, user_module.lam.__code__) is None
    # a def whose text no longer compiles to its code (the file edited after the import)
    fn = user_module.trailing_no_op
    edited = Path(fn.__code__.co_filename)
    text = edited.read_text()
    try:
        edited.write_text(text.replace("np.exp(x)", "np.exp(2.0 * x)"))
        import linecache

        linecache.checkcache(str(edited))
        assert parse._quick_def(fn, fn.__code__) is None
        with pytest.raises(adgen.UnsupportedError, match="not the code Python runs"):
            adgen.grad(fn)(np.array([0.1, 0.2]))
    finally:
        edited.write_text(text)
        linecache.checkcache(str(edited))


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("name", NAMES + ["lam"])
def test_gradients_of_the_quick_defs(user_module: Any, name: str, mutation: str) -> None:
    x = np.array([0.3, -0.7, 1.1])
    check_grad(getattr(user_module, name), (x,), mutation=mutation)


def test_a_method_with_a_private_callee(user_module: Any) -> None:
    model = user_module.Model(np.array([0.5, -1.5, 2.0]))
    x = np.array([0.3, -0.7, 1.1])
    check_grad(model.loss, (x,))


def _moved_by_gast(fn: Any) -> gast.AST:
    """The def as gast parses its dedented text, moved to the file's lines and columns by
    gast.increment_lineno and the def's indentation."""
    lines, first = inspect.getsourcelines(fn)
    module = gast.parse(textwrap.dedent("".join(lines)))
    gast.increment_lineno(module, first - 1)
    indent = len(lines[0]) - len(lines[0].lstrip())
    for node in gast.walk(module):
        if getattr(node, "col_offset", None) is not None:
            node.col_offset += indent
    return module.body[0]


@pytest.mark.parametrize("name", NAMES + ["Model.loss", "with_except", "Solver.step"])
def test_the_def_has_the_files_lines_and_columns(user_module: Any, name: str) -> None:
    """parse reads the def at the file's lines (empty lines above it, no walk moving every
    node's lines): the locations gast gives the def moved to the file, except clauses' names
    and methods' columns too."""
    fn = user_module
    for part in name.split("."):
        fn = getattr(fn, part)
    assert gast.dump(_by_inspect(fn), include_attributes=True) == \
        gast.dump(_moved_by_gast(fn), include_attributes=True)
