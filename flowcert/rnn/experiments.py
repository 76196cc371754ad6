r"""CPU-scale reproductions of the KPFlow experiments (note §4.4: R2/R3, R4, R5).

* :func:`collapse_sweep` (Memory-Pro, Exp. 1 / Fig. 2–3): eq. 8 RNN with :math:`\Delta t=1`
  (:math:`z_t=W\tanh z_{t-1}+W_{in}x_t`), :math:`W\sim\mathcal N(0,g^2/H)`, Adam on
  :math:`\{W,W_{in},W_{out},b_{out}\}`; at checkpoints the exact effective ranks (σ² weights,
  :mod:`flowcert.gpu.rnn.spectra`) of K, P and PKP*, the feature dimension of Theorem 1 and PCA-95
  of the hidden states.
* :func:`interference_run` (Exp. 2 / Fig. 4): GRU on the 4 tasks MP, MA, DP, DA with a context
  period; every ``every`` iterations the blocks :math:`\delta z_{ij}=-\mathcal P_i\mathcal K_{ij}\mathcal P_j^*\mathrm{Err}_j`
  and :math:`M_{ij}=\cos(\delta z_{ii},\delta z_{ij})`, averaged over the run (cumulative C), and the
  hidden-state cosine matrix of :math:`z_i,z_j` (same stimuli).
* :func:`lyapunov_sweep` (R4): QR Lyapunov spectrum and Kaplan–Yorke dimension of the autonomous
  eq. 8 map vs g.
"""

from __future__ import annotations

import math
from typing import Any, Sequence, TypedDict

import numpy as np

PRO_ANTI = ((0, 2), (2, 0), (1, 3), (3, 1))  # (MP, DP), (MA, DA)
MEM_DEL = ((0, 1), (1, 0), (2, 3), (3, 2))  # (MP, MA), (DP, DA)


class CollapseRun(TypedDict):
    """One gain of :func:`collapse_sweep`: the effective ranks at each checkpoint and the loss per step."""

    g: float
    checkpoints: list[dict[str, int]]
    loss: list[float]


class CollapseSweep(TypedDict):
    """:func:`collapse_sweep`: the gains, one run per gain and the training protocol."""

    gains: list[float]
    runs: list[CollapseRun]
    protocol: dict[str, object]


class InterferenceRun(TypedDict):
    """:func:`interference_run`: the interference matrices M(s) and their running mean C, the cosine of the
    summed corrections, the hidden-state alignments, their averages over the pro/anti and memory/delay
    task pairs, the loss and the protocol."""

    iters: list[int]
    C: list[list[list[float]]]
    C_of_sum: list[list[float]]
    M: list[list[list[float]]]
    hidden_cos: list[list[list[float]]]
    loss: list[float]
    pro_anti_C: list[float]
    mem_del_C: list[float]
    pro_anti_hidden: list[float]
    mem_del_hidden: list[float]
    protocol: dict[str, object]


class LyapunovRow(TypedDict):
    """One gain of :func:`lyapunov_sweep`: the top exponent per step and the Kaplan–Yorke dimension."""

    g: float
    lambda_max: float
    kaplan_yorke: float


class LyapunovSweep(TypedDict):
    """:func:`lyapunov_sweep`: one row per gain and the protocol."""

    rows: list[LyapunovRow]
    protocol: dict[str, object]


def _pca95(Z: Any) -> int:
    from ..gpu.rnn.spectra import effrank_from

    X = Z.reshape(-1, Z.shape[-1]).numpy()
    X = X - X.mean(0)
    return effrank_from(np.linalg.svd(X, compute_uv=False) ** 2)


