"""The batched Prop. 2.1 particle check (issue 47, item 5): it is in the default ``simulate=True``
set, its batched field and RK4 agree with the reference implementation, and it can fail: a
perturbed moment equation or perturbed particle dynamics leave an error floor, so the fitted rate
leaves its tolerance and the check says ``disagrees``."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import pytest

import flowcert
from flowcert.gaussian import catalogue
from flowcert.gaussian.params import parse_gaussian
from flowcert.numeric import gaussian as ng
from flowcert.numeric.gaussian import moments, particles

README = {"A": -np.eye(2), "B": np.eye(2) / 2, "V": -np.eye(2) / 5, "b": np.zeros(2), "mu0": np.ones(2),
          "Sigma0": np.eye(2)}


def _params() -> Any:
    return parse_gaussian({k: np.asarray(v).tolist() for k, v in README.items()})


def _prop_2_1(result: flowcert.Result) -> Any:
    return result.theorems["gaussian:prop-2.1"].cross_check


@pytest.fixture
def fresh_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memoised runs of eq. (7) made under a perturbation must not outlive the test."""
    monkeypatch.setattr(moments, "_RUNS", OrderedDict())


@pytest.mark.parametrize("B", [np.eye(2) / 2, np.array([[0.3, 0.2], [-0.1, 0.4]]), 40 * np.eye(2)],
                         ids=["symmetric", "nonsymmetric", "shifted"])
@pytest.mark.parametrize("n", [5, 100, 300])
def test_batched_field_is_the_reference_field(B: np.ndarray, n: int) -> None:
    rng = np.random.default_rng(n)
    X = rng.standard_normal((3, n, 2))
    A, V, b = rng.standard_normal((2, 2)), rng.standard_normal((2, 2)), rng.standard_normal(2)
    reference = np.stack([particles.particle_field(x, A, B, V, b) for x in X])
    np.testing.assert_allclose(particles.particle_field_batch(X, A, B, V, b), reference, rtol=1e-11, atol=1e-12)


def test_rk4_matches_the_adaptive_integrator() -> None:
    rng = np.random.default_rng(0)
    X0 = rng.standard_normal((2, 40, 2))
    coeffs = ng.constant(-np.eye(2), np.eye(2) / 2, -np.eye(2) / 5, np.array([0.1, -0.2]))
    batched = particles.rk4_particles(coeffs, X0, 0.5, 8)
    for k in range(2):
        reference = ng.simulate_particles(coeffs, X0[k], np.array([0.0, 0.5]), rtol=1e-11, atol=1e-13)[-1]
        np.testing.assert_allclose(batched[k], reference, atol=1e-6)
    assert np.abs(batched - X0).max() > 0.1  # the tokens did move


def test_particles_are_in_the_default_set_and_agree_on_the_readme_example() -> None:
    assert "particles" in catalogue.DEFAULT_CHECKS
    cc = _prop_2_1(flowcert.verify("gaussian", README, simulate=True))
    assert cc.status.value == "agrees", cc.details
    d = cc.details
    assert d["seeds"] == particles.STUDY_SEEDS and d["N"] == list(particles.STUDY_NS)
    assert abs(d["rate"] + 0.5) <= d["rate_tolerance"] and 0 < d["rate_stderr"] < d["rate_tolerance"] / 3
    # the time discretisation is a small share of the Monte-Carlo error it is compared with
    assert d["discretisation_error"] <= particles.DISCRETISATION_SHARE * d["error"][-1]


def test_checks_still_choose() -> None:
    alone = flowcert.verify("gaussian", README, checks=["moments"])
    assert _prop_2_1(alone).status.value == "skipped"
    assert "particles" in _prop_2_1(alone).details["reason"]
    assert _prop_2_1(flowcert.verify("gaussian", README, checks=["particles"])).status.value == "agrees"


def test_a_perturbed_moment_equation_disagrees(monkeypatch: pytest.MonkeyPatch, fresh_runs: None) -> None:
    kernel = moments.moment_kernel()

    def perturbed() -> Any:  # the attention term of eq. (7) 10% too strong
        return lambda A, B, V, b, mu, Sigma: kernel(A, B, 1.1 * V, b, mu, Sigma)

    monkeypatch.setattr(moments, "moment_kernel", perturbed)
    cc = catalogue.particle_cross_check(_params(), 0)
    assert cc.status.value == "disagrees", cc.details
    assert abs(cc.details["rate"] + 0.5) > cc.details["rate_tolerance"]


def test_perturbed_particle_dynamics_disagree(monkeypatch: pytest.MonkeyPatch, fresh_runs: None) -> None:
    field = particles.particle_field_batch

    def perturbed(X: np.ndarray, A: np.ndarray, B: np.ndarray, V: np.ndarray, b: np.ndarray,
                  activation: str = "identity") -> np.ndarray:  # attention 10% too strong
        return field(X, A, B, 1.1 * V, b, activation)

    monkeypatch.setattr(particles, "particle_field_batch", perturbed)
    cc = catalogue.particle_cross_check(_params(), 0)
    assert cc.status.value == "disagrees", cc.details


def test_the_step_search_resolves_an_exact_linear_flow() -> None:
    """V = 0: the particles follow an affine flow, which maps moments exactly as eq. (7) does; the
    whole error is the time discretisation, which the step search drives below its floor."""
    coeffs = ng.constant(np.array([[-1.0, 2.0], [0.0, -0.5]]), np.zeros((2, 2)), np.zeros((2, 2)),
                         np.array([1.0, -2.0]))
    study = ng.particle_study(coeffs, np.array([0.5, 1.0]), np.array([[1.0, 0.3], [0.3, 0.5]]), 1.0,
                              Ns=(20, 40), seeds=2)
    assert max(study.errors) < 1e-7 and study.steps > 2
