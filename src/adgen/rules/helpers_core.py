"""Rule helpers: errors, structure of values, broadcasting, reductions.

Part of :mod:`adgen.rules.helpers` (see its docstring for the conventions every helper keeps:
top-level functions using only ``np``, builtins and each other, all of them public).
"""

import numpy as np

__all__ = [
    "fields_vjp",
    "extreme_tangent",
    "extreme_tangent_vjp",
    "extreme_vjp",
    "sequence_vjp",
    "zeros_for",
    "as_container",
    "balanced_eq",
    "broadcast_copy",
    "broadcastable",
    "cast_vjp",
    "copy_vjp",
    "cumsum_vjp",
    "dict_vjp",
    "expand_reduced",
    "filled",
    "is_tuple_tree",
    "max_vjp",
    "mean_vjp",
    "prod_vjp",
    "reduced_axes",
    "shape_tree",
    "sort_vjp",
    "sorted_jvp",
    "sorted_positions",
    "sorted_vjp",
    "same_item",
    "sequence_product_vjp",
    "split_sequence",
    "stored_into",
    "stored_part",
    "sum_cotangents",
    "sum_keepdims",
    "sum_list_vjp",
    "sum_vjp",
    "tree_items",
    "tree_len",
    "tree_numeric_shape",
    "tree_zeros",
    "unbroadcast",
    "unsupported",
    "var_vjp",
    "xlogy",
    "xlogy_dx",
    "xlogy_dy",
]


# --------------------------------------------------------------------------------------------
# Stores


def stored_part(x_bar: np.ndarray, index: object) -> object:
    """The cotangent of the value ``v`` that ``x[index] = v`` stored: ``x_bar[index]``, a copy,
    where an element of ``x`` the index names more than once (``x[[0, 2, 2]] = v``) counts only
    for the write NumPy kept; the value written first was overwritten and gets zero.

    The write NumPy kept is found by doing the same store again with position numbers: NumPy
    leaves the order of repeated writes unspecified, so asking it is the only faithful way.
    """
    g = x_bar[index]
    if type(g) is not np.ndarray:
        return g  # an element: a NumPy scalar, a copy already
    g = g.copy()  # a basic index gives a view
    parts = index if type(index) is tuple else (index,)
    if all(isinstance(p, (int, np.integer, slice, type(None), type(Ellipsis))) or
           (isinstance(p, np.ndarray) and p.dtype == bool) for p in parts):
        return g  # no element named twice
    ids = np.arange(g.size).reshape(g.shape)
    owner = np.full(x_bar.shape, -1, dtype=np.intp)
    owner[index] = ids
    g[owner[index] != ids] = 0.0
    return g


