"""adgen: source-to-source reverse-mode AD for Python and NumPy, mutation included.

    import adgen
    adgen.grad(loss)(w, x)                  # d loss / d w
    adgen.value_and_grad(loss, argnums=(0, 1))(w, x)
    out, pullback = adgen.vjp(loss, w, x)   # pullback(out_bar) -> one cotangent per argument
    print(adgen.source(loss))               # the generated forward + pullback
    adgen.explain(loss)                     # every mutation site and its decision
"""

from adgen.api import (
    differentiable,
    explain,
    grad,
    rrule,
    show,
    source,
    standalone_source,
    value_and_grad,
    vjp,
)
from adgen.errors import (
    AdgenError,
    ArgnumsError,
    CompilerError,
    CotangentError,
    MissingRuleError,
    MutationError,
    NonDifferentiableError,
    RuleError,
    UnsupportedError,
)
from adgen.explanation import MutationSite

__all__ = [
    "AdgenError",
    "ArgnumsError",
    "CompilerError",
    "CotangentError",
    "MissingRuleError",
    "MutationError",
    "MutationSite",
    "NonDifferentiableError",
    "RuleError",
    "UnsupportedError",
    "checkpoint",
    "custom_jvp",
    "differentiable",
    "explain",
    "frule",
    "grad",
    "hessian",
    "hvp",
    "interop",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "rrule",
    "show",
    "source",
    "standalone_source",
    "stop_gradient",
    "value_and_grad",
    "vjp",
]

__version__ = "0.1.0"

# Imported at their first use (PEP 562), not by ``import adgen``: what a first gradient does
# not need (about 1 ms of the import; torch and jax are imported only when interop uses them)
_LAZY = {"interop": ("adgen.interop", ""), "checkpoint": ("adgen.checkpointing", "checkpoint"),
         "stop_gradient": ("adgen.stop", "stop_gradient"),
         "custom_jvp": ("adgen.custom_jvp", "custom_jvp"), "frule": ("adgen.custom_jvp", "frule")}
_LAZY.update((n, ("adgen.higher_order", n)) for n in
             ("hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jvp"))


def __getattr__(name: str) -> object:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'adgen' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(where[0])
    value = getattr(module, where[1]) if where[1] else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
