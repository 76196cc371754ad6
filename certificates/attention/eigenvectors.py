r"""The top eigenpair of a rational symmetric matrix, certified without computing it
(multistability Assumption 1; consensus paper, Thm 6.1).

**Simple top eigenvalue** (kind ``simple_top_eigenvalue``, data ``V``, ``t``): :math:`V=V^\top` and
:math:`\operatorname{In}(V-tI)=(1,d-1,0)`, so :math:`\lambda_1>t>\lambda_2` (Sylvester): :math:`\lambda_1`
is simple. The inertia is decided by :func:`flowcert.certificates.second_opinion.symmetric_inertia`.

**Side of the tokens** (kind ``eigenvector_side``, data ``U``, ``Y``, ``u``, ``c``, ``side``). Let
:math:`v` be a unit top eigenvector of the symmetric :math:`U` and :math:`\operatorname{In}(U-cI)=(1,d-1,0)`
(:math:`\lambda_1>c>\lambda_2`). For a rational :math:`u` with Rayleigh quotient :math:`\mu>c` and residual
:math:`\rho^2=\|Uu-\mu u\|^2/\|u\|^2`, Davis–Kahan gives :math:`\sin^2\theta\le s^2=\rho^2/(\mu-c)^2`
(:math:`\theta` the angle between :math:`u` and :math:`\pm v`), and with :math:`v` oriented towards
:math:`u`, :math:`\|v-\hat u\|^2\le2\sin^2\theta`. Hence a row :math:`y` with

.. math:: \frac{(u^\top y)^2}{u^\top u} > 2s^2\,\|y\|^2

has :math:`\operatorname{sign}(v^\top y)=\operatorname{sign}(u^\top y)`. ``side = "one"``: every row of
:math:`Y` passes and all signs agree, so the rows lie strictly on one side of :math:`v^\perp`;
``side = "both"``: two passing rows have opposite signs. Every quantity is an exact rational.

Each checker re-derives its claim from the data alone; none calls the code that produced it.
"""

from __future__ import annotations

from typing import Any

from .. import core
from ..claims import claim

__all__ = ["simple_top_certificate", "side_certificate"]


def _separates(U: Any, c: Any) -> bool:
    """``U`` symmetric with exactly one eigenvalue above ``c`` and none equal to it."""
    from ..second_opinion import symmetric_inertia

    return core.is_symmetric(U) and symmetric_inertia(core.shift(U, c)) == (1, U.nrows() - 1, 0)


def _check_simple_top(data: dict[str, Any]) -> bool:
    return _separates(core.qmat(data["V"]), core.to_fmpq(data["t"]))


def simple_top_certificate(V: Any, t: Any) -> core.Certificate:
    """A ``simple_top_eigenvalue`` certificate (re-check it: it is accepted only if ``t`` separates)."""
    data = {"V": core.encode(V), "t": str(core.to_fmpq(t))}
    return core.Certificate("simple_top_eigenvalue", claim("simple_top_eigenvalue", data) or "", data, "second-opinion inertia")


def _passing_signs(U: Any, Y: Any, u: Any, c: Any) -> list[int] | None:
    """Per row of ``Y``: the sign of :math:`v^\\top y` when the Davis–Kahan test decides it, else 0;
    None if ``c`` does not separate :math:`\\lambda_1` or :math:`\\mu\\le c`."""
    if not _separates(U, c):
        return None
    uu = (u.transpose() * u)[0, 0]
    if uu == 0:
        return None
    Uu = U * u
    mu = (u.transpose() * Uu)[0, 0] / uu
    if not mu > c:
        return None
    r = Uu - u * mu
    s2 = (r.transpose() * r)[0, 0] / uu / (mu - c) ** 2
    out = []
    for i in range(Y.nrows()):
        row = [Y[i, k] for k in range(Y.ncols())]
        a = sum((u[k, 0] * row[k] for k in range(len(row))), 0)
        yy = sum((x * x for x in row), 0)
        out.append((1 if a > 0 else -1) if a * a / uu > 2 * s2 * yy else 0)
    return out


def _check_side(data: dict[str, Any]) -> bool:
    U, Y = core.qmat(data["U"]), core.qmat(data["Y"])
    u = core.qmat([[x] for x in data["u"]])
    if U.nrows() != U.ncols() or Y.ncols() != U.nrows() or u.nrows() != U.nrows() or Y.nrows() == 0:
        return False
    signs = _passing_signs(U, Y, u, core.to_fmpq(data["c"]))
    if signs is None:
        return False
    if data["side"] == "one":
        return 0 not in signs and len(set(signs)) == 1
    if data["side"] == "both":
        return 1 in signs and -1 in signs
    return False


def side_certificate(U: Any, Y: Any, u: Any, c: Any) -> core.Certificate | None:
    """An ``eigenvector_side`` certificate for the rows of ``Y`` and the top eigenvector of ``U`` from the
    approximate eigenvector ``u`` and the separator ``c``; None when the test decides neither side."""
    Uq, Yq = core.qmat(U), core.qmat(Y)
    uq = core.qmat([[x] for x in u])
    signs = _passing_signs(Uq, Yq, uq, core.to_fmpq(c))
    if signs is None:
        return None
    side = "one" if 0 not in signs and len(set(signs)) == 1 else "both" if 1 in signs and -1 in signs else None
    if side is None:
        return None
    data = {"U": core.encode(Uq), "Y": core.encode(Yq), "u": [str(x) for x in uq.entries()], "c": str(core.to_fmpq(c)),
            "side": side}
    return core.Certificate("eigenvector_side", claim("eigenvector_side", data) or "", data,
                            "exact rationals (Davis-Kahan, second-opinion inertia)")