def stored_into(x: object, g: object) -> object:
    """The cotangent of the value ``x[index] = v`` stored, from the cotangent ``g`` of the
    elements it wrote: ``g``, or zero where ``x`` holds integers or bools (the store
    truncated v, a step function whose derivative is zero)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "biu":
        return g
    return np.zeros(np.shape(g)) if np.ndim(g) else 0.0


def cast_vjp(g: object, dtype: object) -> object:
    """The cotangent through a conversion to ``dtype`` (``astype``, ``np.asarray(x,
    dtype=...)``): ``g``, or zero for an integer or bool dtype (truncation)."""
    if dtype is None or np.dtype(dtype).kind not in "biu":
        return g
    return np.zeros(np.shape(g)) if np.ndim(g) else 0.0


# --------------------------------------------------------------------------------------------
# Errors


def unsupported(message: str) -> None:
    """Raises ``adgen.errors.RuleError`` (NotImplementedError in a module without adgen).

    Raises:
        RuleError: always.
    """
    try:
        from adgen.errors import RuleError
    except ImportError:  # a standalone module run where adgen is not installed
        raise NotImplementedError(message) from None
    # the user's line, when a pullback adgen compiled is on the stack (looked up, not
    # imported: a standalone module, whose helpers are copied from here, has no adgen import)
    import sys

    locate = getattr(sys.modules.get("adgen.runtime"), "locate", None)
    raise locate(RuleError(message)) if locate is not None else RuleError(message)


# --------------------------------------------------------------------------------------------
# The structure of a value: what a pullback may look at without reading numbers.
#
# shape_tree(x) is x's shape for an array or a number, a list of the entries' trees for a
# list, ("tuple", tree0, tree1, ...) for a tuple (a shape never holds a string, so the two
# cannot be confused), a dict of trees for a dict, and None for what has no float content.


def shape_tree(x: object) -> object:
    """The shapes, lengths and keys of ``x``, never its numbers (see the comment above)."""
    if isinstance(x, np.ndarray):
        return x.shape
    if isinstance(x, list):
        return [shape_tree(v) for v in x]
    if isinstance(x, tuple):
        return ("tuple", *[shape_tree(v) for v in x])
    if isinstance(x, dict):
        return {k: shape_tree(v) for k, v in x.items()}
    if isinstance(x, (type({}.values()), type({}.items()), type({}.keys()))):
        return [shape_tree(v) for v in x]  # a dict's view: its cotangent is a list
    if x is None or isinstance(x, (bool, np.bool_, str, bytes)):
        return None
    if isinstance(x, (int, float, complex, np.number)):
        return ()
    return None


def is_tuple_tree(tree: object) -> bool:
    """Whether a shape tree describes a tuple (and is not an array's shape)."""
    return isinstance(tree, tuple) and len(tree) > 0 and tree[0] == "tuple"


def tree_items(tree: object) -> list:
    """The entries' trees of a list or tuple tree."""
    return list(tree[1:]) if is_tuple_tree(tree) else list(tree)


def tree_len(tree: object) -> int:
    """The length of the list or tuple a shape tree describes."""
    return len(tree_items(tree))


def as_container(items: list, tree: object) -> object:
    """``items`` as the container type (list or tuple) that ``tree`` describes."""
    return tuple(items) if is_tuple_tree(tree) else list(items)


def zeros_for(shape: object, g: object) -> np.ndarray:
    """Zeros of ``shape`` that can hold the cotangent ``g``: complex128 where ``g`` is complex
    (a scatter into float zeros would drop its imaginary part), else float64."""
    return np.zeros(shape, np.complex128 if np.iscomplexobj(g) else np.float64)


def sequence_vjp(g: object, tree: object) -> object:
    """The cotangent of ``list(x)`` / ``tuple(x)`` given as a list ``g``, as ``x`` was: the
    same container, or an array of the rows of ``x`` (None items are zero rows)."""
    items = list(g)
    if type(tree) is tuple and (not tree or type(tree[0]) is int):  # x was an array
        row = tree[1:]
        rows = np.array([np.zeros(row) if v is None else v for v in items])
        kind = np.complex128 if rows.dtype.kind == "c" else np.float64
        return rows.astype(kind, copy=False).reshape(tree)
    return as_container(items, tree)


def sorted_positions(out: list, iterable: object) -> list:
    """For each item of ``out = sorted(iterable, ...)``, the position in ``iterable`` it came
    from, found without the ``key`` (a lambda the pullback cannot see): ``sorted`` returns
    the very items, and among equal ones keeps their order (it is stable), so the first
    unused position holding the same object, else an equal value, is where each came from.
    A dict's keys: an empty list (they carry no gradient)."""
    if isinstance(iterable, dict):
        return []
    items = list(iterable)
    free: dict = {}
    for i, v in enumerate(items):
        try:
            free.setdefault(v, []).append(i)
        except TypeError:  # an array, a pair holding one: matched one by one below
            free = {}
            break
    used = [False] * len(items)
    positions = []
    for v in out:
        found = None
        if free:
            waiting = free.get(v)
            found = waiting.pop(0) if waiting else None
        else:
            found = next((i for i, w in enumerate(items) if not used[i] and w is v), None)
            if found is None:
                found = next((i for i, w in enumerate(items) if not used[i] and
                              same_item(w, v)), None)
        if found is None:
            unsupported("the gradient of sorted(): an item of its result matches none of its "
                        "argument's (a key that changes the items, or NaN)")
        used[found] = True
        positions.append(found)
    return positions


def same_item(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` are the same item of a sequence sorted() ordered: the same
    object, equal arrays, or tuples / lists of such (a dict's ``(key, value)`` pairs)."""
    if a is b:
        return True
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same_item(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def sorted_vjp(g: object, out: object, iterable: object) -> object:
    """Adjoint of ``out = sorted(iterable, key=..., reverse=...)``: the k-th item of ``g``
    goes back to the position the k-th item of ``out`` came from; as ``iterable`` was (a
    list, a tuple, an array's rows). A dict's keys get none (zeros for its values)."""
    if isinstance(iterable, dict):
        return tree_zeros(shape_tree(iterable))
    cts = list(g) if g is not None else [None] * len(out)
    back = [None] * len(cts)
    for k, i in enumerate(sorted_positions(out, iterable)):
        back[i] = cts[k]
    return sequence_vjp(back, shape_tree(iterable))


def sorted_jvp(d: object, result: object, iterable: object) -> object:
    """Tangent of ``result = sorted(iterable, ...)`` from the tangent ``d`` of ``iterable``:
    its items in the order ``result`` takes ``iterable``'s (a list; a dict's keys: zeros)."""
    if isinstance(iterable, dict) or d is None:
        return [0.0] * len(result)
    tangents = list(d)
    return [tangents[i] for i in sorted_positions(result, iterable)]


def tree_numeric_shape(tree: object) -> object:
    """The shape numpy gives the value ``tree`` describes, or None if it is ragged."""
    if tree is None or isinstance(tree, dict):
        return None
    if isinstance(tree, list) or is_tuple_tree(tree):
        inner = [tree_numeric_shape(t) for t in tree_items(tree)]
        if any(s is None for s in inner) or any(s != inner[0] for s in inner):
            return None
        return (len(inner),) + (inner[0] if inner else ())
    return tuple(tree)


def tree_zeros(tree: object) -> object:
    """The zero cotangent of the value ``tree`` describes: zeros of the same structure."""
    if tree is None:
        return None
    if isinstance(tree, dict):
        return {k: tree_zeros(t) for k, t in tree.items()}
    if isinstance(tree, list) or is_tuple_tree(tree):
        return as_container([tree_zeros(t) for t in tree_items(tree)], tree)
    return np.zeros(tree) if len(tree) else np.float64(0.0)


# --------------------------------------------------------------------------------------------
# Broadcasting


def broadcastable(shape: tuple, to: tuple) -> bool:
    """Whether numpy broadcasting takes ``shape`` to ``to``."""
    if len(shape) > len(to):
        return False
    return all(s in (1, t) for s, t in zip(shape[::-1], to[::-1]))


def split_sequence(g: object, tree: object, seq: object) -> object:
    """The part of ``g`` that belongs to the list or tuple operand ``tree`` of a ``+``.

    Two lists (or tuples) concatenate: the left operand gets the head of g, the right one the
    tail (``seq`` says which). A list added to an array is numpy broadcasting instead; when an
    array ``g`` could be either, this refuses rather than guess.

    Raises:
        RuleError: when ``seq`` is None, or the case is ambiguous.
    """
    n = tree_len(tree)
    numeric = tree_numeric_shape(tree)
    if not isinstance(g, (list, tuple)):
        g_shape = np.shape(g)
        fits = numeric is not None and broadcastable(numeric, g_shape)
        if fits and (len(g_shape) == 0 or g_shape[0] == n or len(numeric) < len(g_shape)):
            return unbroadcast(g, numeric)  # numpy arithmetic on a list operand
        if fits or seq not in ("head", "tail"):
            unsupported("cannot tell whether this + concatenated lists or broadcast a list "
                        "against an array; convert the list with np.asarray first")
    elif seq not in ("head", "tail"):
        unsupported("this operation on a Python list/tuple is not differentiable here")
    part = g[:n] if seq == "head" else g[len(g) - n:]
    return as_container(list(part), tree)


def sequence_product_vjp(g: object, tree: object, other: object) -> object:
    """The cotangent of the operand of ``x * other`` (or ``other * x``) whose shape tree is
    ``tree``, where ``x`` or ``other`` is a Python list or tuple.

    A list or tuple times an int (``[v] * 3``, ``3 * (a, b)``) is a repetition: the sequence
    gets the sum of its copies' cotangents, the count zero. Anything else is NumPy's
    arithmetic with the sequence taken for an array (``W * v`` with ``W = [1., 2., 3.]``):
    the product's rule.
    """
    if g is None:
        return None
    if (isinstance(tree, list) or is_tuple_tree(tree)) and \
            isinstance(other, (int, np.integer)):
        items = tree_items(tree)
        k = len(items)
        copies = list(g)
        sums: list = []
        for j in range(k):
            acc = None
            for i in range(j, len(copies), k):
                acc = copies[i] if acc is None else sum_cotangents(acc, copies[i])
            sums.append(tree_zeros(items[j]) if acc is None else acc)
        return as_container(sums, tree)
    if isinstance(other, (list, tuple)) and tree == () and isinstance(g, (list, tuple)):
        return 0.0  # the count of a repetition
    return unbroadcast(g * other, tree)


def sum_cotangents(a: object, b: object) -> object:
    """``a + b`` of two cotangents of one value (arrays, numbers, or lists and tuples of
    them item by item); None stands for zero."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a)(sum_cotangents(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for key, v in b.items():
            out[key] = sum_cotangents(out.get(key), v)
        return out
    return a + b


def sum_keepdims(a: np.ndarray, axis: int) -> np.ndarray:
    """``np.sum(a, axis=axis, keepdims=True)`` for one int ``axis`` (a softmax's adjoint):
    a float64 matrix's row sums as one matrix-vector product (NumPy reduces short rows one at a
    time: 2 us against 5.5 at 128 x 10), anything else by ``np.add.reduce`` (without
    ``np.sum``'s wrapper). The product is ``ndarray.dot``: ``@`` (the matmul ufunc) takes
    about 0.3 us more to set up for the same BLAS call."""
    if type(a) is np.ndarray and a.ndim == 2 and axis in (1, -1) and a.dtype.char == "d":
        ones = np.empty(a.shape[1])
        ones.fill(1.0)
        return a.dot(ones)[:, None]
    return np.add.reduce(a, axis=axis, keepdims=True)


def unbroadcast(g: object, shape: object, seq: object = None) -> object:
    """Sums the cotangent ``g`` down to ``shape``, undoing numpy broadcasting.

    Leading axes that broadcasting added are summed away, and axes where ``shape`` has 1 are
    summed with keepdims. A ``g`` smaller than ``shape`` (a scalar standing for a constant
    cotangent) is broadcast up. For ``shape == ()`` the result is a numpy float.

    ``shape`` may also be a :func:`shape_tree` of a list or tuple operand of ``+``, with
    ``seq="head"`` for the left operand and ``"tail"`` for the right: two sequences
    concatenate, and each gets its part of ``g`` (see :func:`split_sequence`).

    Raises:
        RuleError: when ``g`` is a list or tuple where numbers were expected (``*`` on a
            Python list repeats it; that is not arithmetic).
    """
    if type(shape) is tuple and (not shape or type(shape[0]) is int):
        # the common cases first: an array's or a number's shape, an array summed to a number
        if type(g) is np.ndarray:
            gshape = g.shape
            if gshape == shape:
                return g
            if shape == ():
                return g.sum()
            if len(shape) == 2 and len(gshape) == 2 and shape[1] == 1 and \
                    gshape[0] == shape[0] and g.dtype.char == "d":
                # the rows' sums of a matrix (a keepdims reduction's or a row-normalisation's
                # adjoint) as one matrix-vector product: NumPy reduces short rows one at a
                # time, several times slower; and without the general path's checks
                # (ndarray.dot: as sum_keepdims)
                ones = np.empty(gshape[1])
                ones.fill(1.0)
                return g.dot(ones)[:, None]
        elif shape == () and (type(g) is float or isinstance(g, np.floating)):
            return g
    if isinstance(shape, list) or is_tuple_tree(shape):
        return split_sequence(g, shape, seq)
    if isinstance(g, dict):
        # an object's adjoint (adjoints.ObjectAdjoint) as an operator's cotangent: p + q on
        # objects of the user's class ran its __add__, which the compiled code does not call
        # (transforms.operator_methods calls it where the code shows p is one)
        unsupported("an operator (p + q, p * k) on objects of one of your classes ran a method "
                    "of their class (__add__, __mul__) where adgen could not tell the values "
                    "were such objects (an attribute p.pos, an item ps[0]): give it a name "
                    "annotated with its class (pos: Vec = p.pos; pos + vel), or call the "
                    "method yourself (p.pos.__add__(p.vel))")
    if g is None or shape is None:
        return None  # a zero adjoint, or one of a value that has none (a str, None)
    shape = tuple(shape)
    if isinstance(g, (list, tuple)):
        unsupported("arithmetic on Python lists/tuples (repetition with *) is not "
                    "differentiable here; build arrays, or use np.tile")
    if isinstance(g, np.ndarray) and type(g) is not np.ndarray and \
            not isinstance(g, np.memmap):
        # an np.matrix or a masked array reached a pullback (a callback's or a library's
        # result): its * is a matrix product, its sums skip masked elements, so the
        # adjoint computed with it would be silently wrong
        unsupported("an ndarray subclass (an np.matrix or a masked array) reached the "
                    "gradient: its operators mean something else than a plain ndarray's "
                    "(np.matrix: * is a matrix product; a masked array skips masked "
                    "elements); convert it with np.asarray (a masked array: .filled(value)) "
                    "where it is made")
    if np.shape(g) == shape:
        return g
    g = np.asarray(g)
    lead = g.ndim - len(shape)
    # (the method: np.sum's dispatch costs as much as summing a small array)
    if lead > 0:
        g = g.sum(axis=tuple(range(lead)))
    if g.ndim == len(shape):
        ones = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
        if ones == (1,) and g.ndim == 2 and g.dtype == np.float64:
            # the rows' sums of a matrix (a row-normalisation's adjoint) as one product:
            # NumPy reduces short rows one at a time, several times slower
            g = (g @ np.ones(g.shape[1]))[:, None]
        elif ones:
            g = g.sum(axis=ones, keepdims=True)
    if g.shape != shape:
        # A cotangent given with fewer axes stands for its broadcast.
        g = broadcast_copy(g, shape)
    return g[()] if shape == () else g


def broadcast_copy(g: np.ndarray, shape: tuple) -> np.ndarray:
    """``np.broadcast_to(g, shape).copy()`` (a new array), in a third of its time."""
    out = np.empty(shape, g.dtype)
    out[...] = g
    return out


def balanced_eq(x: object, z: object, y: object) -> object:
    """1 where ``x == z != y``, 0.5 where ``x == z == y``, else 0 (JAX's tie rule).

    For ``z = max(x, y)`` this is the share of the cotangent that goes to ``x``.
    """
    scalars = (float, int, np.float64)
    if type(x) in scalars and type(z) in scalars and type(y) in scalars:
        # numbers (a scalar loop's max(a, b)): the same rule without three ufunc calls;
        # a NaN equals nothing here as in np.equal
        return (0.5 if y == z else 1.0) if x == z else 0.0
    return np.where(np.equal(x, z), np.where(np.equal(y, z), 0.5, 1.0), 0.0)


def extreme_vjp(g: object, out: object, x: object, y: object) -> object:
    """The cotangent of ``x`` in ``out = max(x, y)`` (or min): ``g`` times its share of the
    result (``balanced_eq``). With ``y`` None, ``x`` is the one iterable of ``max(xs)``: the
    items equal to the result share ``g``, in the container ``x`` is (list, tuple, array).
    None for an absent ``x``."""
    if x is None:
        return None
    if y is not None:
        return g * balanced_eq(x, out, y)
    if isinstance(x, np.ndarray):
        hits = np.equal(x, out)
        return g * hits / max(int(np.sum(hits)), 1)
    items = list(x)
    hits = [bool(np.all(np.equal(v, out))) for v in items]
    share = g / max(sum(hits), 1)
    out = [share if h else 0.0 * share for h in hits]
    return tuple(out) if isinstance(x, tuple) else out


def extreme_tangent_vjp(g: object, shape: object, out: object, x: object,
                        y: object) -> object:
    """The cotangent of the tangent ``d`` in ``extreme_tangent(d, out, x, y)`` (second
    derivatives through max / min), ``shape`` being ``shape_tree(d)``: ``g`` times ``x``'s
    share of the result, summed to that shape (``d`` of a number broadcast against an
    array); with ``y`` None, as :func:`extreme_vjp` (the items equal to the result share
    ``g``)."""
    if y is None:
        return extreme_vjp(g, out, x, None)
    return unbroadcast(g * balanced_eq(x, out, y), shape)


def extreme_tangent(d: object, out: object, x: object, y: object) -> object:
    """The term of ``x``'s tangent ``d`` in the tangent of ``max(x, y)`` (or min): ``d``
    times its share (``balanced_eq``); with ``y`` None (``max(xs)`` of one iterable), the
    tangents of the items equal to the result, averaged over ties."""
    if y is not None:
        return d * balanced_eq(x, out, y)
    if isinstance(x, np.ndarray):
        hits = np.equal(x, out)
        return np.sum(np.where(hits, d, 0.0)) / max(int(np.sum(hits)), 1)
    hits = [k for k, v in enumerate(list(x)) if bool(np.all(np.equal(v, out)))]
    ds = list(d)
    return sum(ds[k] for k in hits) / max(len(hits), 1)


def xlogy(x: object, y: object) -> object:
    """``x * log(y)``, defined as 0 where ``x == 0`` (the exponent adjoint of ``y ** b``)."""
    x = np.asarray(x)
    x = x if x.dtype.kind == "c" else x.astype(np.float64)  # complex stays complex
    safe = np.where(x == 0, 1.0, y)
    # a negative base: NaN, without a warning (an exponent passed to a helper as a parameter
    # gets this cotangent even where the caller's exponent is a constant that drops it)
    with np.errstate(invalid="ignore", divide="ignore"):
        res = np.where(x == 0, 0.0, x * np.log(safe))
    return res[()] if res.ndim == 0 else res


def xlogy_dx(x: object, y: object) -> object:
    """The partial derivative of ``xlogy(x, y)`` in ``x``: ``log(y)``, 0 where ``x == 0`` (as
    the value is), broadcast over both (second derivatives of ``a ** b``)."""
    x = np.asarray(x)
    safe = np.where(x == 0, 1.0, y)
    return np.where(x == 0, 0.0, np.log(safe))


def xlogy_dy(x: object, y: object) -> object:
    """The partial derivative of ``xlogy(x, y)`` in ``y``: ``x / y``, 0 where ``x == 0``."""
    x = np.asarray(x)
    safe = np.where(x == 0, 1.0, y)
    return np.where(x == 0, 0.0, x / safe)


def dict_vjp(g: object, tree: object) -> object:
    """The cotangent of ``mapping`` in ``dict(mapping)`` (a copy of a dict; ``tree`` is
    ``shape_tree(mapping)``): the copy's, key by key, zeros where it has none."""
    if not isinstance(tree, dict):
        unsupported("dict() of something other than a dict (pairs, keywords) is not "
                    "differentiable here; copy a dict with dict(d) or d.copy(), or build it "
                    "with a literal or a comprehension")
    got = g if isinstance(g, dict) else {}
    return {k: got[k] if got.get(k) is not None else tree_zeros(v) for k, v in tree.items()}


def fields_vjp(g: object, fields: tuple, tree: object, skip: tuple = ()) -> object:
    """The cotangent, in ``tree``'s structure, of values given to a namedtuple of ``fields``
    whose cotangent is ``g`` (a tuple, or a dict by field name; None: zero): a tuple tree
    takes the fields in order (``cls(*args)``), a dict tree by its keys (``cls(**kwargs)``);
    the fields in ``skip`` get zeros (those ``_replace`` replaced)."""
    def of(f: str) -> object:
        if f in skip or g is None:
            return None
        return g.get(f) if isinstance(g, dict) else g[fields.index(f)]

    if isinstance(tree, dict):
        return {k: copy_vjp(of(k), t) for k, t in tree.items()}
    return as_container([copy_vjp(of(f), t) for f, t in zip(fields, tree_items(tree))], tree)


def copy_vjp(g: object, tree: object) -> object:
    """The cotangent of ``x`` in ``copy.copy(x)`` (``tree`` is ``shape_tree(x)``): the
    copy's, in ``x``'s structure, zeros where it has none."""
    if g is None:
        return tree_zeros(tree)
    if isinstance(tree, dict):
        got = g if isinstance(g, dict) else {}
        return {k: copy_vjp(got.get(k), t) for k, t in tree.items()}
    if isinstance(tree, list) or is_tuple_tree(tree):
        items = list(g) if isinstance(g, (list, tuple)) else [None] * tree_len(tree)
        return as_container([copy_vjp(v, t) for v, t in zip(items, tree_items(tree))], tree)
    return g


def sum_list_vjp(g: object, tree: object) -> object:
    """Adjoint of ``sum(seq)`` (builtin or ``math.fsum``): ``g`` for every entry."""
    if type(tree) is tuple and tree and type(tree[0]) is int:
        # an array (sum(x ** 2), sum(A) of a matrix): Python adds its rows, as
        # np.sum(a, axis=0) does, so each row gets g (summed down to a row's shape)
        return np.broadcast_to(unbroadcast(g, tree[1:]), tree).copy()
    if not (isinstance(tree, list) or is_tuple_tree(tree)):
        unsupported("sum() of something other than a list or tuple (a generator, a dict view) "
                    "is not differentiable here; sum a list")
    items = [unbroadcast(g, tree_numeric_shape(t)) for t in tree_items(tree)]
    return as_container(items, tree)


# --------------------------------------------------------------------------------------------
# Reductions


def reduced_axes(axis: object, ndim: int) -> tuple:
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(int(a) % ndim for a in axis)) if ndim else ()
    return (int(axis) % ndim,) if ndim else ()


def expand_reduced(g: object, shape: tuple, axis: object, keepdims: bool) -> np.ndarray:
    """The reduction output ``g`` with the reduced axes of ``shape`` put back as size 1."""
    g = np.asarray(g)
    if keepdims:
        return g
    axes = reduced_axes(axis, len(shape))
    return np.reshape(g, tuple(1 if i in axes else n for i, n in enumerate(shape)))


def sum_vjp(g: object, shape: tuple, axis: object, keepdims: bool) -> object:
    """Adjoint of ``np.sum(a, axis, keepdims)``: ``g`` broadcast back over the summed axes."""
    if axis is None and not keepdims and type(shape) is tuple and (
            type(g) is float or type(g) is np.float64 or np.ndim(g) == 0):
        return filled(shape, g) if shape else np.asarray(g)[()]
    shape = tuple(shape)
    out = broadcast_copy(expand_reduced(g, shape, axis, keepdims), shape)
    return out[()] if shape == () else out


def filled(shape: tuple, g: object) -> np.ndarray:
    """``np.full(shape, g)`` for a number ``g``, without np.full's dtype inference."""
    out = np.empty(shape, dtype=g.dtype if isinstance(g, (np.generic, np.ndarray)) else
                   np.complex128 if isinstance(g, complex) else np.float64)
    out.fill(g)
    return out


def mean_vjp(g: object, shape: tuple, axis: object, keepdims: bool) -> object:
    """Adjoint of ``np.mean(a, axis, keepdims)``: the sum adjoint over the count averaged."""
    if axis is None and not keepdims and type(shape) is tuple and shape and (
            type(g) is float or type(g) is np.float64 or np.ndim(g) == 0):
        count = 1
        for n in shape:
            count *= n
        if count:
            return filled(shape, g / count)  # the common case: one pass over the adjoint
    shape = tuple(shape)
    count = 1
    for i in reduced_axes(axis, len(shape)):
        count *= shape[i]
    return sum_vjp(g, shape, axis, keepdims) / count


def max_vjp(g: object, out: object, a: object, axis: object, keepdims: bool) -> object:
    """Adjoint of ``np.max``/``np.min``: ``g`` split evenly between the tied extrema."""
    if axis is None and not keepdims and type(a) is np.ndarray and a.ndim > 0 and (
            type(g) is float or type(g) is np.float64 or np.ndim(g) == 0):
        hits = a == out
        count = np.count_nonzero(hits)
        if count == 1:  # one extremum, the common case: g at its place
            res = zeros_for(a.shape, g)
            res.ravel()[hits.argmax()] = g  # a fresh array: ravel is a view of it
            return res
        return hits * (g / count)
    if keepdims and type(a) is np.ndarray and type(out) is np.ndarray and \
            out.ndim == a.ndim and a.ndim:
        # a keepdims reduction (a softmax's shift): no reshapes; NaN in the extrema is
        # ruled out by their sum (inf - inf makes it NaN too, and takes the general path)
        hits = a == out
        total = out.sum()
        if np.count_nonzero(hits) == out.size and total == total:
            return np.where(hits, g, 0.0)
    a = np.asarray(a)
    extremum = expand_reduced(out, a.shape, axis, keepdims)
    hits = (a == extremum)
    if a.ndim and np.count_nonzero(hits) == extremum.size and \
            not np.isnan(extremum).any():
        # one extremum in each reduced slice (each holds one at least, as no extremum is
        # NaN): g at its place, without counting per slice (a slow reduction of booleans)
        return np.where(hits, expand_reduced(g, a.shape, axis, keepdims), 0.0)
    count = hits.sum(axis=reduced_axes(axis, a.ndim), keepdims=True)
    res = expand_reduced(g, a.shape, axis, keepdims) * hits / count
    return res[()] if a.ndim == 0 else res


def prod_vjp(g: object, a: object, axis: object, keepdims: bool) -> object:
    """Adjoint of ``np.prod``: ``g`` times the product of the other entries (zeros are fine).

    The product of the others is a left times a right exclusive cumulative product, so no
    division by an entry is needed.
    """
    a = np.asarray(a)
    a = a if a.dtype.kind == "c" else a.astype(np.float64)  # complex stays complex
    if a.ndim == 0:
        return g if np.iscomplexobj(g) else np.asarray(g, dtype=np.float64)[()]
    axes = reduced_axes(axis, a.ndim)
    kept = [i for i in range(a.ndim) if i not in axes]
    perm = kept + list(axes)
    kept_shape = tuple(a.shape[i] for i in kept)
    flat = np.reshape(np.transpose(a, perm), kept_shape + (-1,))
    ones = np.ones(kept_shape + (1,))
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.flip(np.cumprod(np.concatenate([ones, np.flip(flat, -1)[..., :-1]], axis=-1),
                               axis=-1), -1)
    gk = np.reshape(np.asarray(g), kept_shape + (1,))
    res = np.reshape(gk * left * right, kept_shape + tuple(a.shape[i] for i in axes))
    return np.transpose(res, np.argsort(perm))


def var_vjp(g: object, a: object, axis: object, ddof: object, keepdims: bool) -> object:
    """Adjoint of ``np.var(a, axis, ddof, keepdims)``: ``2 g conj(a - mean) / (N - ddof)``."""
    a = np.asarray(a)
    a = a if a.dtype.kind == "c" else a.astype(np.float64)  # complex stays complex
    axes = reduced_axes(axis, a.ndim)
    count = 1
    for i in axes:
        count *= a.shape[i]
    # |a - mean|^2 of a complex a: the cotangent of |w|^2 is 2 conj(w) (JAX's convention)
    centered = np.conj(a - np.mean(a, axis=axes, keepdims=True))
    res = expand_reduced(g, a.shape, axis, keepdims) * 2.0 * centered / (count - ddof)
    return res[()] if a.ndim == 0 else res


def cumsum_vjp(g: object, shape: tuple, axis: object) -> np.ndarray:
    """Adjoint of ``np.cumsum(a, axis)``: the reversed cumulative sum of ``g``."""
    if axis is None:
        flat = np.flip(np.cumsum(np.flip(np.ravel(g))))
        return np.reshape(flat, shape)
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def sort_vjp(g: object, a: object, axis: object) -> np.ndarray:
    """Adjoint of ``np.sort(a, axis)``: ``g`` scattered back to where each value came from."""
    a = np.asarray(a)
    if axis is None:
        order = np.argsort(np.ravel(a), kind="stable")
        res = zeros_for(a.size, g)
        res[order] = np.ravel(g)
        return np.reshape(res, a.shape)
    order = np.argsort(a, axis=axis, kind="stable")
    res = zeros_for(a.shape, g)
    np.put_along_axis(res, order, np.asarray(g), axis=axis)
    return res
