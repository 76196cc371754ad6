r"""Exact predicates of parameters, and the two witnesses of a failed definiteness claim.

Kind ``predicate``: ``data = {"predicate": name, "value": bool, **arguments}``; the checker evaluates
the named predicate on the arguments exactly and accepts iff it equals ``value``. So the
certificate proves the predicate *or its negation*, whichever ``value`` says. Predicates:

* ``scalar_identity``: :math:`M=\eta I` for some rational :math:`\eta` (``M``);
* ``scalar_identity_sign``: :math:`M=\eta I` with :math:`\operatorname{sign}\eta=s` (``M``, ``sign``);
* ``zero``: :math:`M=0` (``M``);
* ``equals``: ``x == literal`` (JSON equality: strings, booleans, integers);
* ``even``: the integer ``x`` is even;
* ``numeric``: every entry of every argument is a number (no expression in :math:`t`), so the
  parameters are constant;
* ``symmetric``: :math:`M=M^\top` (``M``);
* ``unit_sphere``: ``x`` is null or :math:`I` (the tokens' manifold :math:`\{y^\top xy=1\}` is the sphere);
* ``ellipsoid_is_P``: :math:`W=P`, or :math:`W` null and :math:`P=I` (``W``, ``P``);
* ``no_antipode_of_first``: no row :math:`y_j` (:math:`j\ge2`) of ``Y`` equals :math:`-y_1`;
* on a list of attention ``heads`` (objects with ``V`` and ``Q``, ``K`` or ``P``, as in parameter
  files): ``single_head`` (exactly one), ``constant_scores`` (every ``Q``, ``K``, ``P`` entry a number),
  ``constant_values`` (every ``V`` entry a number), ``identity_values`` (every ``V`` is :math:`I`),
  ``attention_model_1`` (one constant head, ``causal`` false, ``W`` null);
* ``oja_model``: ``V`` constant and ``W`` null (the Oja variants' model);
* ``one_of``: ``x`` equals one of the list ``literal`` (JSON equality; a cell kind among those with a property);
* ``nonzero_entries``: no entry of the matrix ``M`` (a list of rows, possibly empty) is 0;
* ``invertible_all``: every matrix of the list ``jacobians`` is square and nonsingular,
  :math:`\det A_t\ne0` in exact rationals (the state Jacobians of an ``rnn`` trajectory).

Kind ``not_psd``: a rational :math:`v` with :math:`v^\top Mv<0`, so :math:`M\not\succeq0`.
Kind ``not_pd``: a rational :math:`v\ne0` with :math:`v^\top Mv\le0`, so :math:`M\not\succ0`.
Kind ``not_symmetric``: indices :math:`i,j` with :math:`M_{ij}\ne M_{ji}` (so :math:`M` is neither
:math:`\succeq0` nor :math:`\succ0` in the symmetric sense the papers use).
Each checker re-evaluates its witness exactly; none calls the code that found it.
"""

from __future__ import annotations

import re

from typing import Any, Callable

from . import core, forms
from .diagonal import Diagonal, diagonal_form, is_diagonal_form, quadratic_form
from .lowrank import LowRank, is_factored
from .records import Checker, JSONObject

__all__ = ["PREDICATES", "predicate_certificate", "definiteness_witness"]


def _scalar(M: Any) -> Any:
    """eta when the square M equals eta I exactly, else None."""
    Q = core.qmat(M)
    n = Q.nrows()
    if n == 0 or Q.ncols() != n:
        return None
    eta = Q[0, 0]
    ok = forms.is_diagonal(Q) and all(Q[i, i] == eta for i in range(n))
    return eta if ok else None


_RATIO_ENTRIES = re.compile(r"-?[0-9]+(?:/[0-9]+)?(?:\x00-?[0-9]+(?:/[0-9]+)?)*")


def _ratio_rows(x: list[Any]) -> bool:
    """Whether ``x`` is a matrix of ``"n"``/``"p/q"`` texts (ASCII digits), checked in one match."""
    if forms.ratio_rows_text(x) is None:
        return False
    return _RATIO_ENTRIES.fullmatch("\x00".join(["\x00".join(r) for r in x])) is not None


