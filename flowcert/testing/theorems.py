r"""``for_theorem(id, satisfied=True|False)``: parameter files built to satisfy or to violate a
catalogue entry's hypotheses.

Each entry is a :class:`Case` with the system, a strategy of parameter-file objects (JSON form,
as ``flowcert verify SYSTEM --params`` reads them) on each side, and, where one side cannot
exist, the reason. The constructions follow the hypotheses as the catalogue checks them (the
corrected statements of the notes):

* gaussian, eq. (7): :math:`V\prec0`/:math:`\succ0`, :math:`B\succ0` from exact symmetric strategies;
  :math:`\lambda_{\max}(A+A^\top)\le0` from :math:`A=S-\tfrac12P` (:math:`S` skew, :math:`P\succeq0`);
  spectra of :math:`A` from :func:`~flowcert.testing.matrices.with_spectrum`; Lemma 2.3's
  :math:`8\|B\|_2\lambda_{\max}(\Sigma_0)<1` from small entries.
* attention: one constant head, full attention, Assumption 1 (multistability paper); hemisphere
  or antipodal initial tokens, causal masks, :math:`U=I` (consensus paper).
* rnn: cells whose outer Jacobian is or is not constant (Thm 1), linear cells with invertible or
  singular state matrix (Thm 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from ..records import JSONObject
from .attention import attention_params
from .matrices import hurwitz, negative_definite, positive_definite, symmetric, with_spectrum
from .states import gaussian_state


@dataclass(frozen=True)
class Case:
    """Both sides of one catalogue entry: strategies, or the reason a side cannot exist."""

    id: str
    system: str
    satisfied: st.SearchStrategy[JSONObject] | None
    violated: st.SearchStrategy[JSONObject] | None
    reason: str = ""


def _lists(x: Any) -> Any:
    return np.asarray(x, float).tolist()


def _dims(lo: int = 1, hi: int = 3) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


@st.composite
def _skew(draw: st.DrawFn, d: int) -> np.ndarray:
    S = np.zeros((d, d))
    for i in range(d):
        for j in range(i + 1, d):
            S[i, j] = draw(st.integers(-8, 8)) / 8
            S[j, i] = -S[i, j]
    return S


@st.composite
def _semidefinite_part(draw: st.DrawFn, d: int, sign: int, bound: float = 1.0) -> np.ndarray:
    """:math:`S+\\tfrac{\\mathrm{sign}}2P` with :math:`P\\succeq0`: :math:`A+A^\\top=\\mathrm{sign}\\,P` exactly."""
    r = draw(st.integers(0, d))
    P = draw(symmetric(d, (r, 0, d - r), 0.125, bound))
    return draw(_skew(d)) + sign * P / 2  # P/2 is exact (a power-of-two scaling)


@st.composite
def gaussian_params(draw: st.DrawFn, d: int | None = None, *, A: Callable[[int], st.SearchStrategy] | None = None,
                    V: Callable[[int], st.SearchStrategy] | None = None, B: Callable[[int], st.SearchStrategy] | None = None,
                    rank: int | None = None, sigma: tuple[float, float] = (0.25, 1.0), t_end: float = 2.0,
                    generic_b: bool = False, **extra: Any) -> JSONObject:
    r"""A gaussian parameter file; each matrix from its strategy factory ``d -> strategy`` (default: small symmetric)."""
    d = draw(_dims()) if d is None else d
    default = (lambda k: symmetric(k, margin=0.25, bound=1.0))
    A_ = draw((A or (lambda k: with_spectrum(k, margin=0.25, bound=1.0)))(d))
    V_ = draw((V or default)(d))
    B_ = draw((B or default)(d))
    mu0, Sigma0 = draw(gaussian_state(d, d if rank is None else rank, sigma[0], sigma[1], 1.0))
    b = np.array(draw(st.lists(st.integers(1, 4) if generic_b else st.integers(-4, 4), min_size=d, max_size=d)), float) / 4
    doc = {"A": _lists(A_), "B": _lists(B_), "V": _lists(V_), "b": _lists(b), "mu0": _lists(mu0),
           "Sigma0": _lists(Sigma0), "t_end": t_end}
    doc.update(extra)
    return doc


def _eta(sign: int) -> Callable[[int], st.SearchStrategy]:
    return lambda d: st.just(sign * np.eye(d))


def _pd(d: int) -> st.SearchStrategy:
    return positive_definite(d, 0.25, 1.0)


def _nd(d: int) -> st.SearchStrategy:
    return negative_definite(d, 0.25, 1.0)


def _small_B(d: int) -> st.SearchStrategy:
    return st.lists(st.integers(-4, 4), min_size=d * d, max_size=d * d).map(lambda v: np.array(v, float).reshape(d, d) / 64)


def _gaussian_cases() -> list[Case]:
    g = gaussian_params
    stable = lambda d: hurwitz(d, 0.25, 1.0)  # noqa: E731
    anti = lambda d: with_spectrum(d, d, 0.25, 1.0)  # noqa: E731
    some_unstable = lambda d: st.integers(1, d).flatmap(lambda k: with_spectrum(d, k, 0.25, 1.0))  # noqa: E731
    mixed_or_any = lambda d: with_spectrum(d, None, 0.25, 1.0)  # noqa: E731
    psd_sym = lambda d: _semidefinite_part(d, -1)  # noqa: E731  A + A^T <= 0
    pos_sym = lambda d: _semidefinite_part(d, +1)  # noqa: E731  A + A^T >= 0
    nonneg_fail = lambda d: _semidefinite_part(d, +1).filter(lambda A: np.abs(A + A.T).max() > 0)  # noqa: E731
    big = lambda d: st.just(2.0 * np.eye(d))  # noqa: E731
    return [
        Case("gaussian:prop-2.1", "gaussian", g(), g(activation="relu")),
        Case("gaussian:lemma-2.3", "gaussian", g(B=_small_B, sigma=(0.125, 0.25)), g(B=big, sigma=(1.0, 2.0))),
        Case("gaussian:prop-2.4", "gaussian", g(B=_small_B, sigma=(0.125, 0.25), activation="relu"),
             g(B=big, sigma=(1.0, 2.0), activation="relu")),
        Case("gaussian:lemma-3.1", "gaussian", _dims().flatmap(lambda d: g(d, rank=None if d > 1 else 1)),
             g().map(_discontinuous_b)),
        Case("gaussian:thm-3.3", "gaussian", g(), None,
             "the only hypothesis is Sigma0 >= 0, which every valid parameter file satisfies (an indefinite Sigma0 "
             "is bad input, exit 2)"),
        # violated: eta(B + B^T) not <= 0 (a skew B satisfies the detectability form whenever (H, A) is detectable)
        Case("gaussian:thm-4.1", "gaussian", g(A=mixed_or_any, V=_eta(-1), B=_pd), g(A=mixed_or_any, V=_eta(-1), B=_nd)),
        Case("gaussian:thm-4.11.1", "gaussian", g(A=mixed_or_any, V=_eta(-1), B=_pd), g(A=mixed_or_any, V=_eta(1), B=_nd)),
        # divergence of the mean is claimed for generic data only: b > 0 componentwise keeps mu off the
        # stable manifold's trivial point mu0 = b = 0
        Case("gaussian:thm-4.11.2", "gaussian", g(A=some_unstable, V=_eta(1), B=_nd, generic_b=True),
             g(A=some_unstable, V=_eta(-1), B=_pd)),
        # a horizon long enough for the simulation + Newton search to find the PD equilibrium
        Case("gaussian:lemma-4.4", "gaussian", g(A=anti, V=_eta(-1), B=_pd, t_end=30.0), g(A=stable, V=_eta(-1), B=_pd)),
        Case("gaussian:thm-4.7.1", "gaussian", g(A=anti, V=_eta(-1), B=_pd, t_end=30.0), g(A=anti, V=_pd, B=_pd)),
        Case("gaussian:thm-4.7.2", "gaussian", g(A=psd_sym, V=_nd, B=_pd), g(A=nonneg_fail, V=_nd, B=_pd)),
        Case("gaussian:thm-4.7.3", "gaussian", g(A=stable, V=_nd, B=_pd), g(A=some_unstable, V=_nd, B=_pd)),
        Case("gaussian:thm-4.8.1", "gaussian", g(A=pos_sym, V=_pd, B=_pd), g(A=pos_sym, V=_nd, B=_pd)),
        Case("gaussian:thm-4.8.2", "gaussian",
             g(A=lambda d: _semidefinite_part(d, -1, 1.0), V=lambda d: positive_definite(d, 1.0, 2.0),
               B=lambda d: positive_definite(d, 1.0, 2.0), sigma=(2.0, 4.0)),
             g(A=psd_sym, V=_nd, B=_pd)),
    ]


def _discontinuous_b(doc: JSONObject) -> JSONObject:
    """Lemma 3.1 needs continuous coefficients: a jump of ``b`` inside ``[0, t_end]``."""
    out = dict(doc)
    b = [str(x) for x in doc["b"]]
    b[0] = "1/(t - 1)"  # a pole inside [0, t_end]
    out["b"] = b
    return out


_MS_IDS = ("lemma-1", "lemma-2", "lemma-4", "lemma-5", "thm-1", "lemma-6", "lemma-7", "thm-2", "lemma-9", "lemma-10",
           "lemma-11", "prop-2", "obs-D2", "obs-D3")


def _multistability_cases() -> list[Case]:
    sat = attention_params(heads=1, causal=False, value="assumption-1", score="any", t_end=5.0)
    # model (1) is one constant head with full attention on the sphere: a causal mask or a second head violates it
    viol = st.one_of(attention_params(heads=2, value="assumption-1", t_end=5.0),
                     attention_params(heads=1, causal=True, value="assumption-1", t_end=5.0))
    # D2 is the equal split n1 = n2: an even number of tokens
    even = st.sampled_from((2, 4)).flatmap(lambda n: attention_params(n=n, heads=1, value="assumption-1", t_end=5.0))
    return [Case(f"multistability:{i}", "attention", even if i == "obs-D2" else sat, viol) for i in _MS_IDS]


def _consensus_cases() -> list[Case]:
    a = attention_params
    sq = dict(normalization="sqrt", t_end=5.0)
    full_I = a(value="identity", score="any", tokens="hemisphere", **sq)
    causal_I = a(value="identity", causal=True, score="any", **sq)
    return [
        Case("consensus:lemma-3.1", "attention", a(value="identity", score="pd", **sq),
             a(value="identity", score="indefinite", **sq)),
        Case("consensus:thm-3.1", "attention", a(value="identity", score="pd", **sq),
             a(value="identity", score="pd", causal=True, **sq)),
        Case("consensus:thm-3.2", "attention", a(value="identity", score="pd", on_P_ellipsoid=True, **sq),
             a(value="identity", score="pd", causal=True, on_P_ellipsoid=True, **sq)),
        Case("consensus:lemma-4.1", "attention", full_I, None,
             "its hypotheses (P bounded on [0, t_end], W = W^T > 0) hold for every valid file with constant heads; "
             "only an unbounded time-varying P violates them, which no finite horizon exhibits"),
        Case("consensus:lemma-4.2", "attention", full_I, causal_I),
        Case("consensus:thm-4.1", "attention", full_I, a(value="identity", score="any", tokens="none", **sq)),
        Case("consensus:lemma-5.1", "attention", causal_I, a(value="identity", score="any", **sq)),
        Case("consensus:thm-5.1", "attention", causal_I, a(value="identity", score="any", **sq)),
        Case("consensus:lemma-6.1", "attention", a(value="assumption-1", causal=True, **sq),
             a(value="repeated-top", causal=True, **sq)),
        Case("consensus:thm-6.1", "attention", a(value="assumption-1", causal=True, tokens="top-hemisphere", **sq),
             a(value="assumption-1", causal=False, tokens="top-hemisphere", **sq)),
    ]


@st.composite
def rnn_params(draw: st.DrawFn, cell: str = "rnn_tanh", **extra: Any) -> JSONObject:
    """A small rnn parameter file (B = 2 trials, T <= 6 steps, H <= 3)."""
    H = draw(st.integers(2, 3))
    doc = {"cell": cell, "B": 2, "T": draw(st.integers(3, 6)), "H": H, "I": 2, "seed": draw(st.integers(0, 99))}
    doc.update({k: (v(H) if callable(v) else v) for k, v in extra.items()})
    return doc


def _kpflow_cases() -> list[Case]:
    identity_reason = ("its hypotheses (a differentiable cell, plain gradient descent, a linear readout) hold by the "
                       "model's definition for every cell flowcert builds; no parameter file violates them")
    return [
        Case("kpflow:prop-1", "rnn", rnn_params(), None, identity_reason),
        Case("kpflow:cor-1", "rnn", rnn_params(), None, identity_reason),
        Case("kpflow:thm-1", "rnn", rnn_params("rnn_tanh"), st.sampled_from(("gru", "torch_rnn")).flatmap(rnn_params)),
        Case("kpflow:thm-2", "rnn", rnn_params("linear"),
             rnn_params("linear", A=lambda H: np.zeros((H, H)).tolist())),
    ]


CASES: dict[str, Case] = {c.id: c for c in _gaussian_cases() + _multistability_cases() + _consensus_cases()
                          + _kpflow_cases()}


def for_theorem(theorem_id: str, satisfied: bool = True) -> st.SearchStrategy[JSONObject]:
    """Parameter files (JSON objects) that satisfy (``True``) or violate (``False``) an entry's hypotheses.

    Parameters
    ----------
    theorem_id : str
        A catalogue id, e.g. ``"gaussian:thm-4.8.1"``.
    satisfied : bool
        Which side.

    Raises
    ------
    KeyError
        Unknown id.
    ValueError
        The side cannot exist; the message says why (also :attr:`Case.reason`).
    """
    case = CASES[theorem_id]
    strategy = case.satisfied if satisfied else case.violated
    if strategy is None:
        raise ValueError(f"{theorem_id}: no {'satisfying' if satisfied else 'violating'} parameters: {case.reason}")
    return strategy


__all__ = ["CASES", "Case", "for_theorem", "gaussian_params", "rnn_params"]
