"""numba_cache: the numba backend's nopython modules and rewrites kept on disk.

numba caches only functions defined in a file, and adgen's generated code lives in
``linecache``. The numba backend (:mod:`adgen.numba_function`) writes each nopython module to
a cache directory (:func:`cache_dir`: ``$ADGEN_NUMBA_CACHE``, else
``$XDG_CACHE_HOME/adgen/numba``, else ``~/.cache/adgen/numba``), named by a hash of its
source and of :func:`runtime_hash` (adgen's nopython runtime and numba's version), and imports
it from there; numba keeps its machine code next to it in ``__pycache__``. The rewrite's result
(a ``NumbaCode``) is kept beside it as JSON (:func:`write_code`, :func:`read_code`), keyed by
:func:`code_key`: a hash of everything the rewrite reads. Where the directory cannot be
written, nothing is kept (the module is compiled from memory).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from typing import Any

__all__ = ["cache_dir", "code_key", "read_code", "runtime_hash", "source_files",
           "write_code"]


def cache_dir() -> str | None:
    root = os.environ.get("ADGEN_NUMBA_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "adgen", "numba")
    try:
        os.makedirs(root, exist_ok=True)
        return root if os.access(root, os.W_OK) else None
    except OSError:
        return None


def runtime_hash() -> str:
    """A hash of the nopython runtime the generated modules import (its modules' code) and
    of numba's version."""
    import numba

    from adgen import numba_runtime

    digest = hashlib.sha256(numba.__version__.encode())
    for mod in (numba_runtime, *numba_runtime.MODULES):
        with open(mod.__file__, "rb") as fh:
            digest.update(fh.read())
    return digest.hexdigest()


_EMITTER_HASH: list[str] = []


def code_key(trees: Any, callees: dict[str, Any], params: dict[str, Any],
              constants: dict[str, Any], free: tuple[str, ...],
              runtime_names: set[str]) -> str:
    """A hash of everything the nopython rewrite of a function reads: its forward and
    pullback trees with their line numbers (the module's map to the user's lines), its
    callees' (recursively), the argument types, folded constants, globals passed as data,
    adgen's runtime names, and the rewrite's own code and the nopython runtime's."""
    import gast

    if not _EMITTER_HASH:
        from adgen import transforms
        from adgen.transforms.analyses import numba_types

        # every module of the rewrite (transforms/numba_*.py: numba_module, numba_emit and
        # its steps), found by name so that a new one is hashed too
        here = os.path.dirname(transforms.__file__)
        paths = sorted(os.path.join(here, f) for f in os.listdir(here)
                       if f.startswith("numba_") and f.endswith(".py"))
        digest = hashlib.sha256()
        for path in [*paths, numba_types.__file__]:
            with open(path, "rb") as fh:
                digest.update(fh.read())
        _EMITTER_HASH.append(digest.hexdigest() + runtime_hash())
    h = hashlib.sha256(_EMITTER_HASH[0].encode())
    forward, pullback, file = trees
    todo: list[tuple[str, Any, Any, str, dict[str, Any]]] = [
        ("", forward, pullback, file, callees)]
    seen: set[int] = set()
    while todo:
        sym, fwd, pb, path, more = todo.pop()
        # the file's name, not its directory: a fresh checkout elsewhere (CI) finds the
        # rewrite again; read_code refuses a result whose text names another directory's file
        h.update(f"\0{sym}\0{os.path.basename(path)}\0".encode())
        h.update(gast.dump(fwd, include_attributes=True).encode())
        h.update(gast.dump(pb, include_attributes=True).encode())
        for name in sorted(more):
            c = more[name]
            h.update(f"\0callee {name} {id(c) in seen}".encode())
            if id(c) not in seen:
                seen.add(id(c))
                todo.append((name, c.forward, c.pullback, c.file, c.callees))
    h.update(repr((sorted(params.items()), sorted(constants.items()), free,
                   sorted(runtime_names))).encode())
    return h.hexdigest()[:32]


def source_files(trees: Any, callees: dict[str, Any]) -> list[str]:
    """The files of a function's code and of its callees' (recursively), sorted: what
    :func:`code_key` hashes only by name."""
    out = {trees[2]}
    todo = list(callees.values())
    seen: set[int] = set()
    while todo:
        c = todo.pop()
        if id(c) not in seen:
            seen.add(id(c))
            out.add(c.file)
            todo.extend(c.callees.values())
    return sorted(out)


def read_code(key: str, files: list[str] | None = None) -> Any:
    """The NumbaCode the rewrite made for ``key`` in an earlier process, or None. ``files``:
    the function's and its callees' files now (:func:`source_files`); a result made for
    files of the same names elsewhere (another checkout) is taken only where its text names
    none of those (an unbound local's message names the file), else the rewrite runs again."""
    import json

    from adgen.transforms.numba_module import NumbaCode

    root = cache_dir()
    if root is None:
        return None
    try:
        with open(os.path.join(root, f"adgen_numba_code_{key}.json")) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    made_for = data.pop("made_for", None)
    if files is not None and made_for != files:
        if not isinstance(made_for, list):
            return None
        text = json.dumps(data)  # the source and the line map, escaped as JSON escapes
        if any(p in text or json.dumps(p)[1:-1] in text or repr(p)[1:-1] in text
               for p in made_for if p not in files):
            return None
    try:
        data["lines"] = {int(k): v for k, v in data["lines"].items()}
        data["files"] = {int(k): v for k, v in data["files"].items()}
        return NumbaCode(**data)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def write_code(key: str, code: Any, files: list[str] | None = None) -> None:
    """Keeps the rewrite's result for later processes, with the files it was made for
    (skipped where the cache directory cannot be written)."""
    import json

    root = cache_dir()
    if root is None:
        return
    path = os.path.join(root, f"adgen_numba_code_{key}.json")
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as fh:
            json.dump({**dataclasses.asdict(code), "made_for": files}, fh)
        os.replace(tmp, path)
    except OSError:
        pass
