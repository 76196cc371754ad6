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

__all__ = ["CLAIMS", "claim"]


def _margin(M: str, margin: Any) -> str:
    return M if Fraction(str(margin or "0")) == 0 else f"{M} - {margin} I"


def _inertia(d: dict[str, Any]) -> list[int]:
    return [int(x) for x in d["inertia"]]


def _detectability(d: dict[str, Any], w: dict[str, str]) -> str:
    p, n, z = _inertia(d)
    return (f"(H, {w['A']}) with H^T H = {w['Q']} is {'' if d['detectable'] else 'not '}detectable: the unobservable "
            f"subspace has dimension {int(d['dimension'])}, {w['A']} on it has inertia ({p}, {n}, {z})")


def _predicate(d: dict[str, Any], w: dict[str, str]) -> str:
    from .predicates import predicate_claim

    return predicate_claim(d, w)


#: kind -> claim(data, what)
CLAIMS: dict[str, Callable[[dict[str, Any], dict[str, str]], str]] = {
    "psd": lambda d, w: f"{w['M']} is positive semidefinite",
    "pd": lambda d, w: f"{_margin(w['M'], d.get('margin'))} is positive definite",
    "not_psd": lambda d, w: f"{w['M']} is not positive semidefinite: v^T ({w['M']}) v < 0",
    "not_pd": lambda d, w: f"{w['M']} is not positive definite: v^T ({w['M']}) v <= 0 for some v != 0",
    "not_symmetric": lambda d, w: f"{w['M']} is not symmetric: entries ({int(d['i'])}, {int(d['j'])}) and "
                                  f"({int(d['j'])}, {int(d['i'])}) differ",
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
}


def claim(kind: str, data: dict[str, Any], what: dict[str, str] | None = None) -> str | None:
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
