r"""``flowcert.testing``: hypothesis strategies for the objects of this field (needs ``hypothesis``).

Every strategy is bounded (dimension :math:`\le` :data:`MAX_DIM`, tokens :math:`\le`
:data:`MAX_TOKENS`, entries bounded), float64, and shrinks towards simple objects (diagonal
matrices, small integers). The matrix promises hold *exactly* for the float arrays returned
(integer orthogonal-up-to-scale factors and dyadic eigenvalues, :mod:`.matrices`), so flowcert's
exact certificates confirm them.

================================================  ==================================================
strategy                                          promise
================================================  ==================================================
``symmetric(d, inertia=(p, n, z), margin)``       exact inertia; nonzero :math:`|\lambda|\in[\mathrm{margin},\mathrm{bound}]`
``positive_definite``/``negative_definite``       :math:`\pm M\succeq\mathrm{margin}\,I`
``indefinite``                                    both signs, :math:`|\lambda|\ge\mathrm{margin}`
``hurwitz``/``anti_hurwitz``/``mixed_spectrum``   real parts :math:`\le-\mathrm{margin}` / :math:`\ge` / both
``with_spectrum(d, n_unstable, abscissa=…)``      exactly ``n_unstable`` eigenvalues with Re > 0; chosen abscissa
``near_marginal(d, distance, side)``              spectral abscissa :math:`\mp\mathrm{distance}`
``gaussian_state(d, rank)``                       :math:`(\mu,\Sigma)`, :math:`\Sigma\succeq0` of exact rank
``sphere_tokens``/``ellipsoid_tokens``            rows on :math:`S^{d-1}` / :math:`\{y^\top Wy=1\}`
``hemisphere_tokens(n, d, margin)``               ``(X, v)``: :math:`v^\top x_i\ge\mathrm{margin}`
``no_hemisphere_tokens(n, d)``                    an exact antipodal pair: in no open hemisphere
``attention_params(...)``                         an attention parameter file (Q, K, V, heads, causal)
``for_theorem(id, satisfied)``                    parameter files satisfying / violating an entry
================================================  ==================================================

Example
-------
>>> from hypothesis import given
>>> from flowcert.testing import strategies as fs
>>> @given(fs.hurwitz(d=3, margin=0.1))
... def test_my_model(A):
...     ...
"""

from __future__ import annotations

from types import SimpleNamespace

from .attention import attention_params, oja_params, simple_top_symmetric, simple_top_with_vector
from .matrices import (
    MAX_DIM,
    anti_hurwitz,
    hurwitz,
    indefinite,
    mixed_spectrum,
    near_marginal,
    negative_definite,
    positive_definite,
    spectral_abscissa,
    symmetric,
    with_spectrum,
)
from .states import (
    MAX_TOKENS,
    ellipsoid_tokens,
    gaussian_state,
    hemisphere_tokens,
    in_open_hemisphere_certificate,
    no_hemisphere_tokens,
    not_in_hemisphere_certificate,
    sphere_tokens,
)
from .theorems import CASES, Case, for_theorem, gaussian_params, rnn_params

strategies = SimpleNamespace(
    symmetric=symmetric, positive_definite=positive_definite, negative_definite=negative_definite,
    indefinite=indefinite, hurwitz=hurwitz, anti_hurwitz=anti_hurwitz, mixed_spectrum=mixed_spectrum,
    with_spectrum=with_spectrum, near_marginal=near_marginal, gaussian_state=gaussian_state,
    sphere_tokens=sphere_tokens, ellipsoid_tokens=ellipsoid_tokens, hemisphere_tokens=hemisphere_tokens,
    no_hemisphere_tokens=no_hemisphere_tokens, attention_params=attention_params, oja_params=oja_params,
    gaussian_params=gaussian_params, rnn_params=rnn_params, for_theorem=for_theorem,
)
"""All strategies under one name: ``from flowcert.testing import strategies as fs``."""

__all__ = [
    "CASES", "Case", "MAX_DIM", "MAX_TOKENS", "anti_hurwitz", "attention_params", "ellipsoid_tokens", "for_theorem",
    "gaussian_params", "gaussian_state", "hemisphere_tokens", "hurwitz", "in_open_hemisphere_certificate",
    "indefinite", "mixed_spectrum", "near_marginal", "negative_definite", "no_hemisphere_tokens",
    "not_in_hemisphere_certificate", "oja_params", "positive_definite", "rnn_params", "simple_top_symmetric",
    "simple_top_with_vector", "spectral_abscissa", "sphere_tokens", "strategies", "symmetric", "with_spectrum",
]
