"""Second derivatives through np.multiply.at / np.maximum.at are refused (their jvp helper
has no reverse rule) at the user's line, with a form that second derivatives follow: the
update as indexed assignments in a loop. The hint showed only the maximum's form
(x[i[k]] = max(x[i[k]], v[k])) for a product too. The hinted form is checked against
central differences of the gradient, under both policies.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

IDX = np.array([0, 1, 1, 2])
X = np.array([0.3, -0.7, 1.1, 0.4])


def scaled_at(x):
    out = np.ones(3) + x[:3]
    np.multiply.at(out, IDX, x[:4])
    return np.sum(out ** 2)


def scaled_in_a_loop(x):
    out = np.ones(3) + x[:3]
    v = x[:4]
    for k in range(len(IDX)):
        out[IDX[k]] = out[IDX[k]] * v[k]
    return np.sum(out ** 2)


def test_the_refusal_names_the_line_and_the_form_for_a_product():
    with pytest.raises(adgen.MissingRuleError) as err:
        adgen.hessian(scaled_at)(X)
    assert err.value.location.file == __file__
    assert err.value.location.source_line.strip() == "np.multiply.at(out, IDX, x[:4])"
    assert "x[i[k]] = x[i[k]] * v[k]" in str(err.value)


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_the_hinted_loop_has_second_derivatives(policy):
    g = adgen.grad(scaled_in_a_loop, mutation=policy)
    expected = np.array([numerical_grad(lambda y: g(y)[k], (X,), 0) for k in range(X.size)])
    np.testing.assert_allclose(adgen.hessian(scaled_in_a_loop, mutation=policy)(X), expected,
                               rtol=1e-6, atol=1e-8)
    # and the same values as np.multiply.at's first derivatives
    np.testing.assert_allclose(g(X), adgen.grad(scaled_at)(X), rtol=1e-12)
