r"""The work of one ``kpflow analyze`` run, counted before it runs (no torch import): how many times
each primitive is applied, and how many bytes its arrays take. :mod:`flowcert.limits` turns the
counts into CPU seconds and the bytes into a peak with measured unit costs, and refuses a request
that does not fit before anything is allocated.

With :math:`N=BT` points, :math:`n=BTH` entries, w = 3 gates for the GRU (1 otherwise) and
:math:`d=H+I+1` inputs per gate row, the primitives and their sizes are

* ``P``: one application of :math:`\mathcal P` or :math:`\mathcal P^*` to one vector: :math:`2NH^2`
  multiply-adds with stored Jacobians (``P_recompute``: one jvp/vjp of the cell per step instead);
* ``G``: one application of :math:`G` or :math:`G^\top` to one vector: :math:`2NHdw` (closed forms;
  ``G_autograd``: one autograd call through the cell, the other cells);
* ``cell``: one pass of the rollout (forward, or its jvp, or its vjp): :math:`2NHdw` and T steps;
* ``qr``: one H×H factorisation (QR, SVD, LU: Lyapunov exponents and Theorem 2);
* ``dense``: :math:`m^3` of a dense decomposition of an m×m matrix (the references at
  :math:`n\le` ``exact_max``); ``flops``: multiply-adds of tall-skinny products (sketch QR and Gram,
  the per-probe partial traces);
* ``lmi``: the contraction LMI and its exact re-check (B·T <= 64, H <= 8).

The counts mirror :mod:`.identities`, :mod:`.spectra`, :mod:`.consensus` and
``flowcert.rnn.analyze`` (a test compares them with instrumented runs).
"""

from __future__ import annotations

from typing import Any

#: Memory for one batch of probe vectors (and as much for their images).
BUDGET_BYTES = 256 * 2**20
#: A batch of vectors lives in about this many copies while C^T is applied (layouts, outputs).
COPIES = 4
#: The default exact path of a partial trace when it costs at most this many times the probes' applications.
EXACT_FACTOR = 16
#: Per-probe matrices kept (for eigenvalue error bars) up to :math:`m|K|^2` entries (64 MB).
KEEP_PER_PROBE = 8_000_000
#: Memory for one chunk of sketch vectors (their images and the operator's transients are a few times this).
CHUNK_BYTES = 48 * 2**20
#: Memory for the transients of one batch of parameter-Jacobian products.
BATCH_BYTES = 256 * 2**20
#: Memory for the Theorem 2 checks on a subset of trials.
THM2_BYTES = 64 * 2**20

#: Vectors per batch assumed by the overhead terms (the calibration's batches).
BATCH = 8

CLOSED_G = ("rnn_tanh", "relu_rnn", "torch_rnn", "gru")
CLOSED_J = CLOSED_G + ("linear",)
AXES = ("B", "T", "H")


def sketch_rank(n: int) -> int:
    """Singular values sketched above ``exact_max``: 60, and 30 above 100,000 entries (B·T·H), where each
    application of K or PKP* costs tens of milliseconds."""
    return 60 if n <= 100_000 else 30


