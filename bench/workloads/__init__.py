"""The benchmark workloads and their registry.

Each workload module holds a plain NumPy primal (written the way a user writes it, in-place
writes included), a hand-written gradient (the limit anchor), for loop workloads a hand adjoint
that keeps the primal's loops (what a source-to-source tool that does not vectorise can at best
produce), a loop-keeping functional rewrite (no in-place writes, for the peers that cannot
mutate arrays) and PyTorch ports.

Primals, rewrites and ports name their array library through the module globals ``np`` and
``torch`` only and call no helper, so a peer runs the *same source* with the global rebound
(:func:`rebind`): ``np`` -> ``autograd.numpy`` or ``jax.numpy``, ``torch`` -> torch.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The modules that hold workloads, in table order.
MODULES = ("sum3", "mse", "logreg", "mlp", "rnn", "heat", "fill", "conv", "softmax_xent",
           "attention", "gp", "softdtw", "kalman", "rk4", "polybench_stencils",
           "polybench_linalg")

VECTORISED = "vectorised"  # no Python loop in the primal: judged against the hand gradient
LOOP = "loop"  # judged against the loop-keeping hand adjoint


@dataclass
class Workload:
    """One benchmark problem.

    Attributes:
        name: the table label, e.g. ``fill-1k``.
        kind: ``VECTORISED`` or ``LOOP``.
        module: the module that defines the functions (reloaded for cold-start measurements).
        primal: the NumPy function, as a user writes it.
        argnums: the positional arguments differentiated.
        make_args: a seeded generator of the arguments.
        hand: the hand-written gradient; returns one gradient per entry of ``argnums``.
        hand_loop: for loop workloads, the hand adjoint that keeps the primal's loops.
        functional: the primal rewritten without in-place writes, loops kept (None: the primal
            writes nothing in place, so no rewrite is needed).
        torch_port: the primal in PyTorch, in-place writes kept.
        torch_functional: the PyTorch port without in-place writes (None: not needed).
        size: a human description of the problem size.
        loop_iters: Python loop iterations of one primal call (jax.jit unrolls them all).
        fd_eps: step of the central-difference check of the hand gradients.
    """

    name: str
    kind: str
    module: types.ModuleType
    primal: Callable[..., Any]
    argnums: tuple[int, ...]
    make_args: Callable[[Any], tuple[Any, ...]]
    hand: Callable[..., tuple[Any, ...]]
    hand_loop: Callable[..., tuple[Any, ...]] | None = None
    functional: Callable[..., Any] | None = None
    torch_port: Callable[..., Any] | None = None
    torch_functional: Callable[..., Any] | None = None
    size: str = ""
    loop_iters: int = 0
    fd_eps: float = 1e-6
    tags: dict[str, Any] = field(default_factory=dict)


def rebind(fn: Callable[..., Any], **names: Any) -> Callable[..., Any]:
    """The function ``fn`` with some of its globals replaced (``np=autograd.numpy``).

    The code object is shared, so ``inspect.getsource`` still finds the original source.
    Helper functions of the same module that ``fn`` calls (an ODE's right-hand side) are
    rebound the same way, all sharing one new globals dict, so a peer runs the helper on its
    own arrays too.
    """
    globals_ = {**fn.__globals__, **names}
    _rebind_into(fn, globals_)
    return globals_[_REBOUND][fn.__name__]


_REBOUND = "__bench_rebound__"  # the rebound functions, by name, inside the new globals


def _rebind_into(fn: Callable[..., Any], globals_: dict[str, Any]) -> None:
    """Binds ``fn`` and the same-module helpers it names to ``globals_`` (each once)."""
    done = globals_.setdefault(_REBOUND, {})
    if fn.__name__ in done:
        return
    new = types.FunctionType(fn.__code__, globals_, fn.__name__, fn.__defaults__,
                             fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    done[fn.__name__] = new
    for name in fn.__code__.co_names:
        helper = globals_.get(name)
        if (isinstance(helper, types.FunctionType) and helper.__module__ == fn.__module__
                and name not in done):
            _rebind_into(helper, globals_)
            globals_[name] = done[name]


def load(names: Sequence[str] | None = None, *, quick: bool = False) -> list[Workload]:
    """All workloads, in table order (each module's ``workloads(quick)``)."""
    result: list[Workload] = []
    for mod_name in names or MODULES:
        module = importlib.import_module(f"bench.workloads.{mod_name}")
        result.extend(module.workloads(quick=quick))
    return result


def reload_primal(workload: Workload) -> Callable[..., Any]:
    """A freshly defined primal: the workload's module re-imported, its function looked up.

    Used for cold-start timings when the compiler offers no cache to clear: a new function
    object (and code object) is what a user gets in a new process.
    """
    module = importlib.reload(workload.module)
    return getattr(module, workload.primal.__name__)
