r"""The claim each certificate kind proves, as text derived from its data and the names of its subject.

A certificate's ``claim`` is never evidence: ``flowcert recheck`` re-derives it with :func:`claim` from
the kind, the data and the subject, and refuses a certificate whose text differs (a valid ``pd``
certificate of :math:`I` cannot say "the identity is NOT positive definite"). ``what`` maps each data
field to the text of its subject (the subject expression, or the field's own name for a bare
certificate). A kind without an entry here has no derivable claim: its certificates count as unbound.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

from .records import JSONObject

__all__ = ["CLAIMS", "claim"]


def _margin(M: str, margin: Any) -> str:
    return M if Fraction(str(margin or "0")) == 0 else f"{M} - {margin} I"


def _inertia(d: JSONObject) -> list[int]:
    return [int(x) for x in d["inertia"]]


def _detectability(d: JSONObject, w: dict[str, str]) -> str:
    p, n, z = _inertia(d)
    return (f"(H, {w['A']}) with H^T H = {w['Q']} is {'' if d['detectable'] else 'not '}detectable: the unobservable "
            f"subspace has dimension {int(d['dimension'])}, {w['A']} on it has inertia ({p}, {n}, {z})")


def _predicate(d: JSONObject, w: dict[str, str]) -> str:
    from .predicates import predicate_claim

    return predicate_claim(d, w)


def _verdict(v: str) -> str:
    return {"stable": "asymptotically stable", "unstable": "unstable (a tangent eigenvalue with Re > 0)"}[v]


def _bipartite(d: JSONObject, w: dict[str, str]) -> str:
    what = {"stable": "the tangent linearisation is Hurwitz (Lyapunov matrix diag(Z) (x) I)",
            "unstable": "the tangent linearisation has a real eigenvalue > 0",
            "not_asymptotically_stable": "lambda_k is a repeated eigenvalue: the class is a continuum of equilibria, "
                                         "none asymptotically stable"}[d["claim"]]
    return (f"at x_i = s_i v_{int(d['k']) + 1} with ({int(d['n1'])}, {int(d['n2'])}) signs ({w['variant']} = "
            f"{d['variant']}; v_k the eigenvectors of {w['V']}, scores x^T ({w['M']}) y), {what}")


def _sup_norm(d: JSONObject, w: dict[str, str]) -> str:
    what = "dP/dt" if d.get("derivative") else "P"
    if "heads" not in d:
        return f"sup_(t>=0) |{what}(t)|_F <= {d['bound']}"
    return (f"sup_(t>=0) |{what}_eta(t)|_F <= {d['bound']} for every score matrix P_eta = beta Q_eta^T K_eta "
            f"in {w['heads']}")


#: kind -> claim(data, what)
CLAIMS: dict[str, Callable[[JSONObject, dict[str, str]], str]] = {
    "psd": lambda d, w: f"{w['M']} is positive semidefinite",
    "pd": lambda d, w: f"{_margin(w['M'], d.get('margin'))} is positive definite",
    "not_psd": lambda d, w: f"{w['M']} is not positive semidefinite: v^T ({w['M']}) v < 0",
    "not_pd": lambda d, w: f"{w['M']} is not positive definite: v^T ({w['M']}) v <= 0 for some v != 0",
    "not_symmetric": lambda d, w: f"{w['M']} is not symmetric: entries ({int(d['i'])}, {int(d['j'])}) and "
                                  f"({int(d['j'])}, {int(d['i'])}) differ",
    "low_rank_asymmetry": lambda d, w: f"{w['N']} is not symmetric: entry ({int(d['i'])},{int(d['j'])}) differs from "
                                       f"({int(d['j'])},{int(d['i'])})",
    "inertia": lambda d, w: "{} has inertia ({}, {}, {})".format(w["M"], *_inertia(d)),
    "lyapunov": lambda d, w: f"every eigenvalue of {w['J']} has negative real part",
    "unstable": lambda d, w: f"{w['J']} has an eigenvalue with positive real part",
    "spectrum_inertia": lambda d, w: "{} has {} eigenvalues with Re > 0, {} with Re < 0 and {} on the imaginary "
                                     "axis".format(w["J"], *_inertia(d)),
    "zero_eigenvalue": lambda d, w: f"0 is an eigenvalue of {w['J']}",
    "unstable_count": lambda d, w: f"{w['J']} has exactly {int(d['count'])} eigenvalues with positive real part",
    "detectability": _detectability,
    "predicate": _predicate,
    "symbolic_identity": lambda d, w: f"the identity {d['identity']} holds for every parameter value",
    # equilibria of the gaussian covariance equation (18) (certificates/gaussian.py)
    "pd_equilibrium": lambda d, w: "a positive definite equilibrium of eq. (18) lies within spectral distance rho of Sigma",
    "d2_equilibria": lambda d, w: f"eq. (18) has {int(d['count'])} real equilibria, {int(d['pd_count'])} of them PD",
    "trace_monotone": lambda d, w: (f"tr Sigma strictly {'increases' if int(d['sign_V']) * int(d['sign_B']) > 0 else 'decreases'}"
                                    " along eq. (7) at every Sigma > 0, so eq. (18) has no positive definite solution"),
    "eta_pd_equilibrium": lambda d, w: (
        f"eq. (18) with V = eta I {'has' if d['exists'] else 'has no'} positive definite solution "
        f"({'every eigenvalue of A has Re > 0' if int(d['sign_Q']) > 0 else 'A is Hurwitz'} "
        f"{'holds' if d['exists'] else 'fails'})"),
    "stable_equilibrium": lambda d, w: ("an equilibrium of eq. (7) lies in the Kantorovich ball around Sigma and DF "
                                        "there is Hurwitz on Sym(d)"),
    "unstable_point": lambda d, w: "J has an eigenvalue with positive real part",
    "lemma23_condition": lambda d, w: (f"8 ||{w['B']}||_2 lambda_max({w['Sigma0']}) "
                                       f"{'<' if d['value'] else '>'} 1"),
    "lemma44_design": lambda d, w: (f"{w['Sigma']} > 0 {'solves' if d['residual_is_zero'] else 'does not solve'} eq. (18) "
                                    f"with A = {w['A']}, B = {w['B']}, V = {w['V']}"
                                    + (": spec(A + V Sigma B) is purely imaginary" if d["residual_is_zero"] else "")),
    "thm48_trace_condition": lambda d, w: (f"beta tr {w['Sigma0']} + alpha {'>' if d['value'] else '<='} 0 with "
                                           f"alpha = lambda_min({w['A']} + {w['A']}^T), beta = 2 lambda_min({w['V']}) "
                                           f"lambda_min({w['B']}) / d"),
    # attention system (certificates/attention/)
    "symmetric_eigen_enclosure": lambda d, w: (f"{w['V']} is symmetric with simple eigenvalues lambda_k in [lo_k, hi_k], "
                                               "pairwise disjoint and descending"),
    "attention_bipartite_spectrum": _bipartite,
    "attention_krawczyk_equilibrium": lambda d, w: (
        f"an equilibrium of (1) with value {w['V']} and scores x^T ({w['M']}) y lies within r = {d['r']} (chart "
        f"coordinates) of X and is {_verdict(d['claim'])}"),
    "open_hemisphere": lambda d, w: f"v^T y > 0 for every row y of {w['Y']}: the tokens lie in an open hemisphere",
    "no_open_hemisphere": lambda d, w: (f"0 is a convex combination of the rows of {w['Y']} (Gordan): no open "
                                        "hemisphere contains them"),
    "simple_positive_top_eigenvalue": lambda d, w: (f"{w['U']} is symmetric with exactly one eigenvalue above c = "
                                                    f"{d['c']} >= 0: lambda_1 is simple and positive"),
    "repeated_top_eigenvalue": lambda d, w: f"the top eigenvalue {d['lambda']} of {w['U']} has multiplicity >= 2",
    "nonpositive_top_eigenvalue": lambda d, w: f"{w['U']} is negative semidefinite: lambda_1 <= 0",
    "simple_top_eigenvalue": lambda d, w: (f"{w['V']} is symmetric with exactly one eigenvalue above t = {d['t']} and "
                                           "none equal to it: lambda_1 is simple"),
    "eigenvector_side": lambda d, w: (
        f"the rows of {w['Y']} lie strictly on {'one side' if d['side'] == 'one' else 'both sides'} of v^perp, v the "
        f"top eigenvector of {w['U']} (lambda_1 > {d['c']} > lambda_2; Davis-Kahan from u)"),
    "sup_norm_bound": _sup_norm,
    # rnn system (certificates/rnn.py)
    "contraction": lambda d, w: (f"A_t^T X A_t <= rho^2 X with X >= I for all {len(d['jacobians'])} matrices A_t of "
                                 f"{w['jacobians']}, rho^2 = {d['rho2']}, lambda_max(X) <= {d['kappa_upper']}"),
    "contraction_float": lambda d, w: (
        f"A_t^T X A_t <= rho^2 X with X >= I for all {int(d['jacobians']['shape'][0])} float64 matrices A_t of "
        f"{w['jacobians']}, rho^2 = {d['rho2']}, lambda_max(X) <= {d['kappa_upper']} (rigorous binary64 error bounds)"),
    "invertible_float": lambda d, w: (
        f"every one of the {int(d['jacobians']['shape'][0])} float64 matrices A_t of {w['jacobians']} is nonsingular "
        "(verified inverse, rigorous binary64 error bounds)"),
    "bounded_real": lambda d, w: (f"||P_T||_2 <= gamma for every horizon T, gamma^2 = {d['gamma2']}, for the "
                                  f"linear recurrence with state matrix {w['A']}"),
    "tetrahedron_spectrum_sign": lambda d, w: (
        f"the regular tetrahedron with U = I and P = -beta I, beta = {w['beta']} = {d['beta']}, is "
        + ("stable modulo rotations: lambda_E, lambda_T < 0" if d["stable"] else "unstable: max(lambda_E, lambda_T) > 0")),
}


def claim(kind: str, data: JSONObject, what: dict[str, str] | None = None) -> str | None:
    """The claim of a ``kind`` certificate with ``data`` (None: the kind has no derivable claim).

    Raises
    ------
    KeyError, ValueError, TypeError
        Malformed data (a checker then refuses the certificate anyway).
    """
    fn = CLAIMS.get(kind)
    if fn is None:
        return None

    class _Names(dict):
        def __missing__(self, key: str) -> str:
            return key

    return fn(data, _Names(what or {}))
