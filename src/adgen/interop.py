"""adgen functions as differentiable operations of PyTorch and JAX programs.

    import adgen.interop

    layer = adgen.interop.torch_function(simulate)     # a torch.autograd.Function
    loss = layer(params_tensor, data_tensor).sum()
    loss.backward()                                    # runs adgen's pullback

    op = adgen.interop.jax_function(simulate)          # a jax.custom_vjp
    jax.jit(jax.grad(lambda p: op(p, data)))(params)

Neither torch nor jax is a dependency of adgen: each is imported when its wrapper is built
(``pip install 'adgen[interop]'``). The NumPy function runs as it is; adgen's pullback
(:func:`adgen.vjp`) gives the backward pass.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adgen import api, arguments
from adgen.errors import ArgnumsError, NonDifferentiableError, UnsupportedError
from adgen.transforms.analyses.kinds import signature


def _require(module: str, what: str) -> Any:
    """Imports an optional framework, or says which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UnsupportedError(
            f"adgen.interop.{what} needs {module}, which is not installed",
            hint=f"pip install {module} (or pip install 'adgen[interop]')") from exc


def _argnums(argnums: int | Sequence[int] | None, candidates: list[int],
             nargs: int) -> tuple[int, ...]:
    """The positions to differentiate: ``argnums``, or every candidate position."""
    if argnums is None:
        return tuple(candidates)
    nums = arguments.normalize_argnums(argnums, nargs)  # raises ArgnumsError
    return tuple(sorted(set(nums)))


def _written(fun: Callable[..., Any], args: tuple[Any, ...], mutation: str) -> set[int] | None:
    """The positions of the arguments ``fun`` writes in place, from adgen's analysis (None:
    the analysis could not tell, any of them may be written)."""
    # a bound method or callable object: its function, the receiver its argument 0
    target, receiver = arguments.split_receiver(getattr(fun, "__adgen_primal__", fun))
    compiled = api.compile_fun(target, mutation, sig=signature((*receiver, *args)))
    written = compiled.written_params
    code = getattr(target, "__code__", None)
    if written is True or code is None:
        return None
    names = code.co_varnames[:code.co_argcount][len(receiver):]
    return {k for k, name in enumerate(names) if name in written and k < len(args)}


def _name(fun: Callable[..., Any]) -> str:
    return getattr(fun, "__qualname__", getattr(fun, "__name__", repr(fun)))


def _param(fun: Callable[..., Any], k: int) -> str:
    """The name of ``fun``'s positional parameter ``k`` (``argument k`` when unknown)."""
    code = getattr(arguments.primal_function(fun), "__code__", None)
    names = code.co_varnames[:code.co_argcount] if code is not None else ()
    return names[k] if k < len(names) else f"argument {k}"


# --------------------------------------------------------------------------------------------
# PyTorch