def _spectra(cell: Any, theta: dict, x: Any) -> dict[str, int]:
    import torch

    from ..gpu.rnn.operators import Propagation, Trajectory
    from ..gpu.rnn.spectra import effrank_from, factor_spectra

    tr = Trajectory.run(cell, {k: v.detach() for k, v in theta.items()}, x, torch.zeros(x.shape[0], cell.H, dtype=torch.float64))
    fs = factor_spectra(Propagation(tr, "stored"))
    B, T, H = tr.shape
    feats = cell.features(tr.theta, tr.Zprev.reshape(B * T, H), tr.x.reshape(B * T, -1))
    F = torch.cat(list(feats.values()), 1)
    fv = torch.linalg.svdvals(F).numpy() ** 4  # sigma^2 of the feature Gram F F^T (same weighting as K)
    return {"K": effrank_from(fs["K"]), "P": effrank_from(fs["P"]), "PKP": effrank_from(fs["PKP"]),
            "K_trH": effrank_from(fs["K_trH"]), "features": effrank_from(fv), "pca95": _pca95(tr.Z), "N": B * T * H}


def _trainable(theta: dict, H: int, seed: int, lr: float) -> tuple[dict, Any, Any, Any]:
    """Trainable copies of the cell parameters, a seeded linear readout (3 outputs) and Adam over both."""
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    W_out = (torch.randn(3, H, generator=gen, dtype=torch.float64) / math.sqrt(H)).requires_grad_(True)
    b_out = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    params = {k: v.clone().requires_grad_(True) for k, v in theta.items()}
    return params, W_out, b_out, torch.optim.Adam(list(params.values()) + [W_out, b_out], lr=lr)


def _gd_step(opt: Any, cell: Any, params: dict, W_out: Any, b_out: Any, x: Any, y: Any) -> float:
    r"""One optimiser step on :math:`L=\frac1B\sum_{b,t}\frac12\|W_{out}z+b_{out}-y^*\|^2`; returns L."""
    import torch

    from ..gpu.rnn.operators import rollout

    opt.zero_grad()
    Z = rollout(cell, params, x, torch.zeros(x.shape[0], W_out.shape[1], dtype=torch.float64))
    L = 0.5 * ((Z @ W_out.T + b_out - y) ** 2).sum() / x.shape[0]
    L.backward()
    opt.step()
    return float(L.detach())


def collapse_sweep(gains: Sequence[float] = (0.5, 1.0, 2.0), H: int = 16, n_angles: int = 8, steps: int = 10,
                   iters: int = 150, checkpoints: Sequence[int] = (0, 50, 150), lr: float = 1e-2,
                   seed: int = 0) -> CollapseSweep:
    """Memory-Pro training per gain with effective ranks of K, P, PKP* at checkpoints."""
    import torch

    from ..gpu.rnn import cells, tasks
    torch.set_num_threads(1)
    x, y = tasks.memory_task("MP", n_angles, steps=steps)
    out: CollapseSweep = {"gains": list(gains), "runs": [], "protocol": {
        "cell": "rnn_tanh, dt = 1", "H": H, "trials": n_angles, "T": 3 * steps, "iters": iters, "lr": lr,
        "optimizer": "Adam", "seed": seed, "loss": "(1/B) sum_{b,t} 1/2 ||W_out z + b_out - y*||^2"}}
    for g in gains:
        cell, th = cells.init_params("rnn_tanh", H, 3, g=g, seed=seed, dt=1.0)
        params, W_out, b_out, opt = _trainable(th, H, seed, lr)
        run: CollapseRun = {"g": g, "checkpoints": [], "loss": []}
        for it in range(iters + 1):
            if it in checkpoints:
                run["checkpoints"].append({"iter": it, **_spectra(cell, params, x)})
            if it == iters:
                break
            run["loss"].append(_gd_step(opt, cell, params, W_out, b_out, x, y))
        out["runs"].append(run)
    return out


