r"""``flowcert simulate gaussian --samples N``: the batched torch ensemble against closed forms.

For :math:`d=1`, eq. (7) of the gaussian paper reads :math:`\dot\Sigma=2a\Sigma+2vb\,\Sigma^2`,
:math:`\dot\mu=(a+v+v\Sigma b)\mu+\beta`. With :math:`a=0`: :math:`\Sigma(t)=\Sigma_0/(1-c\Sigma_0t)`,
:math:`c=2vb`, which crosses :math:`K` at :math:`t=(1/\Sigma_0-1/K)/c`. With :math:`b=0`:
:math:`\mu(T)=e^{(a+v)T}\mu_0+\beta(e^{(a+v)T}-1)/(a+v)`. The perturbed initial states are
rebuilt here from the protocol the JSON states (seed, scale), so each sample's closed form is known.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from flowcert.cli import main

torch.set_num_threads(1)


def _write(tmp_path, **kw):
    raw = {"A": [[0.0]], "B": [[0.0]], "V": [[0.0]], "b": [0.0], "mu0": [0.0], "Sigma0": [[1.0]], "t_end": 1.0}
    raw.update(kw)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(raw))
    return str(path)


def _run(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)["ensemble"]


def _initial_states(ens, mu0, Sigma0):
    """The perturbations as documented: G G^T / d then z, from default_rng(seed)."""
    rng = np.random.default_rng(ens["seed"])
    n, eps = ens["samples"], ens["perturbation"]["scale"]
    G = rng.standard_normal((n, 1, 1))
    S0 = Sigma0 + eps * G[:, 0, 0] ** 2
    m0 = mu0 + eps * rng.standard_normal((n, 1))[:, 0]
    return m0, S0


def test_blowup_times_match_the_closed_form(tmp_path, capsys):
    v, b, S = 1.0, 0.5, 2.0  # c = 2 v b = 1, T* = 1 / S0 = 0.5
    path = _write(tmp_path, V=[[v]], B=[[b]], Sigma0=[[S]], t_end=2.0)
    ens = _run(capsys, ["simulate", "gaussian", "--params", path, "--samples", "16", "--seed", "3", "--json"])
    assert ens["samples"] == 16 and ens["device"] == "cpu" and ens["blowups"] == 16 and ens["blowup_fraction"] == 1.0
    _, S0 = _initial_states(ens, 0.0, S)
    K = 1e8 * (1 + S0)  # the stated criterion, ||Sigma||_F > 1e8 (1 + ||Sigma0||_F)
    crossing = (1 / S0 - 1 / K) / (2 * v * b)
    spread = ens["blowup_time"]
    # an accepted step reports its end: the crossing lies within one step before it; the step there
    # is at most ~1e-8 of the time left (the solution grows like 1/(T* - t))
    assert spread["min"] == pytest.approx(crossing.min(), rel=1e-5)
    assert spread["max"] == pytest.approx(crossing.max(), rel=1e-5)
    assert spread["mean"] == pytest.approx(crossing.mean(), rel=1e-5)
    assert spread["max"] <= 1 / S + 1e-9  # every perturbed Sigma0 >= Sigma0 blows up no later
    assert ens["final_states"]["samples"] == 0 and ens["stopped"] == 0


def test_final_states_match_the_closed_form(tmp_path, capsys):
    a, v, beta, T = -0.7, 0.2, 0.3, 1.5
    path = _write(tmp_path, A=[[a]], V=[[v]], b=[beta], mu0=[1.0], Sigma0=[[0.5]], t_end=T)
    ens = _run(capsys, ["simulate", "gaussian", "--params", path, "--samples", "8", "--json"])
    m0, S0 = _initial_states(ens, 1.0, 0.5)
    r = a + v
    mu_T = math.exp(r * T) * m0 + beta * (math.exp(r * T) - 1) / r
    Sigma_T = S0 * math.exp(2 * a * T)
    fin = ens["final_states"]
    assert ens["blowups"] == 0 and ens["blowup_time"] is None and fin["samples"] == 8
    assert fin["mu_mean"][0] == pytest.approx(mu_T.mean(), rel=1e-7)
    assert fin["Sigma_mean"][0][0] == pytest.approx(Sigma_T.mean(), rel=1e-7)
    assert fin["mu_max_deviation"] == pytest.approx(np.abs(mu_T - mu_T.mean()).max(), rel=1e-5)
    assert fin["Sigma_max_deviation"] == pytest.approx(np.abs(Sigma_T - Sigma_T.mean()).max(), rel=1e-5)


def test_without_samples_the_document_is_unchanged(tmp_path, capsys):
    path = _write(tmp_path)
    assert main(["simulate", "gaussian", "--params", path, "--json"]) == 0
    assert "ensemble" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("extra, needle", [
    (["--samples", "0"], "--samples"),
    (["--samples", "-3"], "--samples"),
    (["--samples", "2.5"], "--samples"),
    (["--samples", "x"], "--samples"),
    (["--samples", "1000001"], "--samples"),
    (["--samples", "2", "--device", "tpu"], "--device"),
    (["--samples", "2", "--seed", "-1"], "--seed"),
    (["--device", "cpu"], "--device"),
    (["--seed", "1"], "--seed"),
])
def test_bad_values_exit_2_with_one_line(tmp_path, capsys, extra, needle):
    path = _write(tmp_path)
    with pytest.raises(SystemExit) as exc:
        code = main(["simulate", "gaussian", "--params", path, *extra])
        raise SystemExit(code)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_time_varying_parameters_are_refused(tmp_path, capsys):
    path = _write(tmp_path, A=[["-1 + 0.1*sin(t)"]])
    assert main(["simulate", "gaussian", "--params", path, "--samples", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "time-varying" in err


def test_cuda_without_a_device_exits_2_or_runs_there(tmp_path, capsys):
    path = _write(tmp_path, A=[[-1.0]])
    code = main(["simulate", "gaussian", "--params", path, "--samples", "2", "--device", "cuda", "--json"])
    captured = capsys.readouterr()
    if torch.cuda.is_available():
        assert code == 0 and json.loads(captured.out)["ensemble"]["device"] == "cuda"
    else:
        assert code == 2 and captured.err.count("\n") == 1 and "cuda" in captured.err