def sketch_sizes(n: int, k: int | None = None) -> tuple[int, int, int]:
    """(k, l, r): singular values kept, sketch vectors, Hutchinson probes of :func:`~.spectra.effective_rank`."""
    k = sketch_rank(n) if k is None else k
    l = min(n, k + 10)
    return k, l, max(4, min(n, l // 4))


def sketch_applications(l: int, r: int) -> int:
    """Applications of A (or A^T) by :func:`~.spectra.sketch_spectrum`."""
    return 2 * l + 3 * r


def default_exact(nk: int, ns: int, probes: int) -> bool:
    r"""The exact path (basis of the traced axes, :math:`|S|\cdot|K|` adjoint applications) is taken when
    :math:`|S|\le m` and it costs at most :data:`EXACT_FACTOR` times the m probes' applications."""
    return ns <= probes and ns * nk <= EXACT_FACTOR * probes


def gates(cell: str) -> int:
    """w: pre-activation blocks per hidden unit."""
    return 3 if cell == "gru" else 1


def parameter_count(cell: str, H: int, I: int) -> int:
    """Length of θ (the cells of :mod:`.cells` with their default options)."""
    if cell == "gru":
        return 3 * H * (H + I + 2)
    if cell == "torch_rnn":
        return H * (H + I + 2)
    if cell in ("rnn_tanh", "relu_rnn"):
        return H * (H + I)
    if cell == "hodgkin_huxley":
        return (H // 4) * (H // 4 + I)
    return H * (I + 1)  # linear


def analysis_work(B: int, T: int, H: int, I: int, cell: str, *, mode: str = "stored", consensus: str | None = None,
                  probes: int = 64, op: str = "PKP", exact_max: int = 1200) -> dict[str, Any]:
    """Counts of every primitive of ``kpflow analyze`` (module docstring) and its arrays' bytes.

    Returns ``{"counts": {primitive: applications}, "sizes": {primitive: multiply-adds of one}, "bytes":
    {stage: bytes held at its peak, beyond the interpreter}, "persistent_bytes"}``.
    """
    N, n, w, d = B * T, B * T * H, gates(cell), H + I + 1
    item = 8
    c: dict[str, float] = {k: 0.0 for k in ("P", "P_recompute", "P_single", "P_recompute_single", "G", "G_autograd",
                                            "cell", "qr", "dense", "flops", "lmi")}
    Pk = "P" if mode == "stored" else "P_recompute"
    Gk = "G" if cell in CLOSED_G else "G_autograd"
    Ps = Pk + "_single"
    nw = len(("W", "W_in")) + (2 if cell in ("gru", "torch_rnn") else 0)  # parameters of Thm 1 (K_j)

    def add(P: float = 0, G: float = 0, cell_: float = 0) -> None:
        c[Pk] += P
        c[Gk] += G
        c["cell"] += cell_

    add(cell_=1)  # the trajectory
    if mode == "stored" and cell not in CLOSED_J:
        add(cell_=2 * H)  # H vjps over all points
    add(G=3, cell_=11)  # Prop. 1: FD rollouts, noise, gradient, jvp rollout; the flow and G^T P^T Err
    add(G=6, cell_=6)  # adjoint, inverse, hidden NTK identities
    c[Ps] += 3 + 10 + 1  # single-vector P / P* of Prop. 1, the identities and Theorem 2
    if n <= exact_max:  # dense effective ranks, P's 2-norm, Theorem 1's dense K_j
        add(P=3 * n + n, G=4 * n)
        c["dense"] += 4 * float(n) ** 3
        if cell != "module":
            add(G=2 * n * nw)
            c["dense"] += nw * (float(n) ** 3 + float(N) ** 3)
        sketch_bytes = 20 * n * n * item  # dense operators, their SVD workspace, the basis batch
        vectors = n
    else:
        k, l, r = sketch_sizes(n)
        a = sketch_applications(l, r)
        add(P=3 * a, G=4 * a)
        c["flops"] += 3 * 3 * float(n) * l * l  # QR, projections and Gram of the [l, n] sketches
        sketch_bytes = 3 * l * n * item + min(4 * CHUNK_BYTES, 4 * l * n * item)  # Q, Z, one image; chunks
        vectors = l
    dim = parameter_count(cell, H, I)
    bc = max(1, min(B, THM2_BYTES // (4 * T * H * H * item)))
    c["qr"] += N + 4 * bc * T  # Lyapunov QR of every A_t; SVDs, products and LU on the checked trials
    if B * T <= 64 and H <= 8:
        c["lmi"] += 1
    J_bytes = N * H * H * item if mode == "stored" else 0
    persistent = J_bytes + 12 * w * n * item  # trajectory, inputs, cached gate factors, G's points
    per_vector = item * (8 * w * n + 2 * dim)  # one vector through G or G^T (ParameterJacobian._chunk)
    stage = {"effective_rank": sketch_bytes, "thm_2": 4 * bc * T * H * H * item + (0 if J_bytes else bc * T * H * H * item),
             "parameter_batches": min(BATCH_BYTES, per_vector * vectors)}
    if consensus is not None:
        keep = [a for a in AXES if a in consensus]
        dims = {"B": B, "T": T, "H": H}
        nk = 1
        for a in keep:
            nk *= dims[a]
        ns = n // nk
        cdim = n if op == "PP" else dim
        Cp = {"PKP": (1, 1), "K": (0, 1), "PP": (1, 0)}[op]  # (P, G) applications in one C or C^T
        moments = 2 * nk * nk * 8
        adjoint_batch = min(BUDGET_BYTES, nk * COPIES * n * item) + nk * cdim * item  # C^T on |K| vectors, and Y
        if default_exact(nk, ns, probes):
            apps = ns * nk
            cons_bytes = adjoint_batch + moments
        else:
            apps = probes
            c["flops"] += probes * float(nk) * nk * ns  # tr_S(v v^T) per probe
            kept = probes * nk * nk if nk * nk * probes <= KEEP_PER_PROBE else 0
            cons_bytes = max(min(BUDGET_BYTES, probes * (cdim + 6 * n) * item), adjoint_batch) + moments + 8 * kept
        apps += nk  # the block sum: C^T on e_k (x) 1
        add(P=Cp[0] * apps, G=Cp[1] * apps)
        stage["consensus"] = cons_bytes + min(BATCH_BYTES, per_vector * nk)
    sizes = {"P": 2.0 * N * H * H, "P_recompute": 2.0 * N * H * d * w, "G": 2.0 * N * H * d * w,
             "G_autograd": 2.0 * N * H * d * w, "cell": 2.0 * N * H * d * w, "qr": float(H) ** 3, "dense": 1.0, "flops": 1.0,
             "lmi": 1.0}
    sizes["P_single"], sizes["P_recompute_single"] = sizes["P"], sizes["P_recompute"]
    # steps paying a fixed overhead, per application: a recurrence's T steps (a batch of BATCH vectors shares
    # them), one call of G, one batched step per B factorisations
    steps = {"P": T / BATCH, "P_recompute": T / BATCH, "P_single": T, "P_recompute_single": T, "cell": T,
             "G": 1, "G_autograd": 1, "qr": 1 / B, "dense": 0, "flops": 0, "lmi": 0}
    return {"counts": c, "sizes": sizes, "steps": steps, "bytes": stage, "persistent_bytes": persistent}
