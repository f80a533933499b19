"""A/B of adgen's generated code: another tree's (a ``git worktree``) against this one's, run
side by side in one process, so that the machine's load hits both alike.

    git worktree add --detach /tmp/base HEAD~3
    python -m bench.experiments.generated_ab /tmp/base softmax_xent logreg attention

Each tree compiles the workloads in its own process (``adgen.api.compile_fun`` for the
workload's arguments and ``argnums``, policy "save", single-use where the tree has it: the
code ``adgen.grad`` runs) and hands back the generated module's
source. This process execs both sources, checks that they give the same gradient, then times
the forward and pullback of each and the hand gradient interleaved (15 rounds, CPU time, min
and median per gradient) and takes each one's tracemalloc peak (``bench.memory.peak_bytes``,
min of 3). A workload is named by its module in ``bench/workloads`` and, after a colon, its
index in the module's list (``polybench_stencils:3`` is adi).
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# one BLAS thread, as bench.run times every system: set before numpy loads its thread pool
# (an A/B of mlp or gp-nll timed 53 ms against bench.run's 5 ms with the pool's threads
# contending on a shared machine)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np

from bench.memory import peak_bytes

_ROOT = Path(__file__).resolve().parents[2]


def _workload(name: str) -> Any:
    module, _, index = name.partition(":")
    return importlib.import_module(f"bench.workloads.{module}").workloads()[int(index or 0)]


def sources(names: list[str]) -> dict[str, tuple[str, str]]:
    """name -> (function name, generated module source), compiled by the adgen imported."""
    import inspect

    from adgen.transforms.analyses.kinds import signature

    from adgen.api import compile_fun

    # grad's code: its pullback runs once (a tree from before single_use has none)
    once = {"single_use": True} if "single_use" in inspect.signature(compile_fun).parameters \
        else {}
    out = {}
    for name in names:
        w = _workload(name)
        args = w.make_args(np.random.default_rng(0))
        compiled = compile_fun(w.primal, "save", wrt=tuple(w.argnums), sig=signature(args),
                               **once)
        out[name] = (w.primal.__name__, compiled.source)
    return out


def _sources_of(tree: Path | None, names: list[str]) -> dict[str, tuple[str, str]]:
    """The sources another tree's adgen generates (its src/ first on the path; its
    transforms/ reached through a link src/adgen/transforms, made if missing)."""
    env = dict(os.environ)
    if tree is not None and tree.resolve() == _ROOT:
        tree = None  # this tree itself (its package is the one installed)
    if tree is not None:
        link = tree / "src" / "adgen" / "transforms"
        if not link.exists():
            link.symlink_to(tree / "transforms")
        env["PYTHONPATH"] = str(tree / "src")
    done = subprocess.run([sys.executable, "-c", "import json, sys; sys.path.insert(0, sys.argv[1]); "
                           "from bench.experiments.generated_ab import sources; "
                           "print(json.dumps(sources(sys.argv[2:])))", str(_ROOT), *names],
                          env=env, capture_output=True, text=True, cwd="/", check=False)
    if done.returncode:
        raise SystemExit(done.stderr)
    return {k: tuple(v) for k, v in json.loads(done.stdout).items()}


def _gradient(fname: str, source: str, module: str) -> Callable[..., Any]:
    # the workload module's globals first: the forward reads free names (adi's ADI_A) there
    ns: dict[str, Any] = dict(vars(sys.modules[module]))
    exec(compile("import numpy as np\nfrom adgen.runtime import *\n" + source,  # noqa: S102
                 f"<generated {fname}>", "exec"), ns)
    forward, pullback = ns[f"{fname}_forward"], ns[f"{fname}_pullback"]

    def gradient(*args: Any) -> Any:
        _, saved = forward(*args)
        return pullback(saved, 1.0)
    return gradient


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        raise SystemExit(__doc__)
    base, names = Path(argv[0]), argv[1:] or ["softmax_xent", "logreg", "attention"]
    old, new = _sources_of(base, names), _sources_of(None, names)
    print(os.popen("uptime").read().strip())
    for name in names:
        w = _workload(name)
        args = w.make_args(np.random.default_rng(0))
        calls = {"before": _gradient(*old[name], w.primal.__module__),
                 "after": _gradient(*new[name], w.primal.__module__),
                 "hand": w.hand}
        diff = max((float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
                    for a, b in zip(calls["before"](*args), calls["after"](*args))
                    if a is not None), default=0.0)
        start = time.process_time()
        calls["after"](*args)
        batch = max(3, min(300, int(0.01 / max(time.process_time() - start, 1e-6))))
        times: dict[str, list[float]] = {k: [] for k in calls}
        for _ in range(15):
            for k, call in calls.items():
                gc.collect()
                start = time.process_time()
                for _ in range(batch):
                    call(*args)
                times[k].append((time.process_time() - start) / batch * 1e6)
        peaks = {k: min(peak_bytes(lambda c=call: c(*args)) for _ in range(3)) / 1e3
                 for k, call in calls.items()}
        print(f"{name}: |before - after| {diff:.1e}; " + "; ".join(
            f"{k} {min(v):.1f} / {sorted(v)[len(v) // 2]:.1f} us, peak {peaks[k]:.1f} kB"
            for k, v in times.items()))
    print(os.popen("uptime").read().strip())


if __name__ == "__main__":
    main()
