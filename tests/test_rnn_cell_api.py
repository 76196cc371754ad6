"""``flowcert.rnn.analyze_cell`` and ``flowcert.verify("rnn", cell, inputs=x)`` on user-defined torch
cells (identities at round-off, Prop. 1 at first order; differentiability established by the
torch.fx allow-list or stated with ``assume``; Prop. 1, Cor. 1 and Thm 2 decided on GRUCell,
RNNCell(tanh) and an LSTM-style cell), the ``relu_rnn`` cell and the eq. 8 bias/noise options, and the
new task names."""

from __future__ import annotations

import json

import pytest
import torch

import flowcert
import flowcert.rnn as R
from flowcert.result import Applies, CheckStatus, Status
from flowcert.gpu.rnn import cells, tasks
from flowcert.gpu.rnn.operators import Trajectory, parameter_operator

torch.set_num_threads(1)
F64 = torch.float64


class TwoLayer(torch.nn.Module):
    """h_t = (1 - a) h + a tanh(W2 tanh(W1 [x; h] + b1) + b2): a leaky two-layer cell."""

    def __init__(self, I: int, H: int, a: float = 0.3) -> None:
        super().__init__()
        self.hidden_size, self.a = H, a
        self.l1 = torch.nn.Linear(H + I, 2 * H)
        self.l2 = torch.nn.Linear(2 * H, H)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        u = torch.tanh(self.l1(torch.cat([x, h], -1)))
        return (1 - self.a) * h + self.a * torch.tanh(self.l2(u))


def check_doc(doc):
    ident = doc["identities"]
    assert ident["adjoint"]["P"] < 1e-14 and ident["adjoint"]["K"] < 1e-14 and ident["adjoint"]["P_inv"] < 1e-14
    assert ident["inverse"]["residual"] < 1e-13 and ident["ntk"]["residual"] < 1e-13
    assert ident["prop1"]["exact_jvp_residual"] < 1e-12 and ident["prop1"]["gradient_residual"] < 1e-12
    orders = [r["observed_order"] for r in ident["prop1"]["fd"][1:]]
    assert 0.85 < orders[-1] < 1.15
    th = {t["id"]: t for t in doc["theorems"]}
    assert th["kpflow:prop-1"]["cross_check"]["status"] == "agrees"
    # Thm 1's structure is read from the module (issue 46): its general bound rank K_j <= n_j rank F_j is checked
    assert th["kpflow:thm-1"]["hypotheses"][-1]["status"] == "holds"  # the structure, read
    assert th["kpflow:thm-1"]["cross_check"]["status"] == "agrees"
    json.dumps(doc.to_json())


def test_user_two_layer_cell():
    torch.manual_seed(0)
    cell = TwoLayer(2, 4)
    w0 = cell.l1.weight.detach().clone()
    x = torch.randn(3, 6, 2)
    doc = R.analyze_cell(cell, x)
    check_doc(doc)
    assert doc["params"]["cell"] == "module" and doc["params"]["module"] == "TwoLayer"
    assert cell.l1.weight.dtype == torch.float32 and torch.equal(cell.l1.weight, w0)  # the user's module untouched


def test_user_cell_is_nn_grucell_same_as_builtin_gru():
    """torch.nn.GRUCell through analyze_cell gives the same K as flowcert's own gru cell."""
    torch.manual_seed(1)
    m = torch.nn.GRUCell(2, 3).double()
    x = torch.randn(2, 4, 2, dtype=F64)
    doc = R.analyze_cell(m, x, h0=0.1 * torch.ones(2, 3, dtype=F64), targets=torch.randn(2, 4, 2, dtype=F64))
    check_doc(doc)
    cell = cells.Cell("gru", 3, 2)
    th = {k: v.detach() for k, v in m.named_parameters()}
    tr = Trajectory.run(cell, th, x, 0.1 * torch.ones(2, 3, dtype=F64))
    Kc = parameter_operator(tr).dense()
    tr2 = Trajectory.run(cells.ModuleCell(m, 3, 2), th, x, 0.1 * torch.ones(2, 3, dtype=F64))
    assert torch.allclose(parameter_operator(tr2).dense(), Kc, atol=1e-14 * float(Kc.abs().max()), rtol=0)


