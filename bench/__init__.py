"""adgen's benchmark suite: workloads, peers and the harness (``python -m bench.run``).

Nothing here may import numpy at package import time: ``bench.run`` pins the thread pools
through environment variables, which only take effect before numpy, torch and jax load.
"""
