"""rnn certificates: bounded-real bound on ||P|| and CQLF contraction, re-checked exactly.

The bounded-real gamma is compared with the H-infinity norm sup_w ||(I - A e^{-iw})^{-1}|| computed
independently on a frequency grid (for A = c Q, Q orthogonal, it is 1/(1 - c) exactly), and with
the dense ||P_T||_2 (which it must bound). Tampered certificates must be rejected.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from flowcert.certificates import core
from flowcert.certificates import rnn as crnn
from flowcert.gpu.rnn import cells
from flowcert.gpu.rnn.operators import KPFlow, Trajectory

torch.set_num_threads(1)


def test_bounded_real_orthogonal():
    c = 0.6
    Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))
    A = c * Q
    hyp, gamma = crnn.bounded_real_bound(A)
    assert hyp.status == "holds" and core.recheck(hyp.certificate)
    assert gamma == pytest.approx(1 / (1 - c), rel=1e-5) and gamma >= 1 / (1 - c) * (1 - 1e-9)
    cell = cells.Cell("linear", 3, 1, 1.0, torch.tensor(A))
    th = {"W_in": torch.ones(3, 1, dtype=torch.float64), "b": torch.zeros(3, dtype=torch.float64)}
    tr = Trajectory.run(cell, th, torch.zeros(1, 40, 1, dtype=torch.float64), torch.zeros(1, 3, dtype=torch.float64))
    PT = float(torch.linalg.matrix_norm(KPFlow.build(tr).P.dense(), 2))
    assert PT <= gamma


def test_bounded_real_nonnormal_vs_frequency_grid():
    A = np.array([[0.5, 2.0], [0.0, -0.3]])
    hyp, gamma = crnn.bounded_real_bound(A)
    w = np.linspace(0, np.pi, 20001)
    hinf = max(np.linalg.norm(np.linalg.inv(np.eye(2) - A * np.exp(-1j * x)), 2) for x in w)
    assert hyp.status == "holds"
    assert hinf <= gamma <= hinf * (1 + 1e-3)


def test_bounded_real_unstable_is_unknown():
    hyp, gamma = crnn.bounded_real_bound(np.diag([1.1, 0.2]))
    assert hyp.status == "unknown" and gamma is None


def test_bounded_real_tampered_rejected():
    hyp, gamma = crnn.bounded_real_bound(np.array([[0.5, 0.1], [0.0, 0.4]]))
    data = json.loads(json.dumps(hyp.certificate.to_json()))
    from fractions import Fraction

    data["data"]["gamma2"] = str(Fraction(data["data"]["gamma2"]) * Fraction(9, 10))
    assert not core.recheck(data)


def test_contraction_certificate_bounds_P():
    cell, th = cells.init_params("rnn_tanh", 4, 2, g=1.5, seed=0, dt=0.2)
    x = torch.randn(2, 6, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    tr = Trajectory.run(cell, th, x, cells.initial_state(cell, 2))
    kp = KPFlow.build(tr)
    Js = list(kp.P.J.reshape(-1, 4, 4).numpy())
    hyp, info = crnn.contraction_rate(Js)
    assert hyp.status == "holds" and core.recheck(hyp.certificate)
    rho = info["rho"]
    # rho is at least the largest spectral radius (necessary for any CQLF) ...
    assert rho >= max(max(abs(np.linalg.eigvals(J))) for J in Js) * (1 - 1e-9)
    # ... and the implied bound holds on every transition matrix and on ||P||
    for b in range(2):
        M = np.eye(4)
        for t in range(1, 6):
            M = Js[b * 6 + t] @ M
            assert np.linalg.norm(M, 2) <= math.sqrt(info["kappa"]) * rho**t * (1 + 1e-9)
    assert float(torch.linalg.matrix_norm(kp.P.dense(), 2)) <= crnn.propagation_bound(rho, info["kappa"], 6)
    bad = json.loads(json.dumps(hyp.certificate.to_json()))
    from fractions import Fraction

    bad["data"]["jacobians"][0] = [[str(3 * Fraction(v) + 1) if i == j else v for j, v in enumerate(r)]
                                   for i, r in enumerate(bad["data"]["jacobians"][0])]
    assert not core.recheck(bad)