def _numbers(x: Any) -> bool:
    """Numbers only, no expression in t: a number, an exact rational ``"p/q"`` (as a subject is filled
    in, never an expression) or a (nested) list of them."""
    if isinstance(x, list):
        if forms.float_rows(x) is not None or _ratio_rows(x):  # a matrix in one step
            return True
        return all(_numbers(y) for y in x)
    if isinstance(x, str):
        num, _, den = x.partition("/")
        return num.lstrip("-").isdigit() and (not den or den.isdigit())
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _numeric(data: dict[str, Any]) -> bool:
    """Every argument (every field but ``predicate`` and ``value``) holds numbers only (a factored matrix:
    its two factors, and its scale is a rational by its form)."""
    def numbers(v: Any) -> bool:
        form = Diagonal if is_diagonal_form(v) else LowRank if is_factored(v) else None
        if form is None:
            return _numbers(v)
        try:
            form.from_json(v)
        except ValueError:
            return False
        return True

    return all(numbers(v) for k, v in data.items() if k not in ("predicate", "value"))


def _integer(x: Any) -> int:
    """An exact integer given as a number or as ``"p"`` (a filled-in subject); anything else raises."""
    if isinstance(x, bool):
        raise TypeError("a boolean is not an integer")
    q = core.to_fmpq(x)
    if q.q != 1:
        raise ValueError(f"{x!r} is not an integer")
    return int(q.p)


def _matrix(x: Any) -> Any:
    """The exact matrix of numeric data (numbers or ``"p/q"`` strings; anything else raises, so that
    the certificate is refused rather than read as a negation), or None when it is not square."""
    Q = core.qmat(x)
    return Q if Q.nrows() == Q.ncols() and Q.nrows() > 0 else None


def _is_identity(x: Any) -> bool:
    Q = _matrix(x)
    return Q is not None and all(Q[i, j] == (1 if i == j else 0) for i in range(Q.nrows()) for j in range(Q.nrows()))


def _heads(x: Any) -> list[dict[str, Any]]:
    if not isinstance(x, list) or not x or not all(isinstance(h, dict) and "V" in h for h in x):
        raise ValueError("heads must be a non-empty list of head objects")
    return x


def _constant_scores(heads: Any) -> bool:
    return all(_numbers(h[k]) for h in _heads(heads) for k in ("Q", "K", "P") if k in h)


def _constant_values(heads: Any) -> bool:
    return all(_numbers(h["V"]) for h in _heads(heads))


def _antipode_free(Y: Any) -> bool:
    Q = core.qmat(Y)
    if Q.nrows() < 1:
        raise ValueError("no tokens")
    first = [-Q[0, k] for k in range(Q.ncols())]
    return all([Q[j, k] for k in range(Q.ncols())] != first for j in range(1, Q.nrows()))


def _nonzero_entries(M: Any) -> bool:
    """No entry of the list of rows ``M`` is 0 (exact; an empty list has none)."""
    if not isinstance(M, list) or not all(isinstance(r, list) for r in M):
        raise ValueError("expected a list of rows")
    return all(core.to_fmpq(v) != 0 for r in M for v in r)


def _invertible_all(mats: Any) -> bool:
    """Every matrix of the non-empty list ``mats`` is square with an exact nonzero determinant."""
    if not isinstance(mats, list) or not mats:
        raise ValueError("expected a non-empty list of matrices")
    for rows in mats:
        Q = core.qmat(rows)
        if Q.nrows() != Q.ncols() or Q.nrows() == 0 or Q.det() == 0:
            return False
    return True


def _ellipsoid_is_P(d: dict[str, Any]) -> bool:
    P = _matrix(d["P"])
    if P is None:
        return False
    if d["W"] is None:
        return _is_identity(P)
    W = _matrix(d["W"])
    return W is not None and W.nrows() == P.nrows() and W == P


