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
