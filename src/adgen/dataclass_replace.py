"""``dataclasses.replace(p, w=v)`` as a function of the user's adgen can differentiate.

``dataclasses.replace`` builds ``type(p)(...)`` from the fields of ``p`` it reads by name when
it runs, so the compiler cannot see what it reads or builds: the class is only known at run
time. ``transforms/lower_mutation.py`` writes the user's ``q = dataclasses.replace(p, w=v)``
as ``t = dataclass_replacer(p, ("w",)); q = t(p, v)``: this module's :func:`replacer` writes,
once per class and set of keywords, a function such as

    def replace_Params_w(obj, w):
        return Params(w, obj.b, c=obj.c)

(the fields the constructor takes, in order, each either a keyword's value or the old object's
attribute; ``kw_only`` fields by keyword), registered in ``linecache`` under a file name of its
own, and the call of that function, resolved when it runs, is differentiated as a call of any
function of the user's (the class's ``__init__`` and ``__post_init__`` included). Fields with
``init=False`` are left to ``__init__`` as ``dataclasses.replace`` leaves them; naming one, or
a name that is no field, raises the error ``dataclasses.replace`` raises.
"""

from __future__ import annotations

import dataclasses
import keyword
import linecache
import types
import weakref
from typing import Any

from adgen.errors import UnsupportedError

__all__ = ["replacer"]

# class -> {keyword names: the function written for them}
_WRITTEN: weakref.WeakKeyDictionary[type, dict[tuple[str, ...], types.FunctionType]] = \
    weakref.WeakKeyDictionary()


def replacer(obj: Any, names: tuple[str, ...]) -> types.FunctionType:
    """The function ``dataclasses.replace(obj, **{n: ... for n in names})`` is a call of:
    it takes ``obj`` and the new values of ``names``, in that order.

    Raises:
        TypeError, ValueError: what ``dataclasses.replace`` raises for these arguments (``obj``
            no dataclass instance, a field with ``init=False`` named, a name that is no field).
        UnsupportedError: for a dataclass with ``InitVar`` fields.
    """
    cls = type(obj)
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError("replace() should be called on dataclass instances")
    written = _WRITTEN.setdefault(cls, {})
    fn = written.get(names)
    if fn is None:
        fn = _write(cls, names)
        written[names] = fn
    return fn


def _write(cls: type, names: tuple[str, ...]) -> types.FunctionType:
    from adgen.dataclass_init import dataclass_init

    every = getattr(cls, "__dataclass_fields__", {})
    if any(f._field_type is dataclasses._FIELD_INITVAR for f in every.values()):  # noqa: SLF001
        raise UnsupportedError(
            f"dataclasses.replace of a {cls.__qualname__}: it has InitVar fields, which adgen "
            "does not follow into __post_init__",
            hint="make them ordinary fields, or build the new object by its class")
    fields = dataclasses.fields(cls)  # not the ClassVar and InitVar pseudo-fields
    by_name = {f.name: f for f in fields}
    for n in names:
        f = by_name.get(n)
        if f is not None and not f.init:
            raise ValueError(f"field {n} is declared with init=False, it cannot be specified "
                             "with replace()")
        if f is None:
            raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword "
                            f"argument '{n}'")
    # the __init__ dataclasses wrote takes the fields in order (kw_only ones by keyword); one
    # of the user's is called as dataclasses.replace calls it, every field by keyword
    generated = dataclass_init(cls) is not None
    params = {n: f"new_{n}" if n in ("obj", "_cls") or keyword.iskeyword(n) else n
              for n in names}
    args = []
    for f in fields:
        if not f.init:
            continue
        value = params[f.name] if f.name in params else f"obj.{f.name}"
        by_keyword = not generated or getattr(f, "kw_only", False) is True
        args.append(f"{f.name}={value}" if by_keyword else value)
    fname = "_".join(["replace", cls.__name__, *names])
    text = (f"def {fname}({', '.join(['obj', *params.values()])}):\n"
            f"    return _cls({', '.join(args)})\n")
    file = f"<adgen: dataclasses.replace of {cls.__qualname__}, given {', '.join(names) or 'no field'}>"
    linecache.cache[file] = (len(text), None, text.splitlines(True), file)
    namespace: dict[str, Any] = {"_cls": cls, "__name__": getattr(cls, "__module__", None)}
    exec(compile(text, file, "exec"), namespace)  # noqa: S102 - adgen's own text
    fn = namespace[fname]
    fn.__module__ = cls.__module__
    return fn
