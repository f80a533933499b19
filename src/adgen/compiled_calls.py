"""The function an entry point is given, compiled (:func:`compile_fun`; for ``grad``'s
argument signatures :func:`gradient_compilation`), and its forward run with a scope of
captures of its own (:func:`run_forward`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adgen import guards
from adgen.arguments import check_policy, location_of, primal_function
from adgen.forward_errors import annotate
from adgen.pullback_runs import may_be_complex
from adgen.transforms.analyses.kinds import has_unknown


def compile_fun(fun: Callable[..., Any], mutation: str,
              wrt: tuple[int, ...] | None = None, sig: tuple[Any, ...] | None = None,
              backend: str = "default", single_use: bool = False) -> Any:
    from adgen.transforms.pipeline import compile_function

    check_policy(mutation)
    if backend != "default":  # numba / auto: adgen.backends
        from adgen.backends import compile_for

        return compile_for(primal_function(fun), mutation, wrt, sig, backend)
    from adgen.transforms.parse import varargs_of

    if varargs_of(primal_function(fun)) is not None:
        from adgen.errors import UnsupportedError
        from adgen.transforms.keyword_shims import keyword_shim_of

        # (a function with **kwargs too is compiled as its shim for the keywords given: the
        # user's function, its name and line, not the shim's generated file)
        shim = keyword_shim_of(primal_function(fun))
        user = fun if shim is None else shim[0]
        called = getattr(user, "__name__", "")
        called = called if called.isidentifier() else "f"
        raise UnsupportedError(
            f"{getattr(user, '__qualname__', user)} takes *args: adgen differentiates such a "
            "function where another calls it, not as the function given to grad or vjp",
            location_of(user),
            hint=f"give it named parameters, or wrap it: adgen.grad(lambda x, y: "
                 f"{called}(x, y))")
    return compile_function(primal_function(fun), mutation=mutation, wrt=wrt, sig=sig,
                            single_use=single_use)


def gradient_compilation(fun: Callable[..., Any], mutation: str, wrt: tuple[int, ...] | None,
                         sig: tuple[Any, ...], backend: str = "default") -> Any:
    """The compilation ``grad`` and ``value_and_grad`` run for argument signature ``sig``:
    single use where they can (the default backend, a signature without lists, dicts or
    kindless values; transforms/single_use.py), the reusable form where a complex cotangent
    could make the pullback run again (run_pullback)."""
    compiled = compile_fun(fun, mutation, wrt=wrt, sig=sig, backend=backend,
                           single_use=backend == "default" and
                           not has_unknown(sig))
    if getattr(compiled, "consumes", None) and may_be_complex(compiled):
        compiled = compile_fun(fun, mutation, wrt=wrt, sig=sig, backend=backend)
    refuse_nondiff_reached(compiled)
    return compiled


def refuse_nondiff_reached(compiled: Any) -> None:
    """Raises the refusal a compilation for any arguments kept for its callers (a derivative
    reaching a rule's argument without one, rules.nondiff_params): here every argument of the
    user's function has a derivative."""
    refused = getattr(compiled, "nondiff_refusal", None)
    if refused is not None:
        raise refused


def run_forward(compiled: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    forward = compiled.forward
    from adgen.counter_slots import COUNTERS

    if COUNTERS:
        # a counter compiled as a number's update (STATS["calls"] += 1) that the run leaves
        # holding an array (a helper stored one there): the update wrote it in place
        from adgen.counter_slots import keeping_counters

        forward = keeping_counters(forward, f"{getattr(compiled, 'name', 'the function')} "
                                            "(or a function it calls)")
    try:
        policy = getattr(compiled, "mutation", "save")  # (a backend's: its base's)
        if not compiled.needs_scope and policy == "save":
            return forward(*args, **kwargs)  # no capture or guard to keep apart
        # a fresh scope of captures for this pass, in this thread's stack, with the policy
        # the calls it resolves when they run are compiled under (dispatch)
        scopes = guards.scope_stack()
        scopes.append(guards.GuardScope(policy))
        try:
            return forward(*args, **kwargs)
        finally:
            scopes.pop()
    except Exception as exc:
        annotate(exc, compiled)  # the user's line, not only the generated one
        raise
