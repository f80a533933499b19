"""The systems that compute a gradient: the NumPy primal, the hand anchors, adgen and the peers.

Each system offers, per workload, a list of *variants* in order of preference: first the
workload as written (the same source, with ``np`` rebound to the peer's NumPy where it has
one), then rewrites a user would have to make. The harness runs them in order and stops at the
first that gives the right gradient; the ones before it are reported with why they failed, so a
rewrite is never hidden.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.workloads import Workload, rebind

PRIMAL = "primal"  # the NumPy function itself: the time unit of the ×primal column
ANCHOR = "anchor"  # hand-written gradients
ADGEN = "adgen"
EAGER = "eager"  # peers that record a graph at run time
COMPILED = "compiled"  # peers that transform or trace once, then run generated code


@dataclass
class Prepared:
    """A ready gradient computation.

    Attributes:
        call: one evaluation (the timed unit): inputs already in the system's array type.
        extract: turns ``call()``'s result into a tuple of NumPy gradients (not timed).
    """

    call: Callable[[], Any]
    extract: Callable[[Any], tuple[Any, ...]]


@dataclass
class Variant:
    """One way of running a workload on a system.

    Attributes:
        label: what the user runs, e.g. ``as written`` or ``rewrite: functional``.
        rewrite: whether the user had to change the workload's source for it.
        prepare: builds the computation from a workload and its NumPy arguments; may raise.
    """

    label: str
    rewrite: bool
    prepare: Callable[[Workload, tuple[Any, ...]], Prepared]


class System:
    """A gradient system. Subclasses fill in :meth:`variants` (and :meth:`setup`)."""

    name = ""
    group = EAGER
    distributions: tuple[str, ...] = ()  # for the versions table
    imports: tuple[str, ...] = ()  # modules whose absence means "not installed"
    #: whether tracemalloc sees its arrays (NumPy's allocator); torch and XLA use their own
    traces_memory = True

    def missing(self) -> str | None:
        """None when the system can run here, else why not (``not installed: torch``)."""
        for module in self.imports:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                return f"not installed ({module}: {exc.__class__.__name__})"
        return None

    def setup(self) -> None:
        """One-time configuration after import (precision, threads)."""

    def versions(self) -> dict[str, str]:
        result = {}
        for dist in self.distributions:
            try:
                result[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                result[dist] = "not installed"
        return result

    def variants(self, workload: Workload) -> list[Variant]:
        raise NotImplementedError

    def clear_cache(self) -> str:
        """Makes the next build cold; returns how (reported under the cold-start table)."""
        return "fresh function object (module reloaded)"


def _tuple(result: Any, count: int) -> tuple[Any, ...]:
    if count == 1 and not isinstance(result, tuple):
        return (result,)
    return tuple(result)


# --- the NumPy primal and the hand anchors ----------------------------------------------------


class NumpyPrimal(System):
    name = "numpy"
    group = PRIMAL
    distributions = ("numpy",)

    def variants(self, workload: Workload) -> list[Variant]:
        def prepare(w: Workload, args: tuple[Any, ...]) -> Prepared:
            return Prepared(lambda: w.primal(*args), lambda out: ())

        return [Variant("primal only (no gradient)", False, prepare)]


class Hand(System):
    name = "hand"
    group = ANCHOR

    def variants(self, workload: Workload) -> list[Variant]:
        def prepare(w: Workload, args: tuple[Any, ...]) -> Prepared:
            return Prepared(lambda: w.hand(*args), tuple)

        return [Variant("vectorised by hand", False, prepare)]


class HandLoop(System):
    name = "hand-loop"
    group = ANCHOR

    def variants(self, workload: Workload) -> list[Variant]:
        if workload.hand_loop is None:
            return []

        def prepare(w: Workload, args: tuple[Any, ...]) -> Prepared:
            assert w.hand_loop is not None
            return Prepared(lambda: w.hand_loop(*args), tuple)

        return [Variant("loops kept, by hand", False, prepare)]


# --- adgen ------------------------------------------------------------------------------------


class Adgen(System):
    name = "adgen"
    group = ADGEN
    distributions = ("adgen",)
    imports = ("adgen",)

    def variants(self, workload: Workload) -> list[Variant]:
        def prepare(w: Workload, args: tuple[Any, ...]) -> Prepared:
            import adgen

            grad_fn = adgen.grad(w.primal, argnums=w.argnums)
            return Prepared(lambda: grad_fn(*args), lambda g: _tuple(g, len(w.argnums)))

        return [Variant("as written", False, prepare)]

    def clear_cache(self) -> str:
        try:
            pipeline = importlib.import_module("adgen.transforms.pipeline")
        except ImportError:
            return "fresh function object (module reloaded)"
        clear = getattr(pipeline, "clear_cache", None)
        if callable(clear):
            clear()
            return "adgen.transforms.pipeline.clear_cache() and a fresh function object"
        return "fresh function object (module reloaded; the pipeline has no clear_cache())"


# --- peers with a NumPy namespace: autograd, JAX ---------------------------------------------


def _functional_variant(make: Callable[[Callable[..., Any], Workload, tuple[Any, ...]],
                                       Prepared]) -> Variant:
    def prepare(w: Workload, args: tuple[Any, ...]) -> Prepared:
        assert w.functional is not None
        return make(w.functional, w, args)

    return Variant("rewrite: functional, loops kept", True, prepare)


def _standard_variants(workload: Workload,
                       make: Callable[[Callable[..., Any], Workload, tuple[Any, ...]],
                                      Prepared]) -> list[Variant]:
    """``as written`` on the primal, then the functional rewrite if the workload has one."""
    variants = [Variant("as written", False, lambda w, args: make(w.primal, w, args))]
    if workload.functional is not None:
        variants.append(_functional_variant(make))
    return variants


class Autograd(System):
    name = "autograd"
    group = EAGER
    distributions = ("autograd",)
    imports = ("autograd",)

    def variants(self, workload: Workload) -> list[Variant]:
        import autograd
        import autograd.numpy as anp

        def make(fn: Callable[..., Any], w: Workload, args: tuple[Any, ...]) -> Prepared:
            grad_fn = autograd.grad(rebind(fn, np=anp), w.argnums)
            return Prepared(lambda: grad_fn(*args), lambda g: _tuple(g, len(w.argnums)))

        return _standard_variants(workload, make)


class Jax(System):
    """JAX without jit: ``jax.grad`` dispatches one primitive at a time.

    Indexing with a Python int compiles one XLA computation per distinct index, so a scalar
    loop's first call costs about 58 ms an iteration here (fill-1k: 58 s; 3.4 s a call after);
    workloads with more loop iterations than ``max_loop`` are not run.
    """

    name = "jax"
    group = EAGER
    distributions = ("jax", "jaxlib")
    imports = ("jax",)
    traces_memory = False
    jit = False
    max_loop = 30

    def setup(self) -> None:
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")

    def variants(self, workload: Workload) -> list[Variant]:
        if workload.loop_iters > self.max_loop:
            return []
        import jax
        import jax.numpy as jnp

        def make(fn: Callable[..., Any], w: Workload, args: tuple[Any, ...]) -> Prepared:
            grad_fn = jax.grad(rebind(fn, np=jnp), argnums=w.argnums)
            if self.jit:
                grad_fn = jax.jit(grad_fn)
            jargs = tuple(jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)

            def call() -> Any:
                return jax.block_until_ready(grad_fn(*jargs))

            return Prepared(call, lambda g: _tuple(g, len(w.argnums)))

        return _standard_variants(workload, make)


class JaxJit(Jax):
    """``jax.jit(jax.grad(f))``: traced once (Python loops unrolled), compiled by XLA."""

    name = "jax-jit"
    group = COMPILED
    jit = True
    #: Python loop iterations beyond which the unrolled trace is not compiled: XLA took 47 s
    #: for fill-1k here, 88 s CPU for heat's 100 steps, 20 s for kalman's 50, and grows
    #: faster than linearly.
    max_loop = 30


# --- PyTorch ----------------------------------------------------------------------------------


class Torch(System):
    """``torch.autograd.grad`` on a float64 port of the workload."""

    name = "torch"
    group = EAGER
    distributions = ("torch",)
    imports = ("torch",)
    traces_memory = False

    def setup(self) -> None:
        import torch

        torch.set_num_threads(1)
        torch.set_default_dtype(torch.float64)

    def variants(self, workload: Workload) -> list[Variant]:
        import torch

        def make(fn: Callable[..., Any], w: Workload, args: tuple[Any, ...]) -> Prepared:
            port = rebind(fn, torch=torch)
            targs: list[Any] = []
            for n, a in enumerate(args):
                if isinstance(a, np.ndarray):
                    t = torch.from_numpy(a)
                    targs.append(t.requires_grad_(True) if n in w.argnums else t)
                elif n in w.argnums:
                    targs.append(torch.tensor(float(a), requires_grad=True))
                else:
                    targs.append(a)
            leaves = [targs[n] for n in w.argnums]

            def call() -> Any:
                return torch.autograd.grad(port(*targs), leaves)

            return Prepared(call, tuple)

        variants = []
        if workload.torch_port is not None:
            port = workload.torch_port
            variants.append(Variant("port, in-place writes kept", False,
                                    lambda w, args: make(port, w, args)))
        if workload.torch_functional is not None:
            functional = workload.torch_functional
            variants.append(Variant("rewrite: functional port", True,
                                    lambda w, args: make(functional, w, args)))
        return variants


# --- MyGrad -----------------------------------------------------------------------------------


def _mygrad_numpy() -> types.SimpleNamespace:
    """NumPy's namespace with buffers allocated as float64 mygrad tensors (the rewrite a
    MyGrad user makes: ``np.empty`` gives an ndarray, and a tensor written into it loses its
    graph)."""
    import mygrad as mg

    def alloc(make: Callable[..., Any]) -> Callable[..., Any]:
        def allocate(shape: Any, dtype: Any = np.float64, **kwargs: Any) -> Any:
            return make(shape, dtype=dtype, **kwargs)

        return allocate

    names = {k: getattr(np, k) for k in dir(np) if not k.startswith("__")}
    names.update(empty=alloc(mg.empty), zeros=alloc(mg.zeros), empty_like=alloc(mg.empty_like),
                 zeros_like=alloc(mg.zeros_like), stack=mg.stack, concatenate=mg.concatenate)
    return types.SimpleNamespace(**names)


class MyGrad(System):
    name = "mygrad"
    group = EAGER
    distributions = ("mygrad",)
    imports = ("mygrad",)

    def variants(self, workload: Workload) -> list[Variant]:
        import mygrad as mg

        def make(fn: Callable[..., Any], w: Workload, args: tuple[Any, ...]) -> Prepared:
            margs = tuple(mg.tensor(a) if n in w.argnums else a for n, a in enumerate(args))

            def call() -> Any:
                loss = fn(*margs)
                if not isinstance(loss, mg.Tensor):
                    raise TypeError(f"the output is a {type(loss).__name__}, not a mygrad "
                                    "Tensor: the graph was lost")
                loss.backward()
                return tuple(margs[n].grad for n in w.argnums)

            def extract(grads: tuple[Any, ...]) -> tuple[Any, ...]:
                if any(g is None for g in grads):
                    raise TypeError("no gradient reached an argument: the graph was lost")
                return tuple(np.array(g) for g in grads)

            return Prepared(call, extract)

        variants = [Variant("as written", False, lambda w, args: make(w.primal, w, args))]
        if "np.empty" in _source(workload.primal) or "np.zeros" in _source(workload.primal):
            shim = _mygrad_numpy()
            variants.append(Variant("rewrite: buffers allocated by mygrad", True,
                                    lambda w, args: make(rebind(w.primal, np=shim), w, args)))
        if workload.functional is not None:
            variants.append(_functional_variant(make))
        return variants


def _source(fn: Callable[..., Any]) -> str:
    import inspect

    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


# --- tangent ----------------------------------------------------------------------------------


class Tangent(System):
    """tangent-ad: Google's source-to-source AD, revived (gradients as generated Python)."""

    name = "tangent"
    group = COMPILED
    distributions = ("tangent-ad",)
    imports = ("tangent",)

    def variants(self, workload: Workload) -> list[Variant]:
        import tangent

        def make(fn: Callable[..., Any], w: Workload, args: tuple[Any, ...]) -> Prepared:
            grad_fn = tangent.grad(fn, wrt=w.argnums, verbose=0)
            return Prepared(lambda: grad_fn(*args), lambda g: _tuple(g, len(w.argnums)))

        return _standard_variants(workload, make)

    def clear_cache(self) -> str:
        import tangent

        tangent.clear_cache()
        return "tangent.clear_cache() (disk cache off: TANGENT_DISK_CACHE=0)"


ALL: tuple[type[System], ...] = (NumpyPrimal, Hand, HandLoop, Adgen, Autograd, Jax, JaxJit,
                                 Torch, MyGrad, Tangent)
ANCHORS = ("numpy", "hand", "hand-loop")


def by_name(names: list[str] | None = None, *,
            jax_max_loop: int | None = None) -> list[System]:
    """The systems, in table order; ``names`` selects some of them.

    JAX runs no workload with more than ``jax_max_loop`` loop iterations (default 30: jit
    unrolls them, eager compiles per index; a full run must stay a few minutes).
    """
    systems = [cls() for cls in ALL]
    if jax_max_loop is not None:
        for system in systems:
            if isinstance(system, Jax):
                system.max_loop = jax_max_loop
    if names is None:
        return systems
    unknown = set(names) - {s.name for s in systems}
    if unknown:
        raise SystemExit(f"unknown system(s): {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(s.name for s in systems)}")
    return [s for s in systems if s.name in names]
