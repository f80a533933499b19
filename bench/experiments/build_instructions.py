"""Instructions a cold build executes, counted by ``valgrind --tool=cachegrind``: the stable
measure of build time on a shared machine (the count does not depend on the load; wall and
CPU times of a 100 ms build swing by a third here).

    python -m bench.experiments.build_instructions                  # adi, deriche, soft-DTW, kalman
    python -m bench.experiments.build_instructions --workloads pb-adi --first-gradient
    python -m bench.experiments.build_instructions --tree /tmp/base  # another tree's adgen

A workload's cold build is what the bench's cold-start table times: after one build of the
workload (the warm-up the timed phase gives), ``clear_cache()``, the workload's module
reloaded (a freshly defined function) and ``gc.collect()`` (the collection debt of what came
before is not the build's), the build and first call of ``adgen.grad``. It is counted as the
difference between two processes, one that makes that build and one that stops before it.
The first gradient is ``cold_start``'s: a fresh process's ``adgen.grad(f)(x)`` of its 5-line
function, beyond ``import numpy, adgen`` (bytecode cached in a private directory).
``PYTHONHASHSEED=0`` in every process. ``--tree`` runs another tree's adgen (its ``src`` first
on the path, its ``transforms`` reached through a link ``src/adgen/transforms``, made if
missing, as ``generated_ab`` does), so two trees can be compared.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.experiments.cold_start import SMALL

_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_WORKLOADS = ("pb-adi", "pb-deriche", "soft-dtw", "kalman")

# the process that builds (or stops before the cold build): argv workload, "0" or "1"
_BUILD = '''import gc, importlib, sys
import numpy as np
import adgen
from adgen.transforms import pipeline
from bench.workloads import load

w = next(x for x in load() if x.name == sys.argv[1])
args = w.make_args(np.random.default_rng(0))
adgen.grad(w.primal, argnums=w.argnums)(*args)  # the warm-up
module = importlib.reload(w.module)
fresh = getattr(module, w.primal.__name__)
pipeline.clear_cache()
gc.collect()
if sys.argv[2] == "1":
    adgen.grad(fresh, argnums=w.argnums)(*args)
'''

# the first gradient: argv the directory of small5.py, then "numpy", "import" or "grad"
_FIRST = '''import sys
import numpy as np
if sys.argv[2] != "numpy":
    import adgen
if sys.argv[2] == "grad":
    sys.path.insert(0, sys.argv[1])
    from small5 import f
    adgen.grad(f)(np.linspace(0.1, 1.0, 5))
'''


def _instructions(code: str, argv: list[str], env: dict[str, str]) -> int:
    """The instructions one process running ``code`` executes (cachegrind's total)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "cachegrind.out")
        done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                               f"--cachegrind-out-file={out}", sys.executable, "-c", code,
                               *argv], env=env, capture_output=True, text=True, cwd="/",
                              check=False)
        if done.returncode:
            raise SystemExit(done.stderr[-2000:])
        found = re.search(r"^summary:\s+(\d+)", out.read_text(), re.M)
        if found is None:
            raise SystemExit("no summary in cachegrind's output")
        return int(found.group(1))


def _env(tree: Path | None, pycache: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPYCACHEPREFIX=pycache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as after an install
    path = [str(_ROOT)]
    if tree is not None and tree.resolve() != _ROOT:
        link = tree / "src" / "adgen" / "transforms"
        if not link.exists():
            link.symlink_to(tree / "transforms")
        path.insert(0, str(tree / "src"))
    env["PYTHONPATH"] = os.pathsep.join(path)
    return env


def measure(workloads: list[str], first_gradient: bool = False,
            tree: Path | None = None) -> dict[str, int]:
    """Instructions of each workload's cold build (keyed by its name) and, if asked, of the
    first gradient (``first gradient``) and of ``import adgen`` beyond NumPy's
    (``import adgen``)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    out: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as pycache:
        env = _env(tree, pycache)
        # warm the bytecode caches, so no count includes compiling a module
        subprocess.run([sys.executable, "-c", _BUILD, workloads[0] if workloads else "sum3",
                        "0"], env=env, check=True, capture_output=True, cwd="/")
        for name in workloads:
            out[name] = _instructions(_BUILD, [name, "1"], env) - \
                _instructions(_BUILD, [name, "0"], env)
        if first_gradient:
            with tempfile.TemporaryDirectory() as tmp:
                Path(tmp, "small5.py").write_text(SMALL)
                subprocess.run([sys.executable, "-c", _FIRST, tmp, "grad"], env=env,
                               check=True, capture_output=True, cwd="/")
                counts = {k: _instructions(_FIRST, [tmp, k], env)
                          for k in ("numpy", "import", "grad")}
            out["import adgen"] = counts["import"] - counts["numpy"]
            out["first gradient"] = counts["grad"] - counts["import"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS),
                        help="comma-separated bench workload names ('' for none)")
    parser.add_argument("--first-gradient", action="store_true")
    parser.add_argument("--tree", type=Path, default=None,
                        help="another tree (a git worktree) whose adgen to count")
    options = parser.parse_args(argv)
    names = [n for n in options.workloads.split(",") if n]
    counts = measure(names, options.first_gradient, options.tree)
    print("| build | instructions |")
    print("|---|---|")
    for key, n in counts.items():
        print(f"| {key} | {n / 1e6:.0f} M |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
