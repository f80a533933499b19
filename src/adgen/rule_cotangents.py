"""The cotangents a call through a rule hands back (``dispatch.pullback_of``): a user rule's
checked against the arguments (one each, of its argument's shape) and lined up with the call
(positions, then keywords in the order passed: :data:`NO_COTANGENT` for a keyword the rule
gave none), the argument positions a rule's primal writes in place (``mutates=``), and
whether a cotangent is zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.errors import RuleError


class _NoCotangent:
    """What a user rule gave for a keyword argument when it returned cotangents for the
    positional ones only."""

    def __repr__(self) -> str:
        return "NO_COTANGENT"


NO_COTANGENT = _NoCotangent()


def by_parameter(rule: Any, cts: Any, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The cotangents of a user rule called with keyword arguments: the rule returns one per
    argument passed, in the order of the function's parameters (``f(x, scale=s)``: x's, then
    scale's), or one per positional argument (then the keywords get :data:`NO_COTANGENT`);
    the caller gets them per position, then per keyword in the order it passed them."""
    names = [p.name for p in rule.params if not p.varargs]
    if isinstance(cts, (tuple, list)) and len(cts) == len(args):
        # one per positional argument (the keywords as constants): a keyword whose value has a
        # gradient is refused where the compiled code reads its cotangent (keyword_cotangent)
        cts = check_cotangents(rule.name, cts, args)
        return tuple(cts) + (NO_COTANGENT,) * len(kwargs)
    passed = set(names[:len(args)]) | set(kwargs)
    order = [n for n in names if n in passed]
    if len(order) != len(args) + len(kwargs):  # *args, or a keyword the signature lacks
        raise RuleError(f"the rule for {rule.name} was called with keyword argument(s) "
                        f"{', '.join(kwargs)} that adgen cannot line up with its parameters",
                        hint="pass them by position")
    values = {**dict(zip(names, args)), **kwargs}
    cts = check_cotangents(rule.name, cts, tuple(values[n] for n in order),
                           f" ({', '.join(order)}: one per argument passed, in the order of "
                           "the function's parameters)")
    by_name = dict(zip(order, cts))
    return tuple(by_name[n] for n in names[:len(args)]) + tuple(by_name[k] for k in kwargs)



def mutated_positions(rule: Any, nargs: int) -> list[int]:
    """The argument positions a rule's primal writes in place (``mutates=``)."""
    if not rule.mutates:
        return []
    names = [p.name for p in rule.params]
    out = []
    for m in rule.mutates:
        k = int(m) if str(m).isdigit() else (names.index(m) if m in names else None)
        if k is None or k >= nargs:
            raise RuleError(f"the rule for {rule.name} says it mutates {m!r}, which is not one "
                            "of its arguments")
        out.append(k)
    return out


def is_zero(ct: Any) -> bool:
    """Whether a cotangent is zero: None, zeros, or lists, tuples and dicts of them."""
    if ct is None:
        return True
    if isinstance(ct, (list, tuple)):
        return all(is_zero(c) for c in ct)
    if isinstance(ct, dict):
        return all(is_zero(c) for c in ct.values())
    try:
        return not np.any(ct)
    except (TypeError, ValueError):
        return False


def check_cotangents(rule_name: str, cts: Any, args: tuple[Any, ...],
                     which: str = "") -> tuple[Any, ...]:
    """Checks a user rule's cotangents: one per argument, each of its argument's shape."""
    if not isinstance(cts, (tuple, list)):
        raise RuleError(f"the rule for {rule_name} returned {type(cts).__name__}, not a tuple "
                        f"of {len(args)} cotangent(s){which}",
                        hint="return one cotangent per argument, as a tuple")
    if len(cts) != len(args):
        raise RuleError(f"the rule for {rule_name} returned {len(cts)} cotangent(s) for "
                        f"{len(args)} argument(s){which}",
                        hint="return one cotangent per argument passed (None for none)")
    for k, (ct, a) in enumerate(zip(cts, args)):
        if ct is None:
            continue
        if isinstance(a, (float, np.floating)) and np.ndim(ct) > 0 and np.size(ct) != 1:
            raise RuleError(f"the rule for {rule_name} returned an array of shape "
                            f"{np.shape(ct)} for argument {k}, which is a float")
        if not isinstance(a, np.ndarray):
            continue
        if np.shape(ct) != a.shape:
            raise RuleError(f"the rule for {rule_name} returned a cotangent of shape "
                            f"{np.shape(ct)} for argument {k} of shape {a.shape}")
    return tuple(cts)