def test_user_cell_shared_weights_make_dense_K_blocks():
    """Contrast with the GRU erratum: a cell whose units share parameters (the two-layer cell) has
    K blocks that are not diagonal in the hidden index."""
    torch.manual_seed(0)
    mc = cells.ModuleCell(TwoLayer(2, 4).double(), 4, 2)
    tr = Trajectory.run(mc, mc.parameters(), torch.randn(2, 3, 2, dtype=F64), torch.zeros(2, 4, dtype=F64))
    K = parameter_operator(tr).dense().reshape(2, 3, 4, 2, 3, 4).permute(0, 1, 3, 4, 2, 5)
    off = ~torch.eye(4, dtype=torch.bool)
    assert float(K[..., off].abs().max()) > 1e-2 * float(K.abs().max())


def test_bad_calls():
    from flowcert.errors import InputError

    with pytest.raises(InputError, match="^h0: .*pass h0="):  # no parameters, no hidden_size: cannot tell H
        R.analyze_cell(torch.nn.Identity(), torch.zeros(1, 2, 3))
    with pytest.raises(InputError, match=r"'inputs': expected shape \[B, T, I\], got \(2, 3\)"):
        R.analyze_cell(torch.nn.GRUCell(2, 3), torch.zeros(2, 3))
    with pytest.raises(InputError, match="'h0': expected shape"):
        R.analyze_cell(torch.nn.GRUCell(2, 3), torch.zeros(2, 4, 2), h0=torch.zeros(3, 3))
    with pytest.raises(InputError, match="^inputs: required"):
        flowcert.verify("rnn", torch.nn.GRUCell(2, 3))
    with pytest.raises(InputError, match="^inputs: only with a torch.nn.Module"):
        flowcert.verify("rnn", {"cell": "gru", "B": 2, "T": 3, "H": 2, "I": 2}, inputs=torch.zeros(2, 3, 2))
    with pytest.raises(InputError, match="^assume: unknown assumption 'convex'"):
        flowcert.verify("rnn", torch.nn.GRUCell(2, 3), inputs=torch.zeros(2, 4, 2), assume=["convex"])
    with pytest.raises(InputError, match=r"in the form it takes, a tensor of shape \[2, 3\]; got a tuple of 2 .*"
                                         r"pass h0 as a tuple"):  # a cell taking a tensor and returning a tuple
        flowcert.verify("rnn", TupleCell(), inputs=torch.zeros(2, 4, 2), h0=torch.zeros(2, 3))


