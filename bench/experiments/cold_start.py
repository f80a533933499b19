"""Cold start in fresh processes: ``import adgen``, the first gradient, the ``adgen`` CLI.

    python -m bench.experiments.cold_start              # 7 fresh processes per measurement
    python -m bench.experiments.cold_start --runs 15

Each run is a new Python process, bytecode cached (in a private directory, warmed by a first
process: PYTHONDONTWRITEBYTECODE in the environment is overridden). Times
are the process's CPU time (``time.process_time`` inside it; the children's rusage for the
CLI), whose median is printed next to the wall time's: on this shared machine wall time also
counts the waits for a core. Measured:

- ``import numpy``, then ``import adgen`` (what adgen adds beyond NumPy's import);
- the first ``adgen.grad(f)(x)`` of a 5-line function in that process (compilation included);
- ``adgen FILE.py`` end to end (interpreter start, import, compiling and printing the adjoint
  of one @differentiable function with a loop).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMALL = '''import numpy as np


def f(x):
    y = np.sin(x) * x
    z = np.exp(-y)
    w = z / (1.0 + x ** 2)
    return np.sum(w * y)
'''

CLI_FILE = '''import numpy as np

import adgen


@adgen.differentiable
def loss(w, x):
    h = np.empty((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):
        h[i] = np.tanh(x[i] @ w)
    return np.sum(h ** 2)
'''

PROBE = '''import sys, time
c0, w0 = time.process_time(), time.perf_counter()
import numpy as np
c1, w1 = time.process_time(), time.perf_counter()
import adgen
c2, w2 = time.process_time(), time.perf_counter()
sys.path.insert(0, sys.argv[1])
from small5 import f
x = np.linspace(0.1, 1.0, 5)
c3, w3 = time.process_time(), time.perf_counter()
adgen.grad(f)(x)
c4, w4 = time.process_time(), time.perf_counter()
print(c1 - c0, c2 - c1, c4 - c3, w1 - w0, w2 - w1, w4 - w3)
'''


def measure(runs: int = 7) -> dict[str, float]:
    """Medians over ``runs`` fresh processes, in seconds: CPU time under the keys
    ``import numpy``, ``import adgen`` (beyond numpy), ``first gradient``, ``cli``, and wall
    time under the same keys with `` wall`` appended; the minimum CPU time under each key
    with `` min`` appended (on a loaded machine the least disturbed run); ``runs`` too."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        # Bytecode cached, as after an install, whatever this shell says
        # (PYTHONDONTWRITEBYTECODE=1 would compile every module of numpy and adgen in every
        # process: +250 ms here); the caches go to a private directory, not into the tree.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp, "pycache"))
        Path(tmp, "small5.py").write_text(SMALL)
        Path(tmp, "model.py").write_text(CLI_FILE)
        cli = [str(Path(sys.executable).with_name("adgen")), str(Path(tmp, "model.py"))]
        subprocess.run([sys.executable, "-c", PROBE, tmp], env=env, check=True,
                       capture_output=True)  # warms the bytecode caches
        subprocess.run(cli, env=env, check=True, capture_output=True)
        rows: list[list[float]] = []
        cli_cpu: list[float] = []
        cli_wall: list[float] = []
        for _ in range(runs):
            out = subprocess.run([sys.executable, "-c", PROBE, tmp], env=env, check=True,
                                 capture_output=True, text=True).stdout
            rows.append([float(v) for v in out.split()])
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(cli, env=env, check=True, capture_output=True)
            cli_wall.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cli_cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    cols = [statistics.median(col) for col in zip(*rows)]
    mins = [min(col) for col in zip(*rows)]
    return {"import numpy min": mins[0], "import adgen min": mins[1],
            "first gradient min": mins[2], "cli min": min(cli_cpu),
            "import numpy": cols[0], "import adgen": cols[1], "first gradient": cols[2],
            "import numpy wall": cols[3], "import adgen wall": cols[4],
            "first gradient wall": cols[5], "cli": statistics.median(cli_cpu),
            "cli wall": statistics.median(cli_wall), "runs": float(runs)}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args(argv)
    m = measure(options.runs)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; "
          f"min / median of {options.runs} fresh processes")
    print("| measurement | CPU time (min / median) | wall time (median) |")
    print("|---|---|---|")
    for key, label in (("import numpy", "import numpy"),
                       ("import adgen", "import adgen, beyond numpy"),
                       ("first gradient", "first gradient of a 5-line function"),
                       ("cli", "`adgen FILE.py` end to end")):
        print(f"| {label} | {_ms(m[key + ' min'])} / {_ms(m[key])} | {_ms(m[key + ' wall'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
