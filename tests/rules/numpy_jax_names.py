"""Makes the list of public functions that both ``numpy`` and ``jax.numpy`` provide.

    python tests/rules/numpy_jax_names.py PATH/TO/jax > names.txt

``PATH/TO/jax`` is the ``jax`` package directory (of a wheel unpacked anywhere: JAX itself is
not needed, and is not a dependency of adgen; its ``numpy/__init__.py`` and
``numpy/linalg.py`` are read as text). The names are those both export that are callables in
the installed NumPy; ``linalg.`` prefixes the ``np.linalg`` ones. The committed list,
``numpy_jax_names.txt``, adds the classification by hand.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import numpy as np


def exported(path: Path) -> set[str]:
    """The public names a module exports (``import x as x``, assignments, defs)."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            out |= {a.asname for a in node.names if a.asname}
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.FunctionDef):
            out.add(node.name)
    return {n for n in out if not n.startswith("_")}


def shared(jax_dir: Path) -> list[str]:
    def callable_in(module: object, name: str) -> bool:
        obj = getattr(module, name, None)
        return obj is not None and (isinstance(obj, np.ufunc) or (
            callable(obj) and not inspect.isclass(obj)))

    top = exported(jax_dir / "numpy" / "__init__.py")
    lin = exported(jax_dir / "numpy" / "linalg.py")
    return sorted(n for n in top if callable_in(np, n)) + sorted(
        f"linalg.{n}" for n in lin if callable_in(np.linalg, n))


if __name__ == "__main__":
    print("\n".join(shared(Path(sys.argv[1]))))
