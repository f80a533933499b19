"""The ``__init__`` of a ``@dataclass``, as Python source adgen can read.

``dataclasses`` writes each class's ``__init__`` as text and runs it with ``exec``, keeping the
text nowhere (its code says ``<string>``), so a dataclass built inside a differentiated
function (``Params(W, b)``) had no source for adgen to differentiate. This module writes the
same ``__init__`` again from the class's fields, compiles it under a file name of its own
registered in ``linecache`` (as IPython does for cells) and returns that function, which
``dispatch`` compiles in place of the original. It assigns the fields the constructor takes,
in order, calls a field's ``default_factory`` when the argument was left out, sets the fields
with ``init=False`` from their default, and calls ``__post_init__`` as the original does.
A frozen dataclass's ``__init__`` stores through ``object.__setattr__(self, "w", w)``, past
the class's ``__setattr__`` (which refuses every store), as the original does; adgen follows
that call with a constant name as the store ``self.w = w`` that bypasses ``__setattr__``
(transforms/getattr_constant.py). Classes whose ``__init__`` this cannot reproduce are
refused with the reason (``InitVar`` fields).
"""

from __future__ import annotations

import dataclasses
import linecache
import types
import weakref
from typing import Any

from adgen.errors import UnsupportedError

__all__ = ["dataclass_init"]

# generated __init__ (the dataclass's own) -> the one written here
_WRITTEN: weakref.WeakKeyDictionary[Any, types.FunctionType] = weakref.WeakKeyDictionary()


class _Missing:
    """The default of a parameter whose field has a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


def _generated_init(cls: type) -> tuple[type, types.FunctionType] | None:
    """The dataclass that owns ``cls``'s ``__init__`` and that ``__init__``, when dataclasses
    wrote it (no source): else None."""
    init = getattr(cls, "__init__", None)
    if not isinstance(init, types.FunctionType) or init.__code__.co_filename != "<string>":
        return None
    owner = next((c for c in cls.__mro__ if c.__dict__.get("__init__") is init), None)
    params = getattr(owner, "__dataclass_params__", None)
    if owner is None or params is None or not params.init or \
            "__dataclass_fields__" not in owner.__dict__:
        return None
    return owner, init


def dataclass_init(cls: type) -> types.FunctionType | None:
    """The ``__init__`` of dataclass ``cls`` as a function with readable source, or None when
    ``cls``'s ``__init__`` is not one dataclasses wrote.

    Raises:
        UnsupportedError: for a dataclass with ``InitVar`` fields.
    """
    found = _generated_init(cls)
    if found is None:
        return None
    owner, init = found
    written = _WRITTEN.get(init)
    if written is None:
        written = _write(owner, init)
        _WRITTEN[init] = written
    return written


def _write(owner: type, init: types.FunctionType) -> types.FunctionType:
    name = owner.__qualname__
    fields = list(dataclasses.fields(owner))  # not the ClassVar and InitVar pseudo-fields
    code = init.__code__
    taken = code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount]
    if set(taken) - {f.name for f in fields}:  # an InitVar: a parameter that is no field
        raise UnsupportedError(
            f"building the dataclass {name} inside a differentiated function: it has InitVar "
            "fields, which adgen does not follow into __post_init__",
            hint="make them ordinary fields, or build the object outside")
    env: dict[str, Any] = {"_object": object}
    frozen = owner.__dataclass_params__.frozen

    def store(field: str, value: str) -> str:
        # a frozen dataclass's __init__ stores past its __setattr__, which refuses every
        # store, as dataclasses' own does: object.__setattr__, which adgen follows
        return f"_object.__setattr__(self, {field!r}, {value})" if frozen else \
            f"self.{field} = {value}"

    positional, keyword, body = [], [], []
    defaults: list[Any] = []
    kwdefaults: dict[str, Any] = {}
    missing = _Missing()
    for f in fields:
        if not f.init:
            if f.default_factory is not dataclasses.MISSING:
                env[f"_factory_{f.name}"] = f.default_factory
                body.append(store(f.name, f"_factory_{f.name}()"))
            elif f.default is not dataclasses.MISSING:
                env[f"_default_{f.name}"] = f.default
                body.append(store(f.name, f"_default_{f.name}"))
            continue
        default: Any = dataclasses.MISSING
        if f.default_factory is not dataclasses.MISSING:
            default = missing
            env[f"_factory_{f.name}"] = f.default_factory
            body.append(store(f.name, f"_factory_{f.name}() if {f.name} is _missing else "
                                      f"{f.name}"))
        else:
            default = f.default
            body.append(store(f.name, f.name))
        if getattr(f, "kw_only", False) is True:
            keyword.append(f.name)
            if default is not dataclasses.MISSING:
                kwdefaults[f.name] = default
        else:
            positional.append(f.name)
            if default is not dataclasses.MISSING:
                defaults.append(default)
    if hasattr(owner, "__post_init__"):
        body.append("self.__post_init__()")
    env["_missing"] = missing
    params = ", ".join(["self", *positional] + (["*", *keyword] if keyword else []))
    file = f"<adgen: the __init__ dataclasses wrote for {name}>"
    lines = [f"class {owner.__name__}:\n", f"    def __init__({params}):\n"] + [
        f"        {line}\n" for line in body or ["pass"]]
    text = "".join(lines)
    linecache.cache[file] = (len(text), None, lines, file)
    namespace = dict(init.__globals__)
    namespace.update(env)
    scratch = dict(namespace)  # the class statement binds the name there, not in namespace
    exec(compile(text, file, "exec"), scratch)  # noqa: S102 - adgen's own text
    made = scratch[owner.__name__].__dict__["__init__"]
    fn = types.FunctionType(made.__code__, namespace, "__init__", tuple(defaults) or None)
    fn.__kwdefaults__ = kwdefaults or None
    fn.__qualname__ = f"{name}.__init__"
    fn.__module__ = owner.__module__
    return fn