def interference_run(H: int = 16, n_angles: int = 4, steps: int = 5, context: int = 5, iters: int = 200,
                     every: int = 10, lr: float = 1e-2, seed: int = 0) -> InterferenceRun:
    """Multi-task GRU: cumulative interference matrix and hidden-state alignment (Fig. 4 analogue)."""
    import torch

    from ..gpu.rnn import cells, tasks
    from ..gpu.rnn.operators import KPFlow, Trajectory, interference_matrix, readout_error, task_blocks

    torch.set_num_threads(1)
    x, y, idx = tasks.multitask(n_angles, steps=steps, context=context)
    cell, th = cells.init_params("gru", H, x.shape[-1], g=1.0, seed=seed)
    params, W_out, b_out, opt = _trainable(th, H, seed, lr)

    def hidden_cos(Z: Any) -> np.ndarray:
        zs = [Z[i].reshape(-1) for i in idx]
        return np.array([[float(a @ b / (a.norm() * b.norm())) for b in zs] for a in zs])

    Ms, sums, its, hid, losses = [], None, [], [], []
    for it in range(iters + 1):
        if it % every == 0:
            th_d = {k: v.detach() for k, v in params.items()}
            tr = Trajectory.run(cell, th_d, x, torch.zeros(x.shape[0], H, dtype=torch.float64))
            err = readout_error(tr.Z, W_out.detach(), b_out.detach(), y)
            kp = KPFlow.build(tr)
            blocks = task_blocks(kp, err, idx)
            M = interference_matrix(blocks).numpy()
            Ms.append(M)
            tot = [[b.clone() for b in row] for row in blocks]
            sums = tot if sums is None else [[s + b for s, b in zip(rs, rb)] for rs, rb in zip(sums, tot)]
            its.append(it)
            hid.append(hidden_cos(tr.Z))
        if it == iters:
            break
        losses.append(_gd_step(opt, cell, params, W_out, b_out, x, y))
    C = np.cumsum(np.array(Ms), 0) / np.arange(1, len(Ms) + 1)[:, None, None]  # mean of M(s) up to S
    C_sum = interference_matrix(sums).numpy()  # cosine of the summed corrections (second reading)

    def filt(M: np.ndarray, cells_: Sequence[tuple[int, int]]) -> float:
        return float(np.mean([M[i, j] for i, j in cells_]))

    return {"iters": its, "C": C.tolist(), "C_of_sum": C_sum.tolist(), "M": [m.tolist() for m in Ms],
            "hidden_cos": [h.tolist() for h in hid], "loss": losses,
            "pro_anti_C": [filt(c, PRO_ANTI) for c in C], "mem_del_C": [filt(c, MEM_DEL) for c in C],
            "pro_anti_hidden": [filt(h, PRO_ANTI) for h in hid], "mem_del_hidden": [filt(h, MEM_DEL) for h in hid],
            "protocol": {"cell": "gru", "H": H, "tasks": list(tasks.TASKS), "angles_per_task": n_angles,
                         "T": context + 3 * steps, "context": context, "iters": iters, "every": every, "lr": lr,
                         "optimizer": "Adam", "seed": seed}}


def lyapunov_sweep(gains: Sequence[float] = (0.5, 1.0, 1.5, 2.0, 3.0), H: int = 32, T: int = 400,
                   burn: int = 100, seed: int = 0) -> LyapunovSweep:
    """QR Lyapunov exponents (per step) and Kaplan–Yorke dimension of :math:`z_t=W\\tanh z_{t-1}`."""
    import torch

    from ..gpu.rnn import cells
    from ..gpu.rnn.operators import Propagation, Trajectory
    from ..gpu.rnn.spectra import kaplan_yorke, lyapunov_qr

    torch.set_num_threads(1)
    rows: list[LyapunovRow] = []
    for g in gains:
        cell, th = cells.init_params("rnn_tanh", H, 1, g=g, seed=seed, dt=1.0)
        h0 = torch.randn(1, H, generator=torch.Generator().manual_seed(seed + 2), dtype=torch.float64)
        tr = Trajectory.run(cell, th, torch.zeros(1, T, 1, dtype=torch.float64), h0)
        J = Propagation(tr, "stored").J
        lam = lyapunov_qr(J[0, burn:])
        rows.append({"g": g, "lambda_max": float(lam[0]), "kaplan_yorke": kaplan_yorke(lam)})
    return {"rows": rows, "protocol": {"H": H, "T": T, "burn_in": burn, "seed": seed, "input": "none (autonomous)"}}
