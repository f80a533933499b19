"""A helper for tests/e2e/test_methods_rebound_after_a_call.py, in a module of its own: it
names no class of the objects it is given."""


def rebound_by_a_method_of_a_given_object(a, b, m, other):
    s = m.score(b)
    m.swap(other)
    return s + m.score(a)