#: name -> (function of the data giving the predicate's truth, text of the claim given its subject names)
PREDICATES: dict[str, tuple[Checker, Callable[[JSONObject, dict[str, str]], str]]] = {
    "scalar_identity": (lambda d: _scalar(d["M"]) is not None,
                        lambda d, w: f"{w['M']} is a multiple of the identity"),
    "scalar_identity_sign": (lambda d: (e := _scalar(d["M"])) is not None and (e > 0 if int(d["sign"]) > 0 else e < 0),
                             lambda d, w: f"{w['M']} = eta I with eta {'>' if int(d['sign']) > 0 else '<'} 0"),
    "zero": (lambda d: not any(D.entries) if (D := diagonal_form(d["M"])) is not None else not any(core.qmat(d["M"]).entries()),
             lambda d, w: f"{w['M']} = 0"),
    "equals": (lambda d: d["x"] == d["literal"] and type(d["x"]) is type(d["literal"]),
               lambda d, w: f"{w['x']} = {d['literal']!r}"),
    "even": (lambda d: _integer(d["x"]) % 2 == 0,
             lambda d, w: f"{w['x']} is even"),
    "numeric": (_numeric,
                lambda d, w: ", ".join(w[k] for k in d if k not in ("predicate", "value"))
                + " are constant (numbers, no expression in t)"),
    "symmetric": (lambda d: (M := _matrix(d["M"])) is not None and M == M.transpose(),
                  lambda d, w: f"{w['M']} is symmetric"),
    "unit_sphere": (lambda d: d["x"] is None or (_numbers(d["x"]) and _is_identity(d["x"])),
                    lambda d, w: f"{w['x']} is null or the identity: the tokens lie on the unit sphere"),
    "ellipsoid_is_P": (_ellipsoid_is_P,
                       lambda d, w: f"the tokens' ellipsoid matrix {w['W']} (null: I) equals {w['P']}"),
    "no_antipode_of_first": (lambda d: _antipode_free(d["Y"]),
                             lambda d, w: f"no row y_j (j >= 2) of {w['Y']} equals -y_1"),
    "single_head": (lambda d: len(_heads(d["heads"])) == 1,
                    lambda d, w: f"{w['heads']} has exactly one head"),
    "constant_scores": (lambda d: _constant_scores(d["heads"]),
                        lambda d, w: f"every score matrix (Q, K or P) of {w['heads']} is constant (numbers, no t)"),
    "constant_values": (lambda d: _constant_values(d["heads"]),
                        lambda d, w: f"every value matrix V of {w['heads']} is constant (numbers, no t)"),
    "identity_values": (lambda d: _constant_values(d["heads"]) and all(_is_identity(h["V"]) for h in _heads(d["heads"])),
                        lambda d, w: f"every value matrix V of {w['heads']} is the identity"),
    "attention_model_1": (lambda d: len(_heads(d["heads"])) == 1 and _constant_scores(d["heads"])
                          and _constant_values(d["heads"]) and d["causal"] is False and d["W"] is None,
                          lambda d, w: f"{w['heads']} is one constant head, {w['causal']} is false and {w['W']} is "
                                       "null: model (1), full attention on the unit sphere"),
    "oja_model": (lambda d: _numbers(d["V"]) and d["W"] is None,
                  lambda d, w: f"{w['V']} is constant and {w['W']} is null: the Oja model on the unit sphere"),
    "one_of": (lambda d: isinstance(d["literal"], list) and any(d["x"] == v and type(d["x"]) is type(v)
                                                                  for v in d["literal"]),
               lambda d, w: f"{w['x']} is one of {', '.join(repr(v) for v in d['literal'])}"),
    "nonzero_entries": (lambda d: _nonzero_entries(d["M"]),
                        lambda d, w: f"no entry of {w['M']} is 0"),
    "invertible_all": (lambda d: _invertible_all(d["jacobians"]),
                       lambda d, w: f"every matrix A_t of {w['jacobians']} is invertible (exact determinant)"),
}


def predicate_claim(data: JSONObject, what: dict[str, str]) -> str:
    """The claim a ``predicate`` certificate proves (its negation when ``value`` is false)."""
    _, text = PREDICATES[data["predicate"]]
    body = text(data, what)
    return body if data["value"] is True else f"not ({body})"


