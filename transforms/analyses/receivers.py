"""What the function shows the receiver of a call to be, asked by ``lower_mutation`` before it
rewrites ``x.fill(v)``, ``xs.extend(ys)``, ``d.update(e)`` or ``f(a, out=o)``: not an ndarray
(an object of the user's whose own ``fill`` it is), an object read by attribute (not a list
or dict), a list or dict the function builds itself, ``self.m`` of the user's class, a call of
the user's own function with an ``out=`` keyword. An analysis: it reads the parsed function
and rewrites nothing (:class:`Receivers` keeps one function's answers).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

from adgen.rules import registry


class Receivers:
    """The receivers of one function's calls (``parsed``), names resolved by ``resolve``
    (``lower_mutation``'s: a bound method is the method itself)."""

    def __init__(self, parsed: Parsed, resolve: Callable[[gast.expr], object | None]) -> None:
        self.parsed = parsed
        self.resolve = resolve
        self._objects: set[str] | None = None  # (object_like's names, made at its first call)

    def not_an_array(self, recv: gast.expr) -> bool:
        """A name the function reads an attribute of that no ndarray has (``sim.buf``), an
        instance of a class of the user's it builds, a parameter annotated with one (``def
        loss(sim: Sim, p)``), or a class (``t = type(sim); t.fill(sim, p)``): ``sim.fill(p)``
        is that object's own method, not ``ndarray.fill`` (taken for one, it became
        ``sim[...] = p``)."""
        if not isinstance(recv, gast.Name):
            return False
        import numpy as np

        def users_class(cls: Any) -> bool:
            return isinstance(cls, type) and not issubclass(cls, np.ndarray) and \
                cls.__module__ not in ("builtins", "numpy")

        for p in self.parsed.tree.args.args:
            if p.id == recv.id and getattr(p, "annotation", None) is not None and \
                    users_class(self.resolve(p.annotation)):
                return True
        for a in walk(self.parsed.tree):
            if isinstance(a, gast.Attribute) and isinstance(a.value, gast.Name) and \
                    a.value.id == recv.id and not hasattr(np.ndarray, a.attr):
                return True
            if isinstance(a, gast.Assign) and isinstance(a.value, gast.Call) and \
                    any(isinstance(t, gast.Name) and t.id == recv.id for t in a.targets):
                cls = self.resolve(a.value.func)
                if users_class(cls) or cls is type:
                    return True
            if isinstance(a, gast.Call) and not a.keywords and any(
                    isinstance(v, gast.Name) and v.id == recv.id for v in a.args):
                # handed to a function of the user's that reads an attribute of it no ndarray
                # has (field.fill(p); return total(field), total reading field.u)
                k = next(k for k, v in enumerate(a.args)
                         if isinstance(v, gast.Name) and v.id == recv.id)
                if _reads_object_attribute(self.resolve(a.func), k):
                    return True
        return False

    def object_like(self, recv: gast.expr) -> bool:
        """A name the function reads attributes of (``m.w``): an object, not a list or dict."""
        if not isinstance(recv, gast.Name):
            return False
        if self._objects is None:
            tree = self.parsed.tree
            calls = {id(c.func) for c in walk(tree) if isinstance(c, gast.Call)}
            self._objects = {a.value.id for a in walk(tree)
                             if isinstance(a, gast.Attribute) and isinstance(a.value, gast.Name)
                             and id(a) not in calls}
            # m = Model(...): an instance of a class of the user's
            for a in walk(tree):
                if isinstance(a, gast.Assign) and isinstance(a.value, gast.Call):
                    cls = self.resolve(a.value.func)
                    if isinstance(cls, type) and cls not in (list, dict):
                        self._objects |= {t.id for t in a.targets if isinstance(t, gast.Name)}
        return recv.id in self._objects

    def built_as(self, recv: gast.expr, kind: str, seen: frozenset[str] = frozenset()
                  ) -> bool:
        """A local the function builds as a list or dict display (``d = {}``; for a list,
        ``list(...)``, ``sorted(...)`` and ``x.tolist()`` too) and binds to nothing else but
        another such local (a comprehension, lowered before this pass, is one): it is one at
        run time (``x.tolist()`` of a 0-d array is a number, which has no list method)."""
        if not isinstance(recv, gast.Name) or recv.id in seen:
            return False
        display = gast.List if kind == "list" else gast.Dict
        values = [a.value for a in walk(self.parsed.tree) if isinstance(a, gast.Assign) and
                  any(isinstance(t, gast.Name) and t.id == recv.id for t in a.targets)]
        return bool(values) and all(
            isinstance(v, display) or
            (isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and
             self.resolve(v.func) in ((list, sorted) if kind == "list" else (dict,))) or
            (kind == "list" and isinstance(v, gast.Call) and
             isinstance(v.func, gast.Attribute) and v.func.attr == "tolist" and
             not v.args and not v.keywords) or
            (isinstance(v, gast.Name) and self.built_as(v, kind, seen | {recv.id}))
            for v in values)

    def own_out_keyword(self, func: gast.expr, resolved: object | None) -> bool:
        """True for a call of the user's own function or method with an ``out=`` keyword
        (``step(u, out=lap)``, ``self.rhs(y, out=k1)``, ``model.predict(x, out=buf)``): it is
        compiled as a call that writes its argument in place, like the same call with ``lap``
        passed by position. NumPy's convention (the call writes ``out`` and returns it) holds
        for NumPy's functions, ufuncs and array methods, not for a function of the user's,
        which may return something else or nothing: ``s = fill(x, out=buf)`` bound ``buf`` to
        ``s``'s value (a silently wrong gradient), and a global ``out=BUF`` became a local."""
        if resolved is None:
            if isinstance(func, gast.Attribute):
                # a method of a name adgen cannot resolve when compiling: the user's method
                # when the class defines it (self.rhs) or when ndarray has no method of that
                # name
                return self.user_method(func.value, func.attr) or \
                    not hasattr(np.ndarray, func.attr)
            return False  # a callback: what it calls is checked when it runs
        if isinstance(resolved, np.ufunc) or registry.lookup(resolved) is not None:
            return False
        # a function, method or class of the user's or of another library (functools.partial)
        module = str(getattr(resolved, "__module__", None) or "")
        return module.split(".")[0] not in ("numpy", "scipy")

    def built_class(self, recv: gast.expr, method: str) -> gast.expr | None:
        """For ``d.append(v)`` where every binding of ``d`` in the function is a call of the
        same class of the user's (``d = Doubler()``) that defines ``method`` in Python: that
        call's class expression (``Doubler``), so the call can be written as the class's
        function (``Doubler.append(d, v)``). Later passes took it for a list's append (a raw
        TypeError in the pullback) or refused it as list.pop / insert / remove. Else None."""
        if not isinstance(recv, gast.Name):
            return None
        stores = [n for n in walk(self.parsed.tree) if isinstance(n, gast.Name) and
                  n.id == recv.id and not isinstance(n.ctx, gast.Load)]
        annotated = self._annotated_class(recv.id, method)
        if annotated is not None and len(stores) == 1:
            return annotated  # def loss(x, s: Stack): s.pop() is Stack.pop(s)
        values = [a.value for a in walk(self.parsed.tree) if isinstance(a, gast.Assign) and
                  len(a.targets) == 1 and isinstance(a.targets[0], gast.Name) and
                  a.targets[0].id == recv.id]
        if not values or len(values) != len(stores) or \
                not all(isinstance(v, gast.Call) for v in values):
            return None
        classes = {id(self.resolve(v.func)): self.resolve(v.func) for v in values}
        if len(classes) != 1:
            return None
        cls = next(iter(classes.values()))
        if not isinstance(cls, type) or cls.__module__ in ("builtins", "collections") or \
                str(cls.__module__).startswith(("numpy", "adgen")):
            return None
        if not isinstance(inspect.getattr_static(cls, method, None), types.FunctionType):
            return None
        return values[0].func

    def _annotated_class(self, param: str, method: str) -> gast.expr | None:
        """The annotation of parameter ``param`` where it names a class of the user's that
        defines ``method`` in Python (``def loss(x, s: Stack)``), else None."""
        for p in self.parsed.tree.args.args:
            ann = getattr(p, "annotation", None)
            if p.id != param or not isinstance(ann, (gast.Name, gast.Attribute)):
                continue
            cls = self.resolve(ann)
            if isinstance(cls, type) and cls.__module__ not in ("builtins", "collections") \
                    and not str(cls.__module__).startswith(("numpy", "adgen")) and \
                    isinstance(inspect.getattr_static(cls, method, None), types.FunctionType):
                return ann
        return None

    def user_method(self, recv: gast.expr, method: str) -> bool:
        """True for ``self.m(...)`` in a method of a class that defines ``m`` itself: not the
        list, dict or ndarray method of that name."""
        fn = self.parsed.fn
        params = fn.__code__.co_varnames[:1] if fn.__code__.co_argcount else ()
        if not (isinstance(recv, gast.Name) and recv.id in params):
            return False
        owner: Any = inspect.getmodule(fn)
        for part in fn.__qualname__.split(".")[:-1]:
            owner = getattr(owner, part, None)
        return isinstance(owner, type) and isinstance(
            inspect.getattr_static(owner, method, None), (types.FunctionType, staticmethod,
                                                          classmethod))


def _reads_object_attribute(fn: object, k: int) -> bool:
    """Whether the user's function ``fn`` reads an attribute no ndarray has (``field.u``) of
    its positional parameter ``k``, in its own body (one level: not through its callees)."""
    import ast
    import textwrap

    if not isinstance(fn, types.FunctionType) or k >= fn.__code__.co_argcount or \
            str(getattr(fn, "__module__", "")).startswith(("numpy", "adgen.")):
        return False
    param = fn.__code__.co_varnames[k]
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and
               a.value.id == param and isinstance(a.ctx, ast.Load) and
               not hasattr(np.ndarray, a.attr) for a in ast.walk(tree))
