"""Emit: generated FunctionDefs to Python source (``ast.unparse``) and to live functions.

Input: gast FunctionDefs from the reverse pass. Output: source text, and functions compiled
through ``linecache`` so tracebacks, pdb and ``inspect.getsource`` show the generated code.
The standard library's ``ast.unparse`` (Python 3.9+) does what the ``astunparse`` backport
did; adgen needs no third-party unparser.
"""

from __future__ import annotations

import ast
import linecache
import re
from typing import Any

import gast

_COMMENT = re.compile(r"^(\s*)(['\"])\\x00(# .*)\2$", re.MULTILINE)


def to_source(node: gast.AST) -> str:
    """Source text of a gast node, with the reverse pass's comment markers as comments."""
    tree = gast.gast_to_ast(node)
    ast.fix_missing_locations(tree)
    text = ast.unparse(tree)
    return _COMMENT.sub(lambda m: m.group(1) + m.group(3).replace("\\'", "'"), text)


def compile_source(source: str, filename: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Executes ``source`` in ``namespace`` under ``filename``, registered in linecache."""
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    code = compile(source, filename, "exec")
    exec(code, namespace)  # noqa: S102 - this is the compiler's output
    return namespace
