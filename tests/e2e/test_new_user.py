"""Programs written the way a newcomer writes them (layers with ``__call__``, models as
classes, parameters in dataclasses), each gradient checked against central differences
computed here, independently of adgen. Each test is a problem a new user ran into."""

from __future__ import annotations

import math

import numpy as np

import adgen


def fd(f, x, eps=1e-6):
    """Central differences of a scalar function of a float or a float array."""
    if isinstance(x, float):
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


class Dense:
    def __init__(self, nin, nout, seed):
        rng = np.random.default_rng(seed)
        self.W = rng.standard_normal((nin, nout)) * 0.5
        self.b = np.linspace(-0.1, 0.1, nout)

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


class MLP:
    def __init__(self, sizes):
        self.layers = [Dense(a, b, k) for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def loss(self, x, y):
        return np.mean((self.forward(x) - y) ** 2)


X = np.random.default_rng(0).standard_normal((6, 3))
Y = np.random.default_rng(1).standard_normal((6, 2))
GLOBAL_LAYER = Dense(3, 2, 5)


def test_layers_called_as_objects_in_a_method():
    # layer(x) on an object with __call__, taken from a list in a loop: it was a
    # MissingRuleError ("<Dense object at 0x...> has no derivative rule")
    net = MLP([3, 4, 2])
    g = adgen.grad(net.loss)(X, Y)
    assert np.allclose(g, fd(lambda x: net.loss(x, Y), X), atol=1e-7)


def test_gradient_reaches_the_attributes_of_called_layers():
    net = MLP([3, 4, 2])

    def loss_of(model, x, y):
        return model.loss(x, y)

    g = adgen.grad(loss_of)(net, X, Y)
    assert isinstance(g, MLP) and isinstance(g.layers[1], Dense)
    for k in range(2):
        for attr in ("W", "b"):
            original = getattr(net.layers[k], attr).copy()

            def f(v, k=k, attr=attr, original=original):
                setattr(net.layers[k], attr, v)
                try:
                    return loss_of(net, X, Y)
                finally:
                    setattr(net.layers[k], attr, original)

            assert np.allclose(getattr(g.layers[k], attr), fd(f, original), atol=1e-7)


def test_a_global_layer_and_a_layer_in_a_variable():
    def loss_global(x):
        return np.sum(GLOBAL_LAYER(x) ** 2)

    def loss_var(layer, x):
        act = layer
        return np.sum(act(x) ** 2)

    x = np.array([0.3, -0.2, 1.5])
    assert np.allclose(adgen.grad(loss_global)(x), fd(loss_global, x))
    g = adgen.grad(loss_var, argnums=(0, 1))(GLOBAL_LAYER, x)
    b0 = GLOBAL_LAYER.b.copy()
    layer = Dense(3, 2, 5)
    assert np.allclose(g[0].b, fd(lambda b: loss_var(_with(layer, b=b), x), b0))
    assert np.allclose(g[1], fd(lambda z: loss_var(GLOBAL_LAYER, z), x))


def _with(layer, **attrs):
    for k, v in attrs.items():
        setattr(layer, k, v)
    return layer


PARAMS = {"w": np.array([0.5, -1.0, 2.0]), "c": 0.3}


def _dict_fd(f, params):
    """Central differences of f(params) with respect to each entry of a dict of parameters."""
    out = {}
    for key, value in params.items():
        def g(v, key=key):
            return f({**params, key: v})
        out[key] = fd(g, value)
    return out


def test_iterating_a_dict_and_its_views():
    # `for k in d` was a raw TypeError in the pullback (dict + list); list(d.values()),
    # list(d.items()) and sum(d.values()) were a MissingRuleError without a line
    def by_keys(p):
        return sum(np.sum(np.sin(p[k]) * 2.0) for k in p)

    def by_values(p):
        vals = list(p.values())
        return np.sum(vals[0] ** 3) + np.exp(vals[1])

    def by_items(p):
        total = 0.0
        for name, v in list(p.items()):
            total = total + np.sum(np.tanh(v))
        return total

    def summed(p):
        return np.sum(sum(p.values()) ** 2)

    for f in (by_keys, by_values, by_items, summed):
        g = adgen.grad(f)(PARAMS)
        want = _dict_fd(f, PARAMS)
        assert set(g) == set(PARAMS), f.__name__
        for key in PARAMS:
            assert np.allclose(g[key], want[key], atol=1e-7), (f.__name__, key)


def test_a_polynomial_evaluated_at_zero():
    # c[k] * x ** k with k = 0 at x = 0: the pullback computed 0 * 0.0 ** -1 (a raw
    # ZeroDivisionError for a float, nan for an array); d(x ** 0)/dx is 0, as in JAX
    def poly(x, c):
        return sum(c[k] * x ** k for k in range(len(c)))

    def poly_math(x, c):
        total = 0.0
        for k, ck in enumerate(c):
            total += ck * math.pow(x, k) + ck * np.power(x, float(k))
        return total

    c = np.array([1.0, 2.0, 3.0])
    assert adgen.grad(poly)(0.0, c) == 2.0
    xs = np.array([0.0, 0.5, -1.0])
    g = adgen.grad(lambda x: np.sum(poly(x, c)))(xs)
    assert np.allclose(g, 2.0 + 6.0 * xs)
    assert np.allclose(adgen.grad(poly_math)(0.0, c), 4.0)
    assert np.allclose(adgen.grad(poly, argnums=1)(0.0, c), [1.0, 0.0, 0.0])
    _, tangent = adgen.jvp(poly, (0.0, c), (1.0, np.zeros(3)))
    assert tangent == 2.0
    # the exponent's own gradient: d(x ** k)/dk = x ** k log x
    g_k = adgen.grad(lambda k: 2.0 ** k + 0.0 ** 2.0)(3.0)
    assert np.isclose(g_k, fd(lambda k: 2.0 ** k, 3.0))


class Holder:
    pass


def _set_val(o, v):
    o.val = v * 2.0


def test_a_function_held_in_a_variable_that_writes_an_object():
    # f(o, s) with f = _set_val: the call was run but left out of the pullback (o.val's
    # gradient silently lost: 0.86 relative error)
    def through_variable(s):
        o = Holder()
        o.val = 0.0
        f = _set_val
        f(o, s)
        return o.val * 3.0

    def through_parameter(s, fn=_set_val):
        o = Holder()
        fn(o, s)
        return o.val ** 2

    for f in (through_variable, through_parameter):
        assert np.isclose(adgen.grad(f)(2.0), fd(f, 2.0)), f.__name__


def test_a_parameter_handed_to_a_function_in_a_variable_is_refused():
    # the parameter is not known to change where it is passed: its gradient was lost
    def helper(o, s):
        f = _set_val
        f(o, s)

    def top(s):
        o = Holder()
        helper(o, s)
        return o.val * 3.0

    try:
        adgen.grad(top)(2.0)
    except adgen.UnsupportedError as err:
        assert "f(o, s)" in str(err) and err.location.line > 0
    else:
        raise AssertionError("a gradient where adgen cannot follow the write")


def test_a_builtin_held_in_a_variable_takes_a_dict():
    # log = print called on a dict of parameters: a MissingRuleError for print
    def loss(p, log=print):
        log("params:", p)
        return np.sum(p["w"] ** 2)

    p = {"w": np.array([1.0, -2.0])}
    assert np.allclose(adgen.grad(loss)(p, log=lambda *a: None)["w"], 2 * p["w"])
    assert np.allclose(adgen.grad(loss)(p)["w"], 2 * p["w"])


class Scaled:
    def __init__(self, scale):
        self.scale = scale

    def energy(self, x):
        return self.scale * np.sum(x ** 2)


class Shifted(Scaled):
    def __init__(self, scale, shift):
        super().__init__(scale)
        self.shift = shift

    def energy(self, x):
        return super().energy(x + self.shift) + np.sum(x)


def test_super_in_methods():
    # super() in a method was a raw RuntimeError ('super(): __class__ cell not found'), and a
    # MissingRuleError where self has a gradient (an object built inside the function)
    m = Shifted(2.0, 0.5)
    x = np.array([0.5, -1.0, 2.0])
    assert np.allclose(adgen.grad(m.energy)(x), 2.0 * 2.0 * (x + 0.5) + 1.0)

    def built_inside(scale, x):
        return Shifted(scale, 0.5).energy(x)

    assert np.isclose(adgen.grad(built_inside)(2.0, x), fd(lambda s: built_inside(s, x), 2.0))
    g = adgen.grad(built_inside, argnums=1)(2.0, x)
    assert np.allclose(g, fd(lambda z: built_inside(2.0, z), x))


class Left(Scaled):
    def energy(self, x):
        return super().energy(x) * 2.0


class Right(Scaled):
    def energy(self, x):
        return super().energy(x) + 1.0


class Both(Left, Right):  # a diamond: super() in Left reaches Right for a Both
    pass


def test_super_under_multiple_inheritance_is_refused_where_self_has_a_gradient():
    def built_inside(scale, x):
        return Left(scale).energy(x)

    x = np.array([0.5, -1.0])
    try:
        adgen.grad(built_inside)(2.0, x)
    except adgen.MissingRuleError as err:
        assert "Parent.method(self" in str(err) and err.location is not None
    else:
        raise AssertionError("a gradient through super() the MRO may redirect")
    assert Both(1.0).energy(x) == Left.energy(Both(1.0), x)  # the classes do what they say


class WithNorm:
    def __init__(self, w):
        self.w = w

    @property
    def norm(self):
        return np.sum(self.w ** 2)


def test_a_property_of_an_argument_is_its_getter():
    # m.norm was read as a stored attribute: the gradient of w was silently zero; then it was
    # refused (the parameter has no annotation); now WithNorm, which the loss sees, has its
    # getter called when the object's class has the property
    def loss(m):
        return m.norm

    w = np.array([1.0, 2.0])
    g = adgen.grad(loss)(WithNorm(w))
    np.testing.assert_allclose(g.w, 2.0 * w)  # d sum(w^2) / dw
    h = 1e-6
    assert np.isclose(g.w[1], (loss(WithNorm(w + [0, h])) - loss(WithNorm(w - [0, h]))) / (2 * h))


def test_a_property_of_a_class_the_loss_cannot_see_is_refused():
    def make(w):
        # (a property name no class the loss sees has: WithNorm's norm would be called
        # through whichever class the object has)
        class Hidden:  # not a global of the loss's module, nor in its closure
            def __init__(self, w):
                self.w = w

            @property
            def magnitude(self):
                return np.sum(self.w ** 2)

        return Hidden(w)

    def loss(m):
        return m.magnitude

    try:
        adgen.grad(loss)(make(np.array([1.0, 2.0])))
    except adgen.UnsupportedError as err:
        assert "Hidden.magnitude" in str(err) and err.location is not None
    else:
        raise AssertionError("a gradient through a property")


class Buffers:
    def __init__(self, x):
        self.a = x * 1.0
        self.b = self.a[1:]  # a view of a


def _make_state(x):
    return {"u": x * 2.0, "scale": 0.5}


def _pair(x):
    return x * 2.0, x[:2] * 1.0


def test_arrays_of_a_returned_object_or_container_written_in_place():
    # an object built inside (o = Buffers(x)) or a dict/tuple returned by a helper, whose
    # arrays the function then writes in place: the helper's pullback read the container's
    # adjoint while the written arrays kept theirs in shadow memory (0.86-0.98 relative error)
    def obj(x):
        o = Buffers(x)
        o.b *= 3.0
        o.a[0] = o.a[-1] ** 2
        return np.sum(o.a ** 2) + np.sum(o.b)

    def state(x):
        s = _make_state(x)
        s["u"][1:] += s["u"][:-1] * s["scale"]
        return np.sum(s["u"] ** 2)

    def pair(x):
        p, q = _pair(x)
        p[1:] += q
        return np.sum(p ** 2) + np.sum(q)

    x = np.array([0.5, -1.0, 2.0])
    for f in (obj, state, pair):
        for policy in ("save", "strict"):
            try:
                g = adgen.grad(f, mutation=policy)(x)
            except adgen.MutationError:
                assert policy == "strict"
                continue
            assert np.allclose(g, fd(f, x), atol=1e-6), (f.__name__, policy)


class Layer:
    def __init__(self, w):
        self.w = w
        self.cache = None

    def forward(self, x):
        self.cache = x  # an array the object did not hold when it was built
        return np.tanh(self.w * x)


def test_an_object_holding_an_argument_later():
    def f(w, x):
        layer = Layer(w)
        h = layer.forward(x)
        layer.cache += 1.0  # writes x
        return np.sum(h) + np.sum(x)

    w, x = np.array([0.3, -0.2]), np.array([1.0, 2.0])

    def plain(v):
        return f(w, v.copy())

    assert np.allclose(adgen.grad(f, argnums=1)(w, x.copy()), fd(plain, x))


class Model:
    def __init__(self, w):
        self.w = w
        self.k = 2.0

    def energy(self, x):
        return np.sum(self.w ** 2 * x) * self.k


def test_an_objects_array_written_in_place_then_read_by_a_method():
    # m.w[1:] *= 3.0; m.energy(x): the method's cotangent for m.w stayed in m's adjoint while
    # the write's pullback read m.w's shadow (0.33-0.66 relative error, argument or built)
    def scaled(m, x):
        m.w[1:] *= 3.0
        return m.energy(x)

    def built(x):
        m = Model(x * 1.0)
        m.w[1:] += m.w[:-1]
        return m.energy(x) + np.sum(m.w)

    w, x = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    for policy in ("save", "strict"):
        g = adgen.grad(scaled, mutation=policy)(Model(w.copy()), x)
        assert np.allclose(g.w, fd(lambda v: scaled(Model(v.copy()), x), w)), policy
    assert np.allclose(adgen.grad(built)(x), fd(built, x))


def test_an_item_rebound_through_one_name_and_read_through_the_list_is_refused():
    # for m in models: m.w = m.w * 2.0, then models read again: the item's adjoint followed m
    # and the read's followed models (0.49 relative error, silently)
    def twice(models, x):
        for m in models:
            m.w = m.w * 2.0
        return sum(m.energy(x) for m in models)

    def once(models, x):  # read through m only: differentiated
        total = 0.0
        for m in models:
            m.w = m.w * 2.0
            total = total + m.energy(x)
        return total

    w, x = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    try:
        adgen.grad(twice)([Model(w.copy())], x)
    except adgen.UnsupportedError as err:
        assert "models" in str(err) and err.location is not None
    else:
        raise AssertionError("a gradient through an aliased item")
    g = adgen.grad(once)([Model(w.copy())], x)
    assert np.allclose(g[0].w, fd(lambda v: once([Model(v.copy())], x), w))


class Layered:
    def __init__(self, ws):
        self.layers = [Model(w) for w in ws]


def test_a_nested_item_rebound_and_read_through_the_outer_object_is_refused():
    # layer = net.layers[0]; layer.w = 2 * layer.w; then net.layers[0].w: silently wrong too
    def nested(net, x):
        layer = net.layers[0]
        layer.w = layer.w * 2.0
        return net.layers[0].energy(x)

    try:
        adgen.grad(nested)(Layered([np.array([1.0, 2.0])]), np.array([0.5, -1.0]))
    except adgen.UnsupportedError as err:
        assert "net" in str(err)
    else:
        raise AssertionError("a gradient through an aliased nested item")


class Grid:
    def __init__(self, u):
        self.u = u.copy()

    def field(self):
        return self.u  # the object's own array

    def energy(self):
        return np.sum(self.u ** 2)


def test_an_array_a_method_returned_written_in_place():
    # refused; the message said "a Grid written in place by index (x[i] = v)"
    def through_method(u0):
        g = Grid(u0)
        f = g.field()
        f[1:] *= 2.0
        return g.energy()

    def through_attribute(u0):  # what the hint says to write
        g = Grid(u0)
        g.u[1:] *= 2.0
        return g.energy()

    u0 = np.array([0.5, -1.0, 2.0])
    try:
        adgen.grad(through_method)(u0)
    except adgen.UnsupportedError as err:
        assert "class Grid" in str(err) and "g.u[1:] *= 2.0" in str(err)
    assert np.allclose(adgen.grad(through_attribute)(u0), 2 * u0 * np.array([1.0, 4.0, 4.0]))
