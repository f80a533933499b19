"""Lower match: a ``match`` statement becomes the if statements Python runs for it.

Input: a validated FunctionDef (validate lets through the patterns below; class and mapping
patterns and starred sequence items are refused there). Output: the same function where

    match subject:                       subject1 = subject
        case 0 | 1:                      matched1 = False
            body0                        if subject1 == 0 or subject1 == 1:
        case (a, b) if a > b:                matched1 = True
            body1                            body0
        case _:                          if not matched1:
            body2                            if match_sequence(subject1, 2):
                                                 a = subject1[0]
                                                 b = subject1[1]
                                                 if a > b:
                                                     matched1 = True
                                                     body1
                                         if not matched1:
                                             matched1 = True
                                             body2

The subject is evaluated once; a case's names are bound before its guard runs, as in Python
(they stay bound when the guard fails); ``match_sequence`` (adgen.runtime) is Python's test
for a sequence pattern (a list, a tuple or another Sequence, not str/bytes/bytearray, of that
length: NumPy arrays are not Sequences). Values: ``==``; ``None``/``True``/``False``: ``is``.
It runs first in lower_control, before early exits become flags, and before the names of the
function are collected (captures are names like any other from here on).
"""

from __future__ import annotations

import gast
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.names import Namer

from adgen.errors import UnsupportedError


def lower_match(fn: gast.FunctionDef, namer: Namer) -> None:
    """Rewrites every match statement of ``fn`` (in place)."""
    _blocks(fn, namer)


def refuse_unsupported_patterns(node: gast.Match, location: object) -> None:
    """Raises UnsupportedError (at ``location``) for a pattern lower_match does not write."""
    for case in node.cases:
        why = _unsupported(case.pattern)
        if why:
            raise UnsupportedError(f"a match statement with {why} is not supported",
                                   location,  # type: ignore[arg-type]
                                   hint="use if/elif (isinstance, len, d[key]) for it")


def _unsupported(p: gast.AST) -> str:
    if isinstance(p, (gast.MatchValue, gast.MatchSingleton)):
        return ""
    if isinstance(p, gast.MatchAs):
        return "" if p.pattern is None else _unsupported(p.pattern)
    if isinstance(p, gast.MatchOr):
        if any(_binds(a) for a in p.patterns):
            return "names bound in an or-pattern (case (x, 0) | (0, x))"
        return next((w for w in map(_unsupported, p.patterns) if w), "")
    if isinstance(p, gast.MatchSequence):
        if any(isinstance(a, gast.MatchStar) for a in p.patterns):
            return "a starred sequence pattern (case [first, *rest])"
        return next((w for w in map(_unsupported, p.patterns) if w), "")
    if isinstance(p, gast.MatchClass):
        return "a class pattern (case Point(x=0))"
    if isinstance(p, gast.MatchMapping):
        return "a mapping pattern (case {'k': v})"
    return f"a {type(p).__name__} pattern"


def _binds(p: gast.AST) -> bool:
    return any(isinstance(n, gast.MatchAs) and n.name for n in gast.walk(p))


def _blocks(node: gast.AST, namer: Namer) -> None:
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        block = getattr(node, field, None)
        if not isinstance(block, list):
            continue
        for s in block:
            _blocks(s, namer)
        if field in ("body", "orelse", "finalbody"):
            out: list[gast.stmt] = []
            for s in block:
                out.extend(_lower(s, namer) if isinstance(s, gast.Match) else [s])
            setattr(node, field, out)


def _lower(m: gast.Match, namer: Namer) -> list[gast.stmt]:
    subject, done = namer.fresh("subject"), namer.fresh("matched")
    out: list[gast.stmt] = [assign(name(subject, gast.Store), m.subject, m),
                            assign(name(done, gast.Store), gast.Constant(False, None), m)]
    for k, case in enumerate(m.cases):
        test, binds = _pattern(case.pattern, name(subject))
        body = [assign(name(done, gast.Store), gast.Constant(True, None), case.pattern)] + \
            case.body
        if case.guard is not None:
            body = [located_at(gast.If(test=case.guard, body=body, orelse=[]), case.guard)]
        body = [assign(name(n, gast.Store), v, case.pattern) for n, v in binds] + body
        if test is not None:
            body = [located_at(gast.If(test=test, body=body, orelse=[]), case.pattern)]
        if k:
            body = [located_at(gast.If(test=gast.UnaryOp(op=gast.Not(), operand=name(done)),
                                       body=body, orelse=[]), case.pattern)]
        out.extend(body)
    return out


def _pattern(p: gast.AST, subject: gast.expr
             ) -> tuple[gast.expr | None, list[tuple[str, gast.expr]]]:
    """The test of ``p`` on ``subject`` (None: always true) and the names it binds."""
    if isinstance(p, gast.MatchValue):
        return gast.Compare(left=subject, ops=[gast.Eq()], comparators=[p.value]), []
    if isinstance(p, gast.MatchSingleton):
        return gast.Compare(left=subject, ops=[gast.Is()],
                            comparators=[gast.Constant(p.value, None)]), []
    if isinstance(p, gast.MatchAs):
        test, binds = (None, []) if p.pattern is None else _pattern(p.pattern, subject)
        return test, binds + ([(p.name, _copy(subject))] if p.name else [])
    if isinstance(p, gast.MatchOr):
        tests = [_pattern(a, _copy(subject))[0] for a in p.patterns]
        if any(t is None for t in tests):
            return None, []
        return gast.BoolOp(op=gast.Or(), values=tests), []
    assert isinstance(p, gast.MatchSequence)
    tests: list[gast.expr] = [gast.Call(func=name("match_sequence"),
                                        args=[_copy(subject), gast.Constant(len(p.patterns),
                                                                            None)],
                                        keywords=[])]
    binds: list[tuple[str, gast.expr]] = []
    for i, item in enumerate(p.patterns):
        sub = gast.Subscript(value=_copy(subject), slice=gast.Constant(i, None),
                             ctx=gast.Load())
        t, b = _pattern(item, sub)
        if t is not None:
            tests.append(t)
        binds += b
    return (tests[0] if len(tests) == 1 else gast.BoolOp(op=gast.And(), values=tests)), binds


def _copy(e: gast.expr) -> gast.expr:
    from adgen.transforms.walk import clone

    return clone(e)
