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

from typing import TypedDict

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
    :math:`|S|\le m` and it costs at most :data:`EXACT_FACTOR` times the m probes' applications (the rule
    of a bare operator; :func:`consensus_plan` adds the absolute one of a KPFlow operator)."""
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


class ConsensusPlan(TypedDict):
    """The path a consensus stage takes (:func:`consensus_plan`): why, and its predicted CPU seconds and work."""

    exact: bool
    reason: str
    predicted_cpu_s: float
    exact_cpu_s: float
    estimate_cpu_s: float
    work: dict[str, float]


class AnalysisWork(TypedDict):
    """The work of ``kpflow analyze`` (:func:`analysis_work`): counts, sizes and steps per primitive, bytes per stage."""

    counts: dict[str, float]
    sizes: dict[str, float]
    steps: dict[str, float]
    bytes: dict[str, int]
    persistent_bytes: int
    consensus: ConsensusPlan | None
    consensus_counts: dict[str, float]


def analysis_work(B: int, T: int, H: int, I: int, cell: str, *, mode: str = "stored", consensus: str | None = None,
                  probes: int = 64, op: str = "PKP", exact_max: int = 1200) -> AnalysisWork:
    """Counts of every primitive of ``kpflow analyze`` (module docstring) and its arrays' bytes.

    Returns ``{"counts": {primitive: applications}, "sizes": {primitive: multiply-adds of one}, "bytes":
    {stage: bytes held at its peak, beyond the interpreter}, "persistent_bytes", "consensus": the
    :func:`consensus_plan` (None without one), "consensus_counts": the part of ``counts`` it accounts for}``.
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
    plan: ConsensusPlan | None = None
    consensus_counts: dict[str, float] = {}
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
        plan = consensus_plan(B, T, H, I, cell, consensus, probes, op=op, mode=mode)
        if plan["exact"]:
            apps = ns * nk
            cons_bytes = adjoint_batch + moments
            flops = 0.0
        else:
            apps = probes
            flops = probes * float(nk) * nk * ns  # tr_S(v v^T) per probe
            kept = jackknife_groups(probes, nk) * nk * nk
            cons_bytes = max(min(BUDGET_BYTES, probes * (cdim + 6 * n) * item), adjoint_batch) + moments + 8 * kept
        apps += nk  # the block sum: C^T on e_k (x) 1
        c["flops"] += flops
        add(P=Cp[0] * apps, G=Cp[1] * apps)
        # the stage is priced by its own measured model (consensus_plan); these counts are what kpflow_cost
        # takes back out of the generic one
        consensus_counts = {Pk: Cp[0] * apps, Gk: Cp[1] * apps, "flops": flops}
        stage["consensus"] = cons_bytes + min(BATCH_BYTES, per_vector * nk)
    sizes = {"P": 2.0 * N * H * H, "P_recompute": 2.0 * N * H * d * w, "G": 2.0 * N * H * d * w,
             "G_autograd": 2.0 * N * H * d * w, "cell": 2.0 * N * H * d * w, "qr": float(H) ** 3, "dense": 1.0, "flops": 1.0,
             "lmi": 1.0}
    sizes["P_single"], sizes["P_recompute_single"] = sizes["P"], sizes["P_recompute"]
    # steps paying a fixed overhead, per application: a recurrence's T steps (a batch of BATCH vectors shares
    # them), one call of G, one batched step per B factorisations
    steps = {"P": T / BATCH, "P_recompute": T / BATCH, "P_single": T, "P_recompute_single": T, "cell": T,
             "G": 1, "G_autograd": 1, "qr": 1 / B, "dense": 0, "flops": 0, "lmi": 0}
    return {"counts": c, "sizes": sizes, "steps": steps, "bytes": stage, "persistent_bytes": persistent,
            "consensus": plan, "consensus_counts": consensus_counts}


# ---------------------------------------------------------------------------------------
# the consensus stage (issue 46): its own batches, counts and measured unit costs
# ---------------------------------------------------------------------------------------

#: The exact path of a consensus spectrum is taken whenever its predicted CPU seconds are at most this,
#: however few probes were asked for: it has no sampling error and costs about as much as a second.
EXACT_SECONDS = 1.5
#: Jackknife groups kept at most (per-probe matrices when m is at most this, else means of about m/g probes).
JACKKNIFE_GROUPS = 64
#: Fewer probes than this: the spectrum's intervals are reported with ``trusted: false``.
TRUST_MIN_PROBES = 8

