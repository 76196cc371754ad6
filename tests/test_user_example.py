"""A user's own property tests, written with flowcert.testing as a researcher would.

The scenario: I study a variant of the Gaussian Transformer and want to be sure my reading of the
paper's Theorem 4.8 (blow-up when V, B are positive definite and A + A^T is positive
semidefinite) matches flowcert's, that my symmetric "stabilising" parametrisation really gives a
Hurwitz linearisation, and that flowcert never claims hemisphere consensus for tokens that
straddle the sphere.
"""

import numpy as np
from hypothesis import given, settings

from flowcert.certificates import spectrum
from flowcert.gaussian.params import parse_gaussian
from flowcert.testing import not_in_hemisphere_certificate
from flowcert.testing import strategies as fs

few = settings(max_examples=5, deadline=None)


@few
@given(fs.for_theorem("gaussian:thm-4.8.1", satisfied=True))
def test_my_blow_up_reading(params):
    from flowcert.gaussian import asymptotics
    from flowcert.numeric import gaussian as ng

    p = parse_gaussian(params)
    result = asymptotics.thm_4_8(p, 1)
    assert result.applies.json is True
    T = result.prediction["blowup_time_upper_bound"]
    run = ng.integrate_moments(ng.constant(p.A, p.B, p.V, p.b), p.mu0, p.Sigma0, 1.1 * T)
    assert run.blowup_time is not None and run.blowup_time <= T * (1 + 1e-6)


@few
@given(fs.negative_definite(d=3, margin=0.1), fs.positive_definite(d=3, margin=0.1))
def test_my_stabilising_linearisation(V, B):
    # my model linearises to J = V B around its rest point; V < 0 and B > 0 make J similar to
    # -B^{1/2} (-V) B^{1/2}, so it must be Hurwitz, and flowcert's certificate must say so
    verdict = spectrum.hurwitz("V B Hurwitz", V @ B)
    assert verdict.status == "holds"


@few
@given(fs.no_hemisphere_tokens(n=4, d=3))
def test_straddling_tokens_have_no_separating_direction(tokens_and_pair):
    X, pair = tokens_and_pair
    assert not_in_hemisphere_certificate(X, pair)
    # whatever direction I try, some token is on the closed negative side
    for v in (X[pair[0]], np.ones(3) / np.sqrt(3.0), X.mean(axis=0)):
        assert (X @ v).min() <= 0
