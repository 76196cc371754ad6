"""Theorem 1 on a user's modules and tuple states (issue 46, items 3 and 4): torch's RNNCell, GRUCell and
LSTMCell are recognised with PyTorch's equations, a generic module's structure is read from its torch.fx
graph, anything else is undecided with the reason; an LSTM's state (h, c) is z = [h; c], and its operators
match a hand-written LSTM's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import flowcert.rnn as R
from flowcert.gpu.rnn.operators import state_jacobians
from flowcert.rnn.structure import structure_of

torch.set_num_threads(1)
F64 = torch.float64
warnings.filterwarnings("ignore", category=DeprecationWarning)


def doc_of(cell, I, B=2, T=5, seed=0, **kw):
    torch.manual_seed(seed)
    res = R.analyze_cell(cell, torch.randn(B, T, I, dtype=F64), **kw)
    return res, res.to_json()


def theorem(doc, tid):
    return next(t for t in doc["theorems"] if t["id"] == tid)


def hyp(th, prefix):
    return next(h for h in th["hypotheses"] if h["name"].startswith(prefix))


def rank(M: np.ndarray) -> int:
    """Numerical rank by numpy's own rule (an independent reference)."""
    return int(np.linalg.matrix_rank(M))


@pytest.mark.parametrize("make, I, rows", [(lambda: torch.nn.GRUCell(3, 4), 3, 12),
                                           (lambda: torch.nn.RNNCell(2, 4), 2, 4),
                                           (lambda: torch.nn.LSTMCell(2, 3), 2, 12)])
def test_thm1_decided_on_torch_cells(make, I, rows):
    """Thm 1 is decided on torch's cells: the structure holds, D f^outer is not constant (tanh/sigmoid), so the
    printed part (3) does not apply, and the general bound rank K_j <= n_j rank F_j is checked and holds. The
    feature ranks are those of the data themselves (x, the states h entering each step, 1)."""
    cell = make()
    res, doc = doc_of(cell, I)
    th1 = theorem(doc, "kpflow:thm-1")
    assert hyp(th1, "f = f^outer")["status"] == "holds"
    assert hyp(th1, "outer Jacobian")["status"] == "fails" and th1["applies"] is False
    assert th1["cross_check"]["status"] == "agrees"
    per = th1["prediction"]["per_weight"]
    assert set(per) == {k for k, _ in cell.named_parameters()}
    B, T, H = res.run.Z.shape
    x = res.run.x.reshape(B * T, -1).numpy()
    n = cell.hidden_size
    h = res.run.Zprev.reshape(B * T, H)[:, :n].numpy()
    assert per["weight_ih"]["rank_features"] == rank(x) and per["weight_hh"]["rank_features"] == rank(h)
    assert per["bias_ih"]["rank_features"] == 1
    for r in per.values():
        assert r["rows_n_j"] == rows and r["rank_K_j"] <= r["rows_n_j"] * r["rank_features"]


class Leaky(torch.nn.Module):
    """h' = 0.5 h + A h + W x + b with nn.Linear maps: f^outer affine, so rank tr_H K_j = rank F_j (part 3)."""

    def __init__(self, I: int, H: int) -> None:
        super().__init__()
        self.hidden_size = H
        self.rec = torch.nn.Linear(H, H, bias=False)
        self.inp = torch.nn.Linear(I, H)

    def forward(self, x, h):
        return 0.5 * h + self.rec(h) - self.inp(x) / 3.0


def test_fx_structure_with_constant_outer_meets_part_3():
    """A module read from its graph: each weight once, everything after the linear maps affine; Thm 1 applies and
    the printed bound holds with equality (rank tr_H K_j = rank F_j), as the theorem says it must."""
    torch.manual_seed(1)
    cell = Leaky(3, 4)
    st = structure_of(cell)
    assert not isinstance(st, str) and st.constant_outer is True and set(st.rows) == {"rec.weight", "inp.weight", "inp.bias"}
    z, x = torch.randn(7, 4), torch.randn(7, 3)
    f = st.features(z, x)
    assert torch.equal(f["rec.weight"], z) and torch.equal(f["inp.weight"], x) and torch.equal(f["inp.bias"], torch.ones(7, 1))
    _, doc = doc_of(cell.double(), 3, B=3, T=4)
    th1 = theorem(doc, "kpflow:thm-1")
    assert th1["applies"] is True and th1["cross_check"]["status"] == "agrees"
    for r in th1["prediction"]["per_weight"].values():
        assert r["rank_trH_K_j"] == r["rank_features"]