#: CPU seconds per unit of each primitive of the consensus stage (:func:`consensus_work`), one thread,
#: fitted by ``python benchmarks/kpflow_consensus_coverage.py --calibrate`` (non-negative least squares on
#: relative error over the 28 measured stages of its ``COST_CASES``; the shared 2-core development machine,
#: 2026-11-29, load 1-2). A zero is a term the fit found no weight for beside the others (P's multiply-adds
#: travel with its steps and the layouts at these sizes); ``Ga_vec`` (no closed-form G) is not fitted.
#: ``P_madd``/``P_step``: multiply-adds and batched steps of P, P* with stored Jacobians (``Pr_*``:
#: recomputed); ``G_madd``/``G_call``: the closed-form G, G^T and its calls (one per chunk of vectors);
#: ``G_elem``: entries of the gates' elementwise passes of the closed forms; ``G_out``: entries of the flat parameter vectors G reads or G^T writes (memory-bound copies);
#: ``Ga_vec``: one autograd G or G^T of one vector (the other cells); ``vec``: entries of the probe and
#: basis vectors written and permuted (``vec_big``: in batches above :data:`CACHE_BYTES`); ``flops``: multiply-adds of the per-probe and Gram products;
#: ``eig``: :math:`|K|^3` of one symmetric eigendecomposition; ``call``: the stage's fixed cost.
CONSENSUS_UNIT_SECONDS: dict[str, float] = {
    "P_madd": 0.0, "P_step": 3.34e-5, "Pr_madd": 0.0, "Pr_step": 8.69e-4,
    "G_madd": 4.8e-11, "G_call": 2.82e-4, "G_elem": 1.32e-8, "G_out": 1.34e-8, "Ga_vec": 5e-4,
    "vec": 0.0, "vec_big": 4.58e-9, "flops": 9.26e-11, "eig": 2.62e-10, "call": 0.0,
}


