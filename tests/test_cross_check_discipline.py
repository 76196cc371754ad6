"""A wrong prediction must surface as `disagrees` with both numbers, and the CLI still exits 0."""

import json

import numpy as np

from flowcert import gaussian, gaussian_asymptotics
from flowcert.cli import main
from flowcert.gaussian.params import parse_gaussian

# V = -I, B = I, A = diag(1, -1): Theorem 4.1 applies, the limit is diag(1/2 ... ) of rank 1.
RAW = {"A": [[1.0, 0.0], [0.0, -1.0]], "B": [[1.0, 0.0], [0.0, 1.0]], "V": [[-1.0, 0.0], [0.0, -1.0]],
       "b": [0.0, 0.0], "mu0": [0.0, 0.0], "Sigma0": [[1.0, 0.0], [0.0, 1.0]], "t_end": 5.0}


def _thm41(doc):
    return next(t for t in doc["theorems"] if t["id"] == "gaussian:thm-4.1")


def test_true_prediction_agrees_with_closed_form():
    # A_a = 1, B_11 = eta (B + B^T)_11 = -2: 1 P + P 1 = 2 gives P = 1, Sigma_a = 1; the stable mode decays.
    th = _thm41(gaussian.catalogue.verify(parse_gaussian(RAW), simulate=True))
    assert th["applies"] is True
    assert np.allclose(th["prediction"]["Sigma_inf"], [[1.0, 0.0], [0.0, 0.0]], atol=1e-12)
    assert th["cross_check"]["status"] == "agrees"


def test_injected_wrong_prediction_is_reported_as_disagrees(monkeypatch, tmp_path, capsys):
    real = gaussian_asymptotics.riccati.thm41_limit

    def wrong(A, B, eta, tol=1e-9):
        lim = real(A, B, eta, tol)
        lim.Sigma_inf = 2.0 * lim.Sigma_inf  # a deliberately wrong closed form
        return lim

    monkeypatch.setattr(gaussian_asymptotics.riccati, "thm41_limit", wrong)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(RAW))
    assert main(["verify", "gaussian", "--params", str(path), "--simulate", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    th = _thm41(doc)
    assert th["cross_check"]["status"] == "disagrees"
    details = th["cross_check"]["details"]
    assert abs(details["max_abs_error"] - 1.0) < 1e-6  # simulated 1 against predicted 2
    assert details["tolerance"] < 1e-3
    assert np.allclose(details["Sigma_predicted"], [[2.0, 0.0], [0.0, 0.0]], atol=1e-9)
    assert np.allclose(details["Sigma_simulated"], [[1.0, 0.0], [0.0, 0.0]], atol=1e-6)