class _RecurrentW(torch.nn.Module):
    """A recurrent weight W (3 x 3) and an input map; the subclasses use W in ways Thm 1 cannot read."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden_size = 3
        self.W = torch.nn.Parameter(0.3 * torch.randn(3, 3))
        self.inp = torch.nn.Linear(2, 3)


class TwiceUsed(_RecurrentW):
    def forward(self, x, h):
        return torch.tanh(torch.nn.functional.linear(h, self.W) + torch.nn.functional.linear(torch.tanh(h), self.W)
                          + self.inp(x))


class MatmulCell(_RecurrentW):
    def forward(self, x, h):
        return torch.tanh(h @ self.W + self.inp(x))


@pytest.mark.parametrize("cell, words", [(TwiceUsed(), "used 2 times"), (MatmulCell(), "not as the weight of a linear map")])
def test_unreadable_structure_is_undecided_with_the_reason(cell, words):
    st = structure_of(cell)
    assert isinstance(st, str) and words in st
    _, doc = doc_of(cell.double(), 2)
    th1 = theorem(doc, "kpflow:thm-1")
    assert th1["applies"] is None and th1["cross_check"]["status"] == "skipped"
    (hyp,) = th1["hypotheses"]
    assert hyp["status"] == "unknown" and words in hyp["detail"] and "decided once" in hyp["detail"]


def lstm_reference(cell: torch.nn.LSTMCell, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
    """PyTorch's LSTM equations written out (gate order i, f, g, o)."""
    g = x @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T + cell.bias_hh
    i, f, gg, o = g.chunk(4, -1)
    c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
    return torch.sigmoid(o) * torch.tanh(c2), c2


def test_lstm_state_operators_match_a_hand_written_lstm():
    """nn.LSTMCell with state z = [h; c]: the trajectory is the hand-written LSTM's, every state Jacobian A_t is the
    Jacobian of the hand-written step (autograd on it), and P q is the hand-rolled recurrence
    (P q)_t = A_t (P q)_{t-1} + q_t; Prop. 1, Cor. 1 and Thm 2 agree."""
    torch.manual_seed(4)
    cell = torch.nn.LSTMCell(2, 3).double()
    res, doc = doc_of(cell, 2, B=2, T=4, seed=4)
    assert doc["params"]["state_parts"] == [3, 3] and doc["params"]["H"] == 6
    tr = res.run
    x = tr.x
    h, c = torch.zeros(2, 3, dtype=F64), torch.zeros(2, 3, dtype=F64)
    Js = []
    for t in range(x.shape[1]):
        z = torch.cat([h, c], -1)
        step = lambda zz: torch.cat(lstm_reference(cell, x[:, t], zz[:, :3], zz[:, 3:]), -1)  # noqa: E731
        J = torch.autograd.functional.jacobian(step, z)  # [B, 6, B, 6]
        Js.append(torch.stack([J[b, :, b, :] for b in range(2)]))
        with torch.no_grad():
            h, c = lstm_reference(cell, x[:, t], h, c)
        assert torch.allclose(tr.Z[:, t], torch.cat([h, c], -1), rtol=0, atol=1e-14)
    A = state_jacobians(tr)
    assert torch.allclose(A, torch.stack(Js, 1), rtol=0, atol=1e-13)
    from flowcert.gpu.rnn.operators import KPFlow

    q = torch.randn(tr.shape, dtype=F64)
    ref, acc = [], torch.zeros(2, 6, dtype=F64)
    for t in range(x.shape[1]):
        acc = torch.einsum("bij,bj->bi", Js[t], acc) + q[:, t]
        ref.append(acc)
    assert torch.allclose(KPFlow.build(tr).P(q), torch.stack(ref, 1), rtol=0, atol=1e-12)
    for tid in ("kpflow:prop-1", "kpflow:cor-1", "kpflow:thm-2"):
        t = theorem(doc, tid)
        assert t["applies"] is True and t["cross_check"]["status"] == "agrees", (tid, t["cross_check"])
    assert doc["identities"]["ntk"]["residual"] < 1e-12
    check = res.recheck()  # the document's form (Thm 1 with its structure read) is one recheck accepts
    assert not check.refused, check.refused


class TupleGRU(torch.nn.Module):
    """A user cell with a tuple state (h, m): m is a running mean of h."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = torch.nn.GRUCell(2, 3)

    def forward(self, x, state):
        h, m = state
        h2 = self.gru(x, h)
        return h2, 0.9 * m + 0.1 * h2


def test_user_tuple_state_with_h0_as_a_tuple():
    torch.manual_seed(2)
    cell = TupleGRU().double()
    x = torch.randn(2, 4, 2, dtype=F64)
    h0 = (0.1 * torch.randn(2, 3, dtype=F64), torch.zeros(2, 3, dtype=F64))
    res = R.analyze_cell(cell, x, h0=h0)
    doc = res.to_json()
    assert doc["params"]["state_parts"] == [3, 3]
    assert torch.equal(res.run.h0, torch.cat(h0, -1))
    for tid in ("kpflow:prop-1", "kpflow:cor-1"):
        assert theorem(doc, tid)["cross_check"]["status"] == "agrees"
    th1 = theorem(doc, "kpflow:thm-1")
    assert hyp(th1, "f = f^outer")["status"] == "holds" and hyp(th1, "outer Jacobian")["status"] == "fails"  # GRUCell
    with pytest.raises(ValueError, match=r"h0\[1\].*expected shape"):
        R.analyze_cell(cell, x, h0=(h0[0], torch.zeros(3, 3, dtype=F64)))