def traced_batching(n: int, nk: int, item: int = 8, budget: int = BUDGET_BYTES) -> tuple[int, int]:
    r"""Batches of the vectors :math:`e_k\otimes z` (exact path, traced-axes probes, block sum):
    ``(chunk, group)``: kept indices per batch and probes (rows z) per batch; all :math:`|K|` at once with
    as many rows as fit in ``budget`` (:data:`COPIES` copies), else one row at a time in chunks of kept indices."""
    vec = n * item
    chunk = max(1, min(nk, budget // (COPIES * vec)))
    group = max(1, budget // (COPIES * vec * nk)) if chunk == nk else 1
    return chunk, group


def factor_batching(dim: int, n: int, nk: int, m: int, item: int = 8, budget: int = BUDGET_BYTES) -> int:
    r"""Probes per batch of the factor-domain estimator: :math:`\omega`, :math:`C\omega` and its transients, M."""
    per = item * (dim + 6 * n) + 8 * nk * nk
    return max(1, min(m, budget // per))


def jackknife_groups(m: int, nk: int, keep_per_probe: int = KEEP_PER_PROBE, cap: int = JACKKNIFE_GROUPS) -> int:
    r"""Groups g of the delete-a-group jackknife: :math:`\min(m,\text{cap},\lfloor\text{keep}/|K|^2\rfloor)`;
    0 (no eigenvalue error bars) when that is below 2."""
    g = min(m, cap, keep_per_probe // max(1, nk * nk))
    return g if g >= 2 else 0


#: Batches of vectors above this many bytes are permuted out of cache (``vec_big``: several times dearer per entry).
CACHE_BYTES = 4 * 2**20


def _vec(nbytes: float) -> str:
    """The ``vec`` primitive of a batch of ``nbytes``: in cache or not."""
    return "vec_big" if nbytes > CACHE_BYTES else "vec"


def _sizes(total: int, per: int) -> list[int]:
    """``total`` split into batches of at most ``per``."""
    return [min(per, total - a) for a in range(0, total, per)]


def consensus_work(B: int, T: int, H: int, I: int, cell: str, keep: str, probes: int, *, op: str = "PKP",
                   mode: str = "stored", exact: bool = False, estimator: str = "factor", top: int = 20,
                   item: int = 8, budget: int = BUDGET_BYTES, dim: int | None = None) -> dict[str, float]:
    r"""Amounts of the primitives of :data:`CONSENSUS_UNIT_SECONDS` in one consensus stage
    (:func:`flowcert.gpu.rnn.consensus.consensus`): the exact path (:math:`|S|\,|K|` vectors through
    :math:`C^\top`) or the m probes (through C, ``estimator="factor"``, or :math:`m|K|` through :math:`C^\top`),
    the block sum (:math:`|K|` vectors through :math:`C^\top`), the eigendecompositions (the estimate, the
    block sum and the g jackknife groups), batched as :mod:`.consensus` batches them. ``dim``: the length of θ
    when the cell's own count differs (a user's cell)."""
    N, n, w, d = B * T, B * T * H, gates(cell), H + I + 1
    dims = {"B": B, "T": T, "H": H}
    nk = 1
    for a in AXES:
        if a in keep:
            nk *= dims[a]
    ns = n // nk
    dim = n if op == "PP" else (parameter_count(cell, H, I) if dim is None else dim)
    usesP, usesG = op in ("PP", "PKP"), op in ("K", "PKP")
    gchunk = max(1, BATCH_BYTES // (item * (8 * w * n + 2 * dim)))  # ParameterJacobian._chunk
    f = {k: 0.0 for k in CONSENSUS_UNIT_SECONDS}
    pre = "P" if mode == "stored" else "Pr"

    def through(batch: int) -> None:  # one batched application of C or C^T to `batch` vectors
        f[_vec(batch * n * item)] += 2.0 * batch * n  # its layouts: [n, B, T, H] <-> the time-major rows
        if usesP:
            f[pre + "_madd"] += batch * (2.0 * N * H * H if mode == "stored" else 2.0 * N * H * d * w)
            f[pre + "_step"] += T
        if usesG:
            f["G_out"] += batch * float(dim)  # the flat parameter vectors in or out, copied per parameter
            if cell in CLOSED_G:
                f["G_elem"] += batch * float(n) * w  # the gates' elementwise passes over [B T, batch, w H]
                f["G_madd"] += batch * 2.0 * N * H * d * w
                f["G_call"] += -(-batch // gchunk)
            else:
                f["Ga_vec"] += batch

    def traced(rows: int, nkeep: int) -> None:  # the vectors e_k (x) z for `rows` rows z, through C^T, then Y Y^T
        chunk, group = traced_batching(n, nkeep, item, budget)
        if chunk == nkeep:
            for p in _sizes(rows, group):
                through(p * nkeep)
        else:
            for _ in range(rows):
                for c in _sizes(nkeep, chunk):
                    through(c)
        f[_vec(min(rows, group) * min(nkeep, chunk) * n * item)] += 2.0 * rows * nkeep * n
        f["flops"] += float(rows) * nkeep * nkeep * dim

    g = 0
    if exact:
        traced(ns, nk)
    elif estimator == "traced":
        traced(probes, nk)
        g = jackknife_groups(probes, nk)
    else:
        for p in _sizes(probes, factor_batching(dim, n, nk, probes, item, budget)):
            through(p)
        f[_vec(factor_batching(dim, n, nk, probes, item, budget) * (dim + n) * item)] += 2.0 * probes * (dim + n)
        f["flops"] += float(probes) * nk * nk * ns
        g = jackknife_groups(probes, nk)
    chunk, _ = traced_batching(n, nk, item, budget)  # the block sum: e_k (x) 1, then Y Y^T
    for c in _sizes(nk, chunk):
        through(c)
    f[_vec(min(nk, chunk) * n * item)] += 2.0 * nk * n
    f["flops"] += float(nk) * nk * dim + float(g) * nk * nk * min(top, nk)
    f["eig"] += (2 + g) * float(nk) ** 3
    f["call"] += 1
    return f


def consensus_seconds(work: dict[str, float]) -> float:
    """Predicted CPU seconds of one consensus stage from its :func:`consensus_work`."""
    return sum(CONSENSUS_UNIT_SECONDS[k] * v for k, v in work.items())


def consensus_plan(B: int, T: int, H: int, I: int, cell: str, keep: str, probes: int, *, op: str = "PKP",
                   mode: str = "stored", estimator: str = "factor", exact: bool | None = None,
                   top: int = 20, dim: int | None = None) -> ConsensusPlan:
    r"""Which path a consensus stage takes, and its predicted CPU seconds.

    The exact path is taken when asked (``exact=True``), or by default when its predicted CPU seconds are at
    most :data:`EXACT_SECONDS` (cheap in absolute terms, whatever m), or under the rule of
    :func:`default_exact` (:math:`|S|\le m` and at most :data:`EXACT_FACTOR` times the probes'
    applications). Returns ``exact``, ``reason``, ``predicted_cpu_s`` (of the path taken),
    ``exact_cpu_s``, ``estimate_cpu_s``, ``work`` (the counts of the path taken)."""
    dims = {"B": B, "T": T, "H": H}
    nk = 1
    for a in AXES:
        if a in keep:
            nk *= dims[a]
    ns = B * T * H // nk
    we = consensus_work(B, T, H, I, cell, keep, probes, op=op, mode=mode, exact=True, top=top, dim=dim)
    wp = consensus_work(B, T, H, I, cell, keep, probes, op=op, mode=mode, exact=False, estimator=estimator, top=top,
                        dim=dim)
    te, tp = consensus_seconds(we), consensus_seconds(wp)
    if exact is not None:
        take, why = bool(exact), ("exact path asked for" if exact else "estimator asked for (exact=False)")
    elif te <= EXACT_SECONDS:
        take, why = True, (f"exact path: its {ns * nk} applications (|S| = {ns} basis vectors x |K| = {nk}) are "
                           f"predicted to take {te:.2g} CPU s <= {EXACT_SECONDS:g} s, cheap whatever the {probes} "
                           f"probes asked for")
    elif default_exact(nk, ns, probes):
        take, why = True, (f"exact path: |S| = {ns} <= {probes} probes and its {ns * nk} applications are at most "
                           f"{EXACT_FACTOR} x the probes'")
    else:
        take, why = False, (f"estimator: the exact path's {ns * nk} applications are predicted to take {te:.2g} CPU s "
                            f"> {EXACT_SECONDS:g} s; {probes} probes take {tp:.2g} s")
    return {"exact": take, "reason": why, "predicted_cpu_s": te if take else tp, "exact_cpu_s": te,
            "estimate_cpu_s": tp, "work": we if take else wp}