def _check_predicate(data: dict[str, Any]) -> bool:
    entry = PREDICATES.get(data.get("predicate"))
    if entry is None or not isinstance(data.get("value"), bool):
        return False
    return bool(entry[0](data)) is data["value"]


def predicate_value(predicate: str, **arguments: Any) -> bool:
    """The value of the exact predicate ``predicate`` on ``arguments`` (what its certificate will say)."""
    return bool(PREDICATES[predicate][0]({"predicate": predicate, **arguments}))


def predicate_certificate(predicate: str, value: bool, subject: dict[str, str] | None = None,
                          **arguments: Any) -> core.Certificate:
    """A ``predicate`` certificate (its claim from :func:`predicate_claim`; ``subject``: field -> expression)."""
    data = {"predicate": predicate, "value": bool(value), **arguments}
    what = {k: (subject or {}).get(k, k) for k in arguments}
    return core.Certificate("predicate", predicate_claim(data, what), data, checker="exact-predicate",
                            subject=subject)


def _quad(M: Any, v: list[str]) -> Any:
    if is_diagonal_form(M):
        return quadratic_form(M, v)
    Q = core.qmat(M)
    x = core.qmat([[s] for s in v])
    if Q.nrows() != Q.ncols() or x.nrows() != Q.ncols() or not any(x.entries()):
        return None
    return (x.transpose() * Q * x)[0, 0]


def _check_not_psd(data: dict[str, Any]) -> bool:
    q = _quad(data["M"], data["v"])
    return q is not None and q < 0


def _check_not_pd(data: dict[str, Any]) -> bool:
    q = _quad(data["M"], data["v"])
    return q is not None and q <= 0


def _check_not_symmetric(data: dict[str, Any]) -> bool:
    Q = core.qmat(data["M"])
    i, j = int(data["i"]), int(data["j"])
    return Q.nrows() == Q.ncols() and 0 <= i < Q.nrows() and 0 <= j < Q.nrows() and Q[i, j] != Q[j, i]


def _asymmetric_pair(Q: Any) -> tuple[int, int]:
    """The first :math:`(i, j)` in row order with :math:`Q_{ij}\ne Q_{ji}` (``Q`` is not symmetric)."""
    n = Q.nrows()
    return next((i, j) for i in range(n) for j in range(n) if Q[i, j] != Q[j, i])


def _asymmetric_float_pair(F: Any) -> tuple[int, int]:
    """:func:`_asymmetric_pair` of float data, found by numpy (float equality is exact equality)."""
    import numpy as np

    i, j = np.argwhere(F != F.T)[0]
    return int(i), int(j)


def definiteness_witness(M: Any, strict: bool, witness: Any = None) -> core.Certificate | None:
    r"""A certificate that :math:`M\not\succ0` (``strict``) or :math:`M\not\succeq0`: an asymmetric pair,
    or a rational ``witness`` :math:`v` (or a float eigenvector, rounded) with :math:`v^\top Mv<0`
    (:math:`\le0` when ``strict``); None when no witness is found."""
    import numpy as np

    Q = core.qmat(M)
    src = core.float_source(M)  # the floats themselves, when M is float data (exact forms memoised)
    given = Q if src is None else src
    n = Q.nrows()
    if n != Q.ncols() or n == 0:
        return None
    if Q != Q.transpose():
        i, j = _asymmetric_pair(Q) if src is None else _asymmetric_float_pair(src)
        return core.Certificate("not_symmetric", "", {"M": core.encode(given), "i": i, "j": j}, checker="exact-entries")
    candidates = []
    if witness is not None:
        candidates.append([str(x) for x in witness])
    F = core.rounded_floats(Q) if src is None else src
    if F is not None:
        w, U = np.linalg.eigh(F)
        u = U[:, 0] / max(float(np.abs(U[:, 0]).max()), 1e-300)
        candidates.append([str(int(x)) for x in np.round(u * 2**30)])
    for v in candidates:
        data = {"M": core.encode(given), "v": v}
        if strict and _check_not_pd(data):
            return core.Certificate("not_pd", "", data, checker="exact-quadratic-form")
        if not strict and _check_not_psd(data):
            return core.Certificate("not_psd", "", data, checker="exact-quadratic-form")
    return None