def torch_function(fun: Callable[..., Any], argnums: int | Sequence[int] | None = None, *,
                   mutation: str = "save") -> Callable[..., Any]:
    """``fun`` (a NumPy function) as an operation on torch tensors, differentiable by torch.

    The result is a function taking ``fun``'s arguments with torch tensors in place of arrays.
    It is built on a ``torch.autograd.Function``: the forward converts the tensors to NumPy
    arrays and runs ``fun`` under :func:`adgen.vjp`; the backward runs adgen's pullback. So it
    composes with torch layers and losses, passes ``torch.autograd.gradcheck``, and works
    under ``torch.func.grad`` and (one call per batch element) ``torch.func.vmap``. It is
    differentiable once: a second derivative (``create_graph=True`` through it) raises.

    CPU tensors are shared with NumPy, not copied (``Tensor.numpy()`` and
    ``torch.from_numpy``): when ``fun`` writes an argument in place the tensor changes exactly
    as the plain function changes the array, and torch's version counter is bumped, so a torch
    operation that saved the tensor for its own backward raises instead of using the new
    values. The exception is a tensor that requires grad: torch's graph could not see a write
    into it, so ``fun`` writes a copy and the tensor keeps its value (gradients are with
    respect to the values passed in). Tensors on other devices go through the CPU (copied
    there and, when written, back).

    Args:
        fun: a Python function on NumPy arrays and numbers that adgen can differentiate. It
            may return a float, an array, or a tuple of them.
        argnums: the positional arguments that get gradients; None (default): every tensor.
            A tensor outside ``argnums`` that requires grad is refused: torch would take its
            gradient to be zero.
        mutation: adgen's policy, "save" (default) or "strict".

    Returns:
        A function of ``fun``'s arguments returning tensors. Keyword arguments are passed to
        ``fun`` and get no gradient.

    Raises:
        UnsupportedError: torch is not installed.
        AdgenError: ``fun`` cannot be differentiated (raised here, when it is wrapped).
    """
    torch = _require("torch", "torch_function")
    api.compile_fun(fun, mutation)  # static errors surface here, as with @adgen.differentiable

    class AdgenFunction(torch.autograd.Function):
        """``fun`` as a torch.autograd.Function whose backward is adgen's pullback."""

        @staticmethod
        def forward(call: _TorchCall, *args: Any) -> Any:  # type: ignore[override]
            return call.forward(torch, args)

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            call = inputs[0]
            ctx.call = call
            ctx.set_materialize_grads(True)
            if call.frozen:  # integer outputs: torch must not ask for their gradients
                ctx.mark_non_differentiable(*call.frozen)
            ctx.save_for_backward(*[inputs[1 + k] for k in call.wrt
                                    if isinstance(inputs[1 + k], torch.Tensor)])

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
            # through a second Function: under torch.func its forward gets plain tensors,
            # whose memory NumPy can read (the backward itself gets torch.func's wrappers).
            # It takes the inputs too, only so that a second derivative reaches its backward,
            # which raises, and is not taken to be zero.
            return (None, *AdgenPullback.apply(ctx.call, len(grads), *grads,
                                               *ctx.saved_tensors))

        @staticmethod
        def vmap(info: Any, in_dims: tuple[Any, ...], call: _TorchCall,
                 *args: Any) -> tuple[Any, Any]:
            # torch.func.vmap: one call of fun per batch element, outputs stacked on dim 0
            results = []
            call.batch = [call.again() for _ in range(info.batch_size)]
            for b, element in enumerate(call.batch):
                item = [a if d is None else a.select(d, b) for a, d in zip(args, in_dims[1:])]
                results.append(AdgenFunction.apply(element, *item))
            if isinstance(results[0], tuple):
                stacked = tuple(torch.stack(list(r)) for r in zip(*results))
                return stacked, (0,) * len(stacked)
            return torch.stack(results), 0

    class AdgenPullback(torch.autograd.Function):
        """adgen's pullback of one call of ``fun``, as a torch operation (not differentiable:
        a second derivative through it raises)."""

        @staticmethod
        def forward(call: _TorchCall, count: int, *grads: Any) -> Any:  # type: ignore[override]
            return call.backward(torch, grads[:count])

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            ctx.call = inputs[0]

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            raise UnsupportedError(
                f"a second derivative through adgen.interop.torch_function({_name(fun)}) is "
                "not supported: its backward runs adgen's pullback outside torch's graph",
                hint="differentiate once (no create_graph=True, no torch.func.grad of grad), "
                     "or use adgen's own higher-order API on the NumPy function")

        @staticmethod
        def vmap(info: Any, in_dims: tuple[Any, ...], call: _TorchCall, count: int,
                 *grads: Any) -> tuple[Any, Any]:
            # a batch of cotangents for one forward call: the pullback once per element
            results = []
            for b in range(info.batch_size):
                item = [g if d is None else g.select(d, b) for g, d in zip(grads, in_dims[2:])]
                # one forward with a batch of cotangents (jacobians), or the backward of a
                # batched forward (vmap of grad): element b's own pullback
                element = call if call.pullback is not None else call.batch[b]
                results.append(AdgenPullback.apply(element, count, *item))
            stacked = tuple(None if r[0] is None else torch.stack(list(r))
                            for r in zip(*results))
            return stacked, tuple(None if r is None else 0 for r in stacked)

    AdgenFunction.__name__ = AdgenFunction.__qualname__ = f"AdgenFunction_{fun.__name__}" \
        if hasattr(fun, "__name__") else "AdgenFunction"

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        call = _TorchCall(fun, argnums, mutation, kwargs)
        call.check(torch, args)
        return AdgenFunction.apply(call, *args)

    wrapped.torch_function = AdgenFunction  # type: ignore[attr-defined]
    return wrapped