class TupleCell(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(5, 3)

    def forward(self, x, h):
        z = torch.tanh(self.lin(torch.cat([x, h], -1)))
        return z, z


class LSTMState(torch.nn.Module):
    """An LSTM cell whose state is z = [h; c] (no hidden_size: H = 2n is found by probing)."""

    def __init__(self, I: int, n: int) -> None:
        super().__init__()
        self.cell = torch.nn.LSTMCell(I, n)

    def forward(self, x, z):
        h, c = z.chunk(2, dim=-1)
        h2, c2 = self.cell(x, (h, c))
        return torch.cat([h2, c2], -1)


class Kinked(torch.nn.Module):
    """h' = op(W [x; h]) with a chosen operation, for the smoothness allow-list."""

    def __init__(self, I: int, H: int, op) -> None:
        super().__init__()
        self.hidden_size, self.op = H, op
        self.lin = torch.nn.Linear(I + H, H)

    def forward(self, x, h):
        return self.op(self.lin(torch.cat([x, h], -1)), h)


@pytest.mark.parametrize("make, I", [(lambda: torch.nn.GRUCell(3, 4), 3),
                                     (lambda: torch.nn.RNNCell(2, 4, nonlinearity="tanh"), 2),
                                     (lambda: LSTMState(2, 2), 2)])
def test_prop1_cor1_thm2_decided_on_torch_cells(make, I):
    """Differentiability established by the trace, every A_t exactly invertible (B*T <= 64, H <= 8):
    Prop. 1, Cor. 1 and Thm 2 apply, and their cross-checks (first-order FD, U V U^-1) agree."""
    torch.manual_seed(3)
    res = flowcert.verify("rnn", make(), inputs=torch.randn(2, 5, I, dtype=F64))
    th = res.theorems
    smooth = th["kpflow:prop-1"].hypotheses[0]
    assert smooth.status is Status.HOLDS and "torch.fx" in smooth.method
    for i in ("kpflow:prop-1", "kpflow:cor-1", "kpflow:thm-2"):
        assert th[i].applies is Applies.YES, (i, th[i].summary())
        assert th[i].cross_check.status is CheckStatus.AGREES, (i, th[i].cross_check.details)
    # Thm 1 decided (issue 46): the structure is read (torch's cells; LSTMState from its torch.fx graph), and
    # D f^outer is not constant (tanh/sigmoid), so the printed part (3) does not apply
    assert th["kpflow:thm-1"].applies is Applies.NO
    assert th["kpflow:thm-1"].cross_check.status is CheckStatus.AGREES
    assert res.params_json["H"] == 4 and res.run.Z.shape == (2, 5, 4)


@pytest.mark.parametrize("op, word", [(lambda u, h: torch.relu(u), "relu"), (lambda u, h: u.abs(), "abs"),
                                      (lambda u, h: torch.where(u > 0, u, h), "gt (a kink)"),
                                      (lambda u, h: torch.tanh(u) / h.sum(), "division by a tensor"),
                                      (lambda u, h: torch.clamp(u, -1, 1), "clamp")])
def test_kinks_leave_smoothness_unknown_and_assume_states_it(op, word):
    from flowcert.rnn.smooth import smooth_cell

    cell = Kinked(2, 3, op)
    verdict = smooth_cell(cell)
    assert verdict.status == "unknown" and word in verdict.detail and "assume=['smooth']" in verdict.detail
    assert smooth_cell(Kinked(2, 3, lambda u, h: 0.5 * h + torch.tanh(u) ** 2 - torch.sigmoid(u) / 3)).status == "holds"
    assert smooth_cell(torch.nn.RNNCell(2, 3, nonlinearity="relu")).status == "unknown"


def test_assumed_smoothness_is_reported_as_an_assumption():
    torch.manual_seed(0)
    cell = torch.nn.RNNCell(2, 3, nonlinearity="relu").double()
    x = torch.randn(2, 4, 2, dtype=F64)
    plain_res = flowcert.verify("rnn", cell, inputs=x)
    assert plain_res.theorems["kpflow:prop-1"].applies is Applies.UNDECIDED
    res = flowcert.verify("rnn", cell, inputs=x, assume=["smooth"])
    prop1 = res.theorems["kpflow:prop-1"]
    (a,) = prop1.assumptions
    assert a.status is Status.ASSUMED and a.status != "holds" and "assumed by the user" in a.method
    assert prop1.applies is Applies.YES and "assuming" in prop1.summary()
    assert res.to_json()["params"]["assume"] == ["smooth"]


def test_h0_probing_and_ambiguity():
    from flowcert.errors import InputError

    torch.manual_seed(0)
    res = R.analyze_cell(LSTMState(2, 3), torch.randn(2, 3, 2))  # H = 6 from one probing call per candidate
    assert res.params_json["H"] == 6

    class Elementwise(torch.nn.Module):  # any H works: ambiguous
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Parameter(torch.tensor([0.5, 0.25]))

        def forward(self, x, h):
            return torch.tanh(self.a[0] * h + self.a[1] * x.sum(-1, keepdim=True))

    with pytest.raises(InputError, match=r"ambiguous .*pass h0="):
        R.analyze_cell(Elementwise(), torch.randn(2, 3, 2))
    assert R.analyze_cell(Elementwise(), torch.randn(2, 3, 2), h0=torch.zeros(2, 3)).params_json["H"] == 3


def test_rnn_reachable_without_importing_it_first():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import flowcert; print(flowcert.rnn.analyze_cell.__module__)"],
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "flowcert.rnn.cell", out.stderr


@pytest.mark.parametrize("extra", [{"cell": "relu_rnn"}, {"cell": "rnn_tanh", "bias": True, "noise": 0.2},
                                   {"cell": "relu_rnn", "bias": True, "noise": 0.1, "task": "flip_flop"}])
def test_eq8_options_in_parameter_files(tmp_path, capsys, extra):
    from flowcert.cli import main

    p = {"B": 3, "T": 6, "H": 4, "I": 2, "g": 1.2, "seed": 3, "dt": 0.3, **extra}
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    assert main(["kpflow", "analyze", "--params", str(f), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ident = doc["identities"]
    assert ident["adjoint"]["P"] < 1e-14 and ident["inverse"]["residual"] < 1e-13 and ident["ntk"]["residual"] < 1e-13
    th = {t["id"]: t for t in doc["theorems"]}
    assert th["kpflow:prop-1"]["cross_check"]["status"] == "agrees"
    # Theorem 1 (3) holds with equality for the eq. 8 cells (constant outer Jacobian), bias feature included
    assert th["kpflow:thm-1"]["cross_check"]["status"] == "agrees"
    if extra.get("bias"):
        assert "b" in th["kpflow:thm-1"]["prediction"]["per_weight"]
    assert doc["params"]["bias"] == bool(extra.get("bias", False))


def test_eq8_bias_and_noise_enter_the_step():
    cell, th = cells.init_params("relu_rnn", 3, 2, bias=True, noisy=True, dt=0.5, seed=1)
    z, x = torch.randn(4, 3, dtype=F64), torch.randn(4, 2 + 3, dtype=F64)
    ref = z + 0.5 * (-z + torch.relu(z) @ th["W"].T + x[:, :2] @ th["W_in"].T + th["b"] + x[:, 2:])
    assert torch.allclose(cell.step(th, z, x), ref, atol=1e-15)


@pytest.mark.parametrize("bad,key", [({"cell": "gru", "bias": True}, "bias"), ({"cell": "gru", "noise": 0.1}, "noise"),
                                     ({"cell": "rnn_tanh", "bias": 1}, "bias"), ({"cell": "rnn_tanh", "task": "nope"}, "task")])
def test_bad_options(tmp_path, capsys, bad, key):
    from flowcert.cli import main

    f = tmp_path / "p.json"
    f.write_text(json.dumps({"B": 2, "T": 3, "H": 2, "I": 2, **bad}))
    assert main(["kpflow", "analyze", "--params", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0]


def test_tasks_definitions():
    x, y = tasks.flip_flop(4, 50, 3, p=0.2, seed=0)
    for b in range(4):
        for i in range(3):
            last = 0.0
            for t in range(50):
                if x[b, t, i] != 0:
                    last = float(x[b, t, i])
                assert float(y[b, t, i]) == last
    x, y = tasks.line_attractor(2, 10, 2, seed=0)
    assert torch.allclose(y[:, 1:] - y[:, :-1], x[:, 1:]) and torch.equal(y[:, 0], x[:, 0])
    x, y = tasks.low_rank_forecast(3, 20, 5, rank=2, seed=0)
    assert torch.equal(y[:, :-1], x[:, 1:])
    # the next step is a fixed linear map of rank 2 of the current one
    M = torch.linalg.lstsq(x.reshape(-1, 5), y.reshape(-1, 5)).solution
    assert torch.allclose(x.reshape(-1, 5) @ M, y.reshape(-1, 5), atol=1e-10)
    s = torch.linalg.svdvals(M)
    assert float(s[2]) < 1e-8 * float(s[0]) and float(s[1]) > 0.5


@pytest.mark.parametrize("task", ["flip_flop", "line_attractor", "low_rank_forecast"])
def test_task_names_in_parameter_files(tmp_path, capsys, task):
    from flowcert.cli import main

    f = tmp_path / "p.json"
    f.write_text(json.dumps({"cell": "gru", "B": 2, "T": 5, "H": 3, "I": 2, "task": task}))
    assert main(["kpflow", "analyze", "--params", str(f), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["task"] == task


def test_hooks_and_subclasses_are_not_taken_on_trust():
    """A forward hook can change what the cell computes, and a subclass of a torch cell can override
    forward: neither is established smooth by its type."""
    from flowcert.rnn.smooth import smooth_cell

    cell = torch.nn.GRUCell(2, 3)
    handle = cell.register_forward_hook(lambda m, args, out: torch.relu(out))
    assert smooth_cell(cell).status == "unknown" and "hooks" in smooth_cell(cell).detail
    handle.remove()
    assert smooth_cell(cell).status == "holds"

    class Odd(torch.nn.GRUCell):
        def forward(self, x, h):
            return torch.relu(super().forward(x, h))

    assert smooth_cell(Odd(2, 3)).status == "unknown"


def test_recheck_accepts_an_assumption_only_where_the_document_states_it():
    """recheck: an ``assumed`` hypothesis is accepted (uncertified, never a holds) when params.assume
    states it, and refused when the document does not, or when it carries a certificate."""
    import copy

    from flowcert.recheck import recheck_document

    torch.manual_seed(0)
    doc = flowcert.verify("rnn", torch.nn.RNNCell(2, 3, nonlinearity="relu").double(),
                          inputs=torch.randn(2, 3, 2, dtype=F64), assume=["smooth"]).to_json()
    ok = recheck_document(doc)
    assert not [r for r in ok.refused if "assumed" in r[2] or r[0].endswith(".applies")], ok.refused
    assert any(p.endswith("hypotheses[0]") for p in ok.uncertified)
    bad = copy.deepcopy(doc)
    del bad["params"]["assume"]
    assert any("assumed" in r[2] for r in recheck_document(bad).refused)
