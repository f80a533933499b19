"""Hashes of the code adgen generates for the bench workloads (and, optionally, the e2e
corpus): the check that a refactor of the compiler is a pure one. Run it on a tree before and
after the change (another tree: ``PYTHONPATH=<tree>/src``, its ``transforms`` linked as
``src/adgen/transforms``, as :mod:`bench.experiments.generated_ab` does) and compare:

    python -m bench.experiments.source_hashes --corpus --numba -o /tmp/before.json
    (change the compiler)
    python -m bench.experiments.source_hashes --corpus --numba --against /tmp/before.json

For each workload, ``adgen.source`` under "save" (the pullback grad runs), the reusable pair
(``single_use=False``), "strict", without example arguments, and forward mode; with
``--numba``, the nopython module (generated, not compiled). With ``--corpus``, the grad and
vjp cases of tests/e2e/test_corpus.py under "save", "strict", without arguments and forward
mode. A source adgen refuses is hashed as its error's type and message, so a refusal that
changes shows too.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import importlib.util
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

_ROOT = Path(__file__).resolve().parents[2]


def _text(make: Callable[[], Any]) -> str:
    try:
        return str(make())
    except Exception as exc:  # noqa: BLE001 - a refusal is part of what is compared
        return f"ERROR {type(exc).__name__}: {exc}"


def _corpus_cases(tests: Path) -> list[Any]:
    sys.path.insert(0, str(tests))
    spec = importlib.util.spec_from_file_location("source_hashes_corpus",
                                                  tests / "e2e" / "test_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return list(module.GRAD_CASES) + list(getattr(module, "VJP_CASES", []))


def sources(names: list[str] | None = None, *, corpus: bool = False,
            numba: bool = False) -> dict[str, str]:
    """Key (``workload/mode``, ``corpusK-name/mode``) -> the generated source."""
    import adgen
    from bench.workloads import load

    warnings.simplefilter("ignore")
    out: dict[str, str] = {}
    for w in load(names):
        args = w.make_args(np.random.default_rng(0))
        f = w.primal
        out[f"{w.name}/save"] = _text(lambda: adgen.source(f, *args))
        out[f"{w.name}/reusable"] = _text(lambda: adgen.source(f, *args, single_use=False))
        out[f"{w.name}/strict"] = _text(lambda: adgen.source(f, *args, mutation="strict"))
        out[f"{w.name}/no-arguments"] = _text(lambda: adgen.source(f))
        out[f"{w.name}/forward"] = _text(lambda: adgen.source(f, mode="forward"))
        if numba:
            out[f"{w.name}/numba"] = _text(lambda: adgen.source(f, *args, backend="numba"))
    if corpus:
        for k, case in enumerate(_corpus_cases(_ROOT / "tests")):
            f, args = case.f, case.args
            key = f"corpus{k}-{getattr(f, '__name__', 'f')}"
            if not case.kwargs:
                out[f"{key}/save"] = _text(lambda: adgen.source(f, *copy.deepcopy(args)))
                out[f"{key}/strict"] = _text(
                    lambda: adgen.source(f, *copy.deepcopy(args), mutation="strict"))
            out[f"{key}/no-arguments"] = _text(lambda: adgen.source(f))
            out[f"{key}/forward"] = _text(lambda: adgen.source(f, mode="forward"))
    return out


def hashes(texts: dict[str, str]) -> dict[str, str]:
    """Key -> the first 16 hex digits of the source's SHA-256."""
    return {k: hashlib.sha256(v.encode()).hexdigest()[:16] for k, v in texts.items()}


def differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The keys whose hash differs, or that one side lacks, sorted."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="*", help="bench.workloads modules (default: all)")
    parser.add_argument("--corpus", action="store_true", help="the e2e corpus too")
    parser.add_argument("--numba", action="store_true", help="the nopython modules too")
    parser.add_argument("-o", "--output", help="write the hashes (JSON) here")
    parser.add_argument("--against", help="compare with hashes written before")
    opts = parser.parse_args(argv)
    found = hashes(sources(opts.workloads or None, corpus=opts.corpus, numba=opts.numba))
    if opts.output:
        Path(opts.output).write_text(json.dumps(found, indent=1, sort_keys=True))
    print(f"{len(found)} sources hashed")
    if opts.against:
        changed = differences(json.loads(Path(opts.against).read_text()), found)
        for k in changed:
            print(f"differs: {k}")
        print("identical" if not changed else f"{len(changed)} differ")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