class _TorchCall:
    """One call of a :func:`torch_function`: carries ``fun``, its options, and from the
    forward to the backward the pullback (torch's Function takes it as a first, non-tensor
    input, the way a ``ctx`` object cannot be passed to ``forward`` in the setup_context
    style that torch.func needs)."""

    def __init__(self, fun: Callable[..., Any], argnums: Any, mutation: str,
                 kwargs: dict[str, Any]) -> None:
        self.fun, self.argnums, self.mutation, self.kwargs = fun, argnums, mutation, kwargs
        self.pullback: Callable[[Any], tuple[Any, ...]] | None = None
        self.specs: list[tuple[Any, Any]] = []  # per positional argument: (dtype, device)
        self.wrt: tuple[int, ...] = ()
        self.out_kind: str = "one"
        self.out_dtypes: list[Any] = []
        self.frozen: tuple[Any, ...] = ()
        self.written: list[int] = []  # tensors fun wrote in place (none requires grad)
        self.batch: list[_TorchCall] = []  # under torch.func.vmap: one call per element

    def again(self) -> _TorchCall:
        """A fresh call with the same function and options (vmap runs one per element)."""
        call = _TorchCall(self.fun, self.argnums, self.mutation, self.kwargs)
        call.wrt = self.wrt
        return call

    def check(self, torch: Any, args: tuple[Any, ...]) -> None:
        """Refuses, before anything runs, a tensor that requires grad outside ``argnums``."""
        tensors = [k for k, a in enumerate(args) if isinstance(a, torch.Tensor)]
        self.wrt = _argnums(self.argnums, tensors, len(args))
        for k in tensors:
            if args[k].requires_grad and k not in self.wrt:
                raise ArgnumsError(
                    f"argument {k} of {_name(self.fun)} requires grad, but argnums="
                    f"{self.argnums!r} leaves it out: torch would take its gradient to be zero",
                    hint=f"add {k} to argnums, or pass the tensor .detach()ed")
        for k in self.wrt:
            a = args[k]
            if isinstance(a, torch.Tensor) and not (a.is_floating_point()):
                raise NonDifferentiableError(
                    f"argument {k} of {_name(self.fun)} is a tensor of dtype {a.dtype}: it has "
                    "no gradient", hint="pass a float tensor, or leave it out of argnums")
        for key, value in self.kwargs.items():
            if isinstance(value, torch.Tensor) and value.requires_grad:
                raise ArgnumsError(
                    f"keyword argument {key}= of {_name(self.fun)} requires grad, but keyword "
                    "arguments get no gradient", hint="pass it positionally")

    def forward(self, torch: Any, args: tuple[Any, ...]) -> Any:
        arrays = []
        for a in args:
            if isinstance(a, torch.Tensor):
                self.specs.append((a.dtype, a.device))
                arrays.append(_to_numpy(a))
            else:
                self.specs.append((None, None))
                arrays.append(a)
        kwargs = {k: _to_numpy(v) if isinstance(v, torch.Tensor) else v
                  for k, v in self.kwargs.items()}
        tensors = [k for k, a in enumerate(args) if isinstance(a, torch.Tensor)]
        written = _written(self.fun, tuple(arrays), self.mutation)
        before: dict[int, np.ndarray] = {}
        for k in tensors if written is None else sorted(written & set(tensors)):
            if args[k].requires_grad:
                # torch's graph could not see a write into a tensor it differentiates (users
                # of its new values would get gradients of the old): fun writes a copy
                arrays[k] = arrays[k].copy()
            elif written is None:
                before[k] = arrays[k].copy()  # the analysis could not tell: compare after
            else:
                self.written.append(k)
        out, self.pullback = api.vjp(self.fun, *arrays, mutation=self.mutation, **kwargs)
        self.written += [k for k, old in before.items()
                         if not np.array_equal(arrays[k], old, equal_nan=True)]
        for k in self.written:
            a = args[k]
            if a.device.type != "cpu":  # the write went to a CPU copy: bring it back
                with torch.no_grad():
                    a.copy_(torch.from_numpy(np.asarray(arrays[k])))
            # a torch operation that saved the tensor for its backward now raises there
            torch.autograd.graph.increment_version(a)
        inputs = [a for a in arrays if isinstance(a, np.ndarray)]
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
        if isinstance(out, (tuple, list)):
            self.out_kind = "tuple"
            result = tuple(self._to_torch(torch, o, inputs, device) for o in out)
        else:
            result = self._to_torch(torch, out, inputs, device)
        outs = result if isinstance(result, tuple) else (result,)
        self.out_dtypes = [o.dtype if isinstance(o, torch.Tensor) else None for o in outs]
        self.frozen = tuple(o for o in outs
                            if isinstance(o, torch.Tensor) and not o.is_floating_point())
        return result

    def _to_torch(self, torch: Any, value: Any, inputs: list[np.ndarray], device: Any) -> Any:
        if isinstance(value, (float, int, np.number)) and not isinstance(value, bool):
            value = np.asarray(value)
        if not isinstance(value, np.ndarray):
            raise UnsupportedError(
                f"{_name(self.fun)} returned a {type(value).__name__}: torch_function needs a "
                "number, an array, or a tuple of them",
                hint="return the arrays (a dict or object output: return a tuple)")
        # an output that is (a view of) an argument gets its own memory: torch must not see two
        # unrelated tensors sharing storage; likewise a read-only array
        if not value.flags.writeable or any(np.may_share_memory(value, a) for a in inputs):
            value = value.copy()
        tensor = torch.from_numpy(value)
        return tensor if device is None or device.type == "cpu" else tensor.to(device)

    def backward(self, torch: Any, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        assert self.pullback is not None
        bars = [None if g is None or dt is None or not dt.is_floating_point
                else _to_numpy(g.detach()) for g, dt in zip(grads, self.out_dtypes)]
        out_bar = tuple(bars) if self.out_kind == "tuple" else bars[0]
        cotangents = self.pullback(out_bar)
        result: list[Any] = []
        taken: list[np.ndarray] = [b for b in bars if isinstance(b, np.ndarray)]
        for k, (ct, (dtype, device)) in enumerate(zip(cotangents, self.specs)):
            if dtype is None or k not in self.wrt or ct is None:
                result.append(None)
                continue
            ct = np.asarray(ct)
            # torch may accumulate into a gradient in place: it must not share memory with a
            # cotangent it gave us or with another gradient
            if any(np.may_share_memory(ct, t) for t in taken) or not ct.flags.writeable:
                ct = ct.copy()
            taken.append(ct)
            result.append(torch.from_numpy(ct).to(dtype=dtype, device=device))
        return tuple(result)


def _to_numpy(tensor: Any) -> np.ndarray:
    """The tensor's data as an array: the same memory for a CPU tensor, a copy otherwise."""
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    return t.numpy()


# --------------------------------------------------------------------------------------------
# JAX


def jax_function(fun: Callable[..., Any], argnums: int | Sequence[int] | None = None, *,
                 mutation: str = "save", result_shape: Any = None) -> Callable[..., Any]:
    """``fun`` (a NumPy function) as an operation on JAX arrays, differentiable by JAX.

    The result is a ``jax.custom_vjp`` function. Its forward runs ``fun`` and its backward runs
    adgen's pullback, both through ``jax.pure_callback``, so ``jax.grad``, ``jax.jit`` and
    ``jax.vmap`` (one callback per batch element, ``vmap_method="sequential"``) work around
    it. The backward runs ``fun``'s forward again (a callback cannot keep Python objects
    between the two passes): a gradient costs two runs of ``fun`` and one pullback.

    JAX arrays are immutable: ``fun`` gets copies of the arguments it writes in place (adgen's
    analysis says which), and the gradient is with respect to the values passed in.

    Args:
        fun: a Python function on NumPy arrays and numbers (or dicts, lists and tuples of them)
            that adgen can differentiate, returning an array, a number, or a tuple of them.
        argnums: the positional arguments that get gradients; None (default): every
            argument whose values are all floats. The others get zero cotangents.
        mutation: adgen's policy, "save" (default) or "strict".
        result_shape: the output's shape and dtype (a ``jax.ShapeDtypeStruct``, or a pytree
            of them); by default found by running ``fun`` once per argument signature on
            arrays of ones, which fails for a function whose output shape depends on the
            values of its arguments.

    Returns:
        A function of ``fun``'s arguments returning JAX arrays.

    Raises:
        UnsupportedError: jax is not installed.
        AdgenError: ``fun`` cannot be differentiated (raised here, when it is wrapped). An
            error while ``fun`` runs inside a JAX computation reaches the caller as JAX's
            ``JaxRuntimeError``, with adgen's message in it.
    """
    jax = _require("jax", "jax_function")
    # static errors surface here, as with @adgen.differentiable, not inside a callback
    api.compile_fun(fun, mutation)
    specs: dict[Any, Any] = {}

    # every internal function below takes fun's positional arguments followed by one dict of
    # its keyword arguments (a pytree JAX traces like the others; it gets no cotangent)
    def out_spec(args: tuple[Any, ...]) -> Any:
        if result_shape is not None:
            return result_shape
        leaves, tree = jax.tree_util.tree_flatten(args)
        key = (tree, tuple((np.shape(x), jax.numpy.result_type(x)) for x in leaves))
        if key not in specs:
            probe = jax.tree_util.tree_unflatten(tree, [
                np.ones(np.shape(x), dtype=jax.numpy.result_type(x)) for x in leaves])
            try:
                out = fun(*probe[:-1], **probe[-1])
            except Exception as exc:  # any failure of the user's code
                raise UnsupportedError(
                    f"jax_function could not find the output shape of {_name(fun)} by "
                    f"running it on arrays of ones: {type(exc).__name__}: {exc}",
                    arguments.location_of(fun),
                    hint="pass result_shape=jax.ShapeDtypeStruct(shape, dtype)") from exc
            specs[key] = jax.tree_util.tree_map(
                lambda o: jax.ShapeDtypeStruct(np.shape(o), jax.dtypes.canonicalize_dtype(
                    np.result_type(o))), out)
        return specs[key]

    def inexact(value: Any) -> bool:
        leaves = jax.tree_util.tree_leaves(value)
        return bool(leaves) and all(jax.numpy.issubdtype(jax.numpy.result_type(x),
                                                         jax.numpy.inexact) for x in leaves)

    def positions(args: tuple[Any, ...]) -> tuple[int, ...]:
        """The positions of fun's arguments that get cotangents (never the keywords' dict)."""
        args = args[:-1]
        floats = [k for k, a in enumerate(args) if inexact(a)]
        return _argnums(argnums, floats, len(args))

    def numpy_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
        """The callback's arguments as fun receives them: writable copies of those it writes
        (the callback's arrays may be read-only views of JAX buffers)."""
        kwargs = {k: np.array(v) for k, v in args[-1].items()}  # copies: fun may write them
        args = tuple(jax.tree_util.tree_map(np.asarray, a) for a in args[:-1])
        written = _written(fun, args, mutation)
        return tuple(jax.tree_util.tree_map(np.array, a)
                     if written is None or k in written else a
                     for k, a in enumerate(args)) + (kwargs,)

    def run_forward(*args: Any) -> Any:
        *given, kwargs = numpy_args(args)
        out = fun(*given, **kwargs)
        spec = out_spec(args)
        return jax.tree_util.tree_map(lambda o, s: np.asarray(o, dtype=s.dtype), out, spec)

    def run_backward(args: tuple[Any, ...], out_bar: Any) -> Any:
        *given, kwargs = numpy_args(args)
        _, pullback = api.vjp(fun, *given, mutation=mutation, **kwargs)
        cotangents = pullback(jax.tree_util.tree_map(np.asarray, out_bar))
        wrt = positions(args)
        return tuple(_jax_cotangent(jax, ct, a) for k, (ct, a) in
                     enumerate(zip(cotangents, args)) if k in wrt)

    @jax.custom_vjp
    def call(*args: Any) -> Any:
        return jax.pure_callback(run_forward, out_spec(args), *args,
                                 vmap_method="sequential")

    def call_fwd(*args: Any) -> tuple[Any, Any]:
        return call(*args), args

    def call_bwd(args: tuple[Any, ...], out_bar: Any) -> tuple[Any, ...]:
        wrt = positions(args)
        shapes = tuple(jax.tree_util.tree_map(_float_spec(jax), args[k]) for k in wrt)
        got = jax.pure_callback(run_backward, shapes, args, out_bar, vmap_method="sequential")
        by_position = dict(zip(wrt, got))
        return tuple(by_position[k] if k in by_position else
                     jax.tree_util.tree_map(lambda x: None, args[k]) for k in range(len(args)))

    call.defvjp(call_fwd, call_bwd)

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        args = args + (kwargs,)
        for key, value in kwargs.items():
            if not isinstance(value, (jax.Array, np.ndarray, np.generic, float, int, bool)):
                raise UnsupportedError(
                    f"jax_function({_name(fun)}): the keyword argument {key}= is a "
                    f"{type(value).__name__}; keyword arguments go through JAX as arrays",
                    arguments.location_of(fun),
                    hint=f"bind it first: jax_function(lambda *a: {_name(fun)}(*a, "
                         f"{key}=...))")
        for k in positions(args):
            for leaf in jax.tree_util.tree_leaves(args[k]):
                if not jax.numpy.issubdtype(jax.numpy.result_type(leaf), jax.numpy.inexact):
                    raise NonDifferentiableError(
                        f"argument {k} of {_name(fun)} holds a value of dtype "
                        f"{jax.numpy.result_type(leaf)}: it has no gradient",
                        hint="pass floats, or leave it out of argnums")
        return call(*args)

    return wrapped


def _float_spec(jax: Any) -> Callable[[Any], Any]:
    def spec(x: Any) -> Any:
        return jax.ShapeDtypeStruct(np.shape(x), jax.numpy.result_type(x))

    return spec


def _jax_cotangent(jax: Any, ct: Any, primal: Any) -> Any:
    """adgen's cotangent as the callback must return it: arrays of the primal's dtypes, zeros
    where adgen gives None (no float content reached)."""
    def leaf(p: Any, c: Any) -> np.ndarray:
        dtype = np.asarray(p).dtype
        if c is None:
            return np.zeros(np.shape(p), dtype=dtype)
        return np.asarray(c, dtype=dtype).reshape(np.shape(p))

    if ct is None:
        return jax.tree_util.tree_map(lambda p: leaf(p, None), primal)
    return jax.tree_util.tree_map(leaf, primal, ct)
