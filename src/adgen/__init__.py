"""adgen: source-to-source reverse-mode AD for Python and NumPy, mutation included.

    import adgen
    adgen.grad(loss)(w, x)                  # d loss / d w
    adgen.value_and_grad(loss, argnums=(0, 1))(w, x)
    out, pullback = adgen.vjp(loss, w, x)   # pullback(out_bar) -> one cotangent per argument
    print(adgen.source(loss))               # the generated forward + pullback
    adgen.explain(loss)                     # every mutation site and its decision
"""

from adgen import interop  # torch and jax are imported only when used
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
from adgen.checkpointing import checkpoint
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
from adgen.higher_order import hessian, hvp, jacfwd, jacobian, jacrev, jvp

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
    "differentiable",
    "explain",
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
    "value_and_grad",
    "vjp",
]

__version__ = "0.1.0"
