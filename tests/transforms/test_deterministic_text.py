"""The generated text does not depend on str hashing: the same function compiled in processes
with different PYTHONHASHSEED gives the same source (shape_saves.shape_reads iterated a set
of names: the order of syr2k's shape bindings changed between processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import numpy as np, adgen
from bench.workloads import polybench_linalg as m
w = [w for w in m.workloads(quick=True) if w.name == "pb-syr2k"][0]
args = w.make_args(np.random.default_rng(0))
print(adgen.source(w.primal, *args))
print(adgen.source(w.primal, *args, mutation="strict"))
"""


def test_the_source_is_the_same_whatever_the_hash_seed():
    texts = set()
    for seed in ("0", "1", "2", "3", "5"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
        assert "syr2k_pullback" in out
        texts.add(out)
    assert len(texts) == 1


USER_CALL = '''import numpy as np


def helper(alpha, beta, gamma, delta):
    return np.sum(alpha * beta * gamma * delta)


def loss(alpha, beta, gamma, delta):
    r = helper(alpha, beta, gamma, delta)
    alpha[0] = 0.0
    beta[0] = 0.0
    gamma[0] = 0.0
    delta[0] = 0.0
    return r + np.sum(alpha + beta + gamma + delta)
'''

CALL_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
import adgen, det_user
print(adgen.source(det_user.loss))
"""


def test_the_captures_after_a_user_call_do_not_depend_on_the_hash_seed(tmp_path: Path):
    # the arguments the helper's pullback reads are captured after the call, one line each:
    # their order was a set's (five seeds gave five texts)
    (tmp_path / "det_user.py").write_text(USER_CALL)
    texts = set()
    for seed in ("0", "1", "2", "3", "5"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", CALL_PROBE, str(tmp_path)], env=env,
                             cwd=ROOT, check=True, capture_output=True, text=True).stdout
        assert "saved_delta_1 = capture(delta" in out
        texts.add(out)
    assert len(texts) == 1


def test_a_user_call_whose_arguments_are_written_after_it(tmp_path: Path):
    import importlib.util

    import numpy as np
    from gradcheck import check_grad

    (tmp_path / "det_user_grad.py").write_text(USER_CALL)
    spec = importlib.util.spec_from_file_location("det_user_grad", tmp_path / "det_user_grad.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(3)
    args = tuple(rng.standard_normal(4) for _ in range(4))
    for mutation in ("save", "strict"):
        check_grad(module.loss, args, argnums=(0, 1, 2, 3), mutation=mutation)
