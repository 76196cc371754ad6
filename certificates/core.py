r"""Certificates: serialisable evidence for a claim, re-checked without trusting any solver.

Claims and the exact checks that decide them (all data rational, pivots exact):

* ``psd``: :math:`M\succeq0`; ``pd``: :math:`M-\epsilon I\succ0`; ``inertia``: the exact inertia
  (hence rank) of a symmetric :math:`M` (Sylvester's law, read off :math:`LDL^\top`).
* ``lyapunov``: :math:`P-\epsilon I\succeq0` and :math:`-(J^\top P+PJ)-\epsilon I\succeq0` with
  :math:`\epsilon>0`, hence every eigenvalue of :math:`J` has :math:`\operatorname{Re}\lambda<0`.
* ``unstable``: :math:`-(J^\top P+PJ)\succ0` and :math:`v^\top Pv<0`; by the inertia theorem of
  Ostrowski and Schneider, :math:`J` then has an eigenvalue with :math:`\operatorname{Re}\lambda>0`.
* ``kantorovich``: a zero of a quadratic map exists within radius :math:`r` of a rational point
  (see :mod:`flowcert.certificates.gaussian`).

A :class:`HypothesisResult` carries the verdict ``holds`` / ``fails`` / ``unknown``; ``holds`` and
``fails`` are only ever produced after :func:`recheck` has accepted the certificate.

Exact matrix arithmetic (products, transposes, shifts) is done in python-flint
(``fmpq_mat``); definiteness is decided by :func:`flowcert.certificates.exact.is_pd_exact` /
``is_psd_exact`` (rigorously rounded float Cholesky first, a float eigenvector re-checked exactly
as a witness next, exact :math:`LDL^\top` last) and inertia by :func:`exact.inertia`
(a float eigenbasis :math:`U` taken exactly, :math:`U^\top MU` formed exactly, Gershgorin discs
apart from 0, Sylvester's law; exact :math:`LDL^\top` otherwise). Within one process each
certificate is re-checked once: :func:`recheck` memoises its answer by (kind, claim, checker,
SHA-256 of the data), and :func:`memoised` does the same for hypothesis builders keyed by a digest
of their arguments (:func:`clear_memo` empties both).

The checker of every kind is named in :data:`flowcert.certificates.kinds.KINDS` and imported on
the first certificate of that kind, so :func:`recheck` decides any saved certificate in a fresh
interpreter, whatever was imported before; :func:`explain` also says why a certificate is refused.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypeVar

import flint
import numpy as np
import sympy as sp

from . import exact, kinds
from .forms import LARGE as _QMAT_MEMO_MIN
from .forms import Encoded, content_memo, is_diagonal
from .forms import coprime_fraction as _coprime_fraction
from .forms import float_image as _float_image
from .forms import float_text as _float_text
from .fingerprint import digest
from .forms import float_texts, remember_image
from .forms import keyed_data as _keyed_data
from .verdicts import Itself, Status, ordered, split

if TYPE_CHECKING:  # annotations only: a re-check loads no more than it needs
    from .records import CertificateJSON, Checker, HypothesisJSON, JSONObject


def rational_matrix(M: Any) -> sp.Matrix:
    """Exact rational ``sympy.Matrix`` of float, int or Fraction data (no rounding); a rational
    ``sympy.Matrix`` is returned as it is."""
    if isinstance(M, sp.MatrixBase):
        if not all(e.is_Rational for e in M):
            raise ValueError("matrix entries must be rational")
        return sp.Matrix(M)
    if isinstance(M, flint.fmpq_mat):
        return sp.Matrix(M.nrows(), M.ncols(), [sp.Rational(int(e.p), int(e.q)) for e in M.entries()])
    rows = exact.to_rational(M)
    return sp.Matrix([[sp.Rational(q.numerator, q.denominator) for q in row] for row in rows])


def to_fmpq(x: Any) -> Any:
    """The exact ``flint.fmpq`` of a rational scalar (int, finite float, ``"p/q"`` text, SymPy or flint rational)."""
    # the common exact cases first, without a Fraction: a d = 384 matrix is 147,456 entries, and a
    # verify document converts dozens of them (Python ints, finite Python floats, "p/q" and "n" strings)
    t = type(x)
    if t is str:
        num, sep, den = x.partition("/")
        if not sep and num.strip().lstrip("+-").isdigit():
            return flint.fmpq(int(num))
    elif t is int:
        return flint.fmpq(x)
    elif t is float and math.isfinite(x):
        return flint.fmpq(*x.as_integer_ratio())
    if isinstance(x, flint.fmpq):
        return x
    if isinstance(x, sp.Rational):
        return flint.fmpq(int(x.p), int(x.q))
    if isinstance(x, str):
        num, sep, den = x.partition("/")
        if sep and num.strip().lstrip("+-").isdigit() and den.strip().isdigit():
            return flint.fmpq(int(num), int(den))  # ZeroDivisionError for "p/0": not a rational
        q = Fraction(x)
        return flint.fmpq(q.numerator, q.denominator)
    q = exact.scalar_to_fraction(x)
    return flint.fmpq(q.numerator, q.denominator)


def qmat(M: Any) -> Any:
    """Exact ``flint.fmpq_mat`` of a rational ``sympy.Matrix``, an encoded matrix (``"p/q"``
    strings), float/int/Fraction data (taken exactly) or an ``fmpq_mat`` (returned as it is)."""
    if isinstance(M, flint.fmpq_mat):
        return M
    if isinstance(M, sp.MatrixBase):
        if not all(e.is_Rational for e in M):
            raise ValueError("matrix entries must be rational")
        return flint.fmpq_mat(M.rows, M.cols, [flint.fmpq(int(e.p), int(e.q)) for e in M])
    if isinstance(M, np.ndarray) and M.dtype != object:
        if M.ndim != 2:
            raise ValueError(f"expected a 2-D matrix, got shape {M.shape}")
        if not np.all(np.isfinite(M)):
            raise ValueError("non-finite entry cannot be converted to a rational")

        def build() -> Any:
            return flint.fmpq_mat(M.shape[0], M.shape[1], [flint.fmpq(*x.as_integer_ratio()) for x in
                                                           M.astype(np.float64).ravel().tolist()])

        if M.size < _QMAT_MEMO_MIN or M.dtype != np.float64:
            return build()
        hit = content_memo(_QMAT_MEMO, _QMAT_MEMO_MAX, M, build)
        out = flint.fmpq_mat(hit)  # a copy; the memo's matrix is never handed out
        remember_image(out, hit, M)  # its floats are M: float_image(out) is one comparison
        return out
    if isinstance(M, (list, tuple)) and M and all(isinstance(r, (list, tuple)) for r in M):
        n = len(M[0])
        if any(len(r) != n for r in M):
            raise ValueError("ragged nested sequence: rows have different lengths")
        if len(M) * n < _QMAT_MEMO_MIN:
            return flint.fmpq_mat(len(M), n, [to_fmpq(x) for r in M for x in r])
        return _qmat_memo(M, n)
    rows = exact.to_rational(M)
    return flint.fmpq_mat(len(rows), len(rows[0]) if rows else 0,
                          [flint.fmpq(q.numerator, q.denominator) for r in rows for q in r])


#: large encoded matrices (a d = 384 head's V, B, Sigma0 in ``"p/q"`` texts) are read once per content:
#: the producer's in-process re-check and every checker of one document parse the same few matrices
_QMAT_MEMO: OrderedDict[bytes, Any] = OrderedDict()
_QMAT_MEMO_MAX = 16


def _qmat_memo(M: Any, n: int) -> Any:
    """``fmpq_mat`` of a large nested list, read once per content (:func:`content_memo`); a copy is
    returned, so no caller shares a matrix."""
    hit = content_memo(_QMAT_MEMO, _QMAT_MEMO_MAX, M,
                       lambda: flint.fmpq_mat(len(M), n, [to_fmpq(x) for r in M for x in r]))
    return flint.fmpq_mat(hit)


def fractions(M: Any) -> list[list[Fraction]]:
    """Rows of a rational matrix (any form :func:`qmat` takes) as :class:`~fractions.Fraction`."""
    Q = qmat(M)
    e = [_coprime_fraction(int(x.p), int(x.q)) for x in Q.entries()]
    c = Q.ncols()
    return [e[i * c:(i + 1) * c] for i in range(Q.nrows())]


def _to_fractions(M: Any) -> list[list[Fraction]]:
    return fractions(M)


def is_symmetric(M: Any) -> bool:
    r"""Exact :math:`M=M^\top`."""
    Q = qmat(M)
    return Q.nrows() == Q.ncols() and Q == Q.transpose()


def shift(M: Any, c: Any) -> Any:
    r""":math:`M-cI` exactly (``fmpq_mat``)."""
    Q = qmat(M)
    c = to_fmpq(c)
    if c == 0:
        return Q
    return Q - flint.fmpq_mat(Q.nrows(), Q.ncols(), [c if i == j else 0 for i in range(Q.nrows()) for j in range(Q.ncols())])


def lyapunov_form(J: Any, P: Any) -> Any:
    r""":math:`-(J^\top P+PJ)` exactly (``fmpq_mat``)."""
    Jq, Pq = qmat(J), qmat(P)
    return -(Jq.transpose() * Pq + Pq * Jq)


#: encoded float matrices by the SHA-256 of their bytes (a head's ``V`` is encoded for a dozen hypotheses)
_ENCODE_MEMO: OrderedDict[bytes, list[list[str]]] = OrderedDict()
_ENCODE_MEMO_MAX = 16


def _encode_floats(M: np.ndarray) -> list[list[str]]:
    if M.size >= _QMAT_MEMO_MIN:
        return float_texts(M)  # the integer work in numpy (2.4x faster on a d = 384 head)
    return [[_float_text(x) for x in row] for row in M.tolist()]  # no fmpq on the way (4x faster)


def encode(M: Any) -> list[list[str]]:
    """Rational matrix as nested lists of ``"p/q"`` strings (exact, JSON-safe; an :class:`Encoded`)."""
    if isinstance(M, np.ndarray) and M.dtype == np.float64 and M.ndim == 2 and np.all(np.isfinite(M)):
        if M.size < _QMAT_MEMO_MIN:
            return Encoded(_encode_floats(M))
        def texts() -> list[list[str]]:
            out = _encode_floats(M)
            # the checkers read these texts back: their exact matrix is this one (memoised by content)
            content_memo(_QMAT_MEMO, _QMAT_MEMO_MAX, out, lambda: qmat(M))
            return out

        hit = content_memo(_ENCODE_MEMO, _ENCODE_MEMO_MAX, M, texts)
        out = Encoded([list(r) for r in hit])  # a copy: no caller shares rows
        out.floats = M.copy()  # the floats these texts are, exactly: what a subject digest hashes
        out.floats.flags.writeable = False
        return out
    if isinstance(M, flint.fmpq_mat):
        F = _float_image(M)  # a matrix of floats taken exactly (a head's V) is encoded from its floats, once
        if F is not None:
            return encode(F)
    Q = qmat(M)
    e = [str(x) for x in Q.entries()]
    c = Q.ncols()
    out = Encoded(e[i * c:(i + 1) * c] for i in range(Q.nrows()))
    if len(e) >= _QMAT_MEMO_MIN:  # the checkers read these texts back: their exact matrix is Q (by content)
        content_memo(_QMAT_MEMO, _QMAT_MEMO_MAX, out, lambda: flint.fmpq_mat(Q))
    return out


def decode(rows: list[list[str]]) -> sp.Matrix:
    """Inverse of :func:`encode` (a ``sympy.Matrix``; :func:`qmat` gives the flint matrix)."""
    return rational_matrix(qmat(rows))


def rounded_floats(Q: Any) -> np.ndarray | None:
    """Correctly rounded float64 of an ``fmpq_mat`` (CPython integer true division); None on overflow."""
    F = _float_image(Q)
    if F is not None:  # the exact floats of float data: nothing to round
        return F
    try:
        F = np.array([int(e.p) / int(e.q) for e in Q.entries()], dtype=np.float64).reshape(Q.nrows(), Q.ncols())
    except OverflowError:
        return None
    return F if np.all(np.isfinite(F)) else None


def _fast_definiteness(Q: Any) -> tuple[bool | None, tuple[Fraction, ...] | None, str]:
    """The two float paths of :func:`exact.decide_definite`, on an ``fmpq_mat`` without Fractions."""
    F = rounded_floats(Q)
    if F is None or not np.array_equal(F, F.T):
        return None, None, ""
    try:
        if exact.is_pd_float_rigorous(F, exact.rounding_bound(F)):
            return True, None, "rigorously rounded float Cholesky (exact rounding bound)"
    except ValueError:
        return None, None, ""
    w, U = np.linalg.eigh(F)
    if w[0] < 0:
        u = U[:, 0] / np.abs(U[:, 0]).max()
        v = [int(x) for x in np.round(u * 2**30)]
        vq = flint.fmpq_mat(len(v), 1, v)
        if any(v) and (vq.transpose() * Q * vq)[0, 0] < 0:
            return False, tuple(Fraction(x) for x in v), "float eigenvector, exact witness v^T M v < 0"
    return None, None, ""


def definiteness(M: Any, *, strict: bool) -> tuple[bool | None, tuple[Fraction, ...] | None, str]:
    r""":math:`M\succ0` (``strict``) or :math:`M\succeq0` (None: undecided at this size), a witness
    when not (when one was found), and the deciding method.

    Above 12 rows the float paths run on the flint matrix directly (no Fractions); then
    :func:`exact.decide_definite` (exact :math:`LDL^\top` or characteristic polynomial).
    """
    Q = qmat(M)
    if Q.nrows() > exact.FAST_PATH_MIN_DIM:
        got = _fast_definiteness(Q)
        if got[0] is not None:
            return got
    if Q.nrows() > exact.LDL_MAX_DIM and Q.nrows() == Q.ncols() and Q == flint.fmpq_mat(Q.nrows(), Q.ncols()):
        # the exact zero matrix, as exact.decide_definite decides it (its rank-0 principal block), without Fractions
        return not strict, None, "exact low-rank principal block, zero Schur complement (Haynsworth)"
    return exact.decide_definite(fractions(Q), strict=strict)


def is_pd_fast(M: Any) -> bool:
    r"""Sufficient test for :math:`M\succ0` by the rigorously rounded float Cholesky only (never a false True)."""
    F = rounded_floats(qmat(M))
    if F is None or not np.array_equal(F, F.T):
        return False
    try:
        return exact.is_pd_float_rigorous(F, exact.rounding_bound(F))
    except ValueError:
        return False


def is_psd(M: Any) -> bool:
    r"""Exact :math:`M\succeq0` for a symmetric rational matrix."""
    return definiteness(M, strict=False)[0] is True


def is_pd(M: Any) -> bool:
    r"""Exact :math:`M\succ0` for a symmetric rational matrix."""
    return definiteness(M, strict=True)[0] is True


# --------------------------------------------------------------------------------------------
# Memoisation within one run
# --------------------------------------------------------------------------------------------

_RECHECKED: dict[str, tuple[bool, str]] = {}
_BUILT: dict[tuple[str, str], Any] = {}
_MEMO_MAX = 4096
T = TypeVar("T")


def clear_memo() -> None:
    """Forget every memoised re-check and hypothesis (for benchmarks and tests)."""
    _RECHECKED.clear()
    _BUILT.clear()


def clear_content_memos() -> None:
    """Forget the exact forms memoised by content (:func:`qmat`, :func:`encode`): a cold start for
    benchmarks. A sweep keeps them (bounded, content-keyed): heads of one model share A and Sigma0."""
    from .forms import clear_images

    _QMAT_MEMO.clear()
    _ENCODE_MEMO.clear()
    clear_images()


def memoised(fn: Callable[..., T]) -> Callable[..., T]:
    r"""Build a hypothesis (or certificate) once per run for equal arguments.

    The key is the function and a digest of every argument (exact bytes of arrays, entries of
    matrices). A cached :class:`HypothesisResult` is returned as a shallow copy, so a caller
    that edits ``detail`` does not edit the cache; the certificate is shared and never mutated.
    Arguments without a digest (other objects) bypass the cache.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            key = (f"{fn.__module__}.{fn.__qualname__}", digest(args, kwargs))
        except TypeError:
            return fn(*args, **kwargs)
        if key not in _BUILT:
            if len(_BUILT) >= _MEMO_MAX:
                _BUILT.clear()
            _BUILT[key] = fn(*args, **kwargs)
        out = _BUILT[key]
        return copy.copy(out) if isinstance(out, HypothesisResult) else out

    return wrapper


_CERTIFICATE_KEYS = ("kind", "claim", "checker", "data", "subject", "digest")


#: Renderer of the notebook views of :class:`Certificate` and :class:`Hypothesis` (``obj -> html``),
#: installed by :mod:`flowcert.display`, which sits above this layer; None: no HTML view.
HTML_VIEW: Callable[[Any], str | None] | None = None


@dataclass
class Certificate(Itself):
    """The evidence behind a ``holds`` or ``fails``: data plus the claim they support; :func:`recheck`
    decides the claim from the data alone, without trusting the solver that produced them.

    Attributes
    ----------
    kind : str
        The certificate kind (``psd``, ``pd``, ``lyapunov`` …; :data:`flowcert.certificates.kinds.KINDS`).
    claim : str
        What it proves, in words.
    data : dict
        Exact data (rationals as strings) the checker reads. A certificate read from a saved document
        lacks its subject fields (the document names them instead; ``flowcert recheck`` fills them in).
    checker : str
        The independent algorithm that re-checks it (``exact-ldl``: exact rational LDLᵀ …).
    subject : dict or None
        What the data are in terms of the problem: data field -> an expression over the document's
        inputs (:mod:`flowcert.certificates.subjects`), for example ``{"M": "params.Sigma0"}``. In JSON
        such a field is the reference alone (:meth:`to_json`), with ``digest``, the SHA-256 of the exact
        values it was made for; ``flowcert recheck`` re-derives the fields from the document and refuses
        a digest that differs. Without a subject a certificate proves its claim only for the data it
        carries.
    digest : str or None
        ``sha256:...`` of the subject fields' exact values (:func:`~flowcert.certificates.subjects.subject_digest`).
    """

    kind: str
    claim: str
    data: JSONObject
    checker: str = "exact-ldl"
    subject: dict[str, str] | None = None
    digest: str | None = None
    #: keys of a saved record the type does not know, written back as they came
    extra: JSONObject = field(default_factory=dict, repr=False, compare=False)
    _order: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    def _repr_html_(self) -> str | None:
        """The notebook view (:func:`flowcert.display.certificate_html`): data summarised, never whole arrays."""
        return None if HTML_VIEW is None else HTML_VIEW(self)

    def to_json(self) -> CertificateJSON:
        """The JSON object. A field named in ``subject`` is written once, as the subject (the document's
        parameter it equals), not copied into ``data``: ``flowcert recheck`` fills it in from the document."""
        if self.subject is None:
            out: CertificateJSON = {"kind": self.kind, "claim": self.claim, "checker": self.checker, "data": self.data}
        else:
            out = {"kind": self.kind, "claim": self.claim, "checker": self.checker,
                   "data": {k: v for k, v in self.data.items() if k not in self.subject},
                   "subject": dict(self.subject)}
            if self.digest is not None:
                out["digest"] = self.digest
        order = self._order if self._order is None else (*self._order, *(k for k in out if k not in self._order))
        return ordered(out, order, self.extra)  # a subject stamped after reading is written too

    @classmethod
    def from_json(cls, obj: CertificateJSON) -> Certificate:
        """From a certificate record of a saved document (its key order and unknown keys kept).

        Parameters
        ----------
        obj : dict
            The record: ``kind``, ``claim`` and ``data`` are required; ``checker``, ``subject``,
            ``digest`` optional.

        Returns
        -------
        Certificate

        Raises
        ------
        KeyError
            A required key is missing.
        """
        extra, order = split(obj, _CERTIFICATE_KEYS if obj.get("subject") is not None else _CERTIFICATE_KEYS[:4])
        return cls(obj["kind"], obj["claim"], obj["data"], obj.get("checker", "exact-ldl"), obj.get("subject"),
                   obj.get("digest"), extra, order)

    def recheck(self) -> bool:
        """Re-decide the claim from the data alone (True: accepted); a certificate read from a saved
        document needs its subject fields filled in first (``flowcert recheck`` does)."""
        return recheck(self)  # the checker reads data (subject fields included), never the JSON form


# The checkers decide definiteness and inertia with :mod:`.second_opinion` (characteristic polynomial,
# congruence, pivot block), never with the LDL^T / Cholesky code that produced the certificates.


def _check_psd(data: JSONObject) -> bool:
    from . import second_opinion
    from .diagonal import diagonal_form

    if (D := diagonal_form(data["M"])) is not None:
        return D.inertia()[1] == 0
    return second_opinion.is_psd(qmat(data["M"]))


def _check_pd(data: JSONObject) -> bool:
    from . import second_opinion
    from .diagonal import diagonal_form

    margin = Fraction(data.get("margin", "0"))
    if (D := diagonal_form(data["M"])) is not None:
        return margin >= 0 and D.inertia(to_fmpq(str(margin)))[0] == D.n
    return margin >= 0 and second_opinion.is_pd(shift(qmat(data["M"]), margin))


def _check_lyapunov(data: JSONObject) -> bool:
    from . import second_opinion

    J, P = qmat(data["J"]), qmat(data["P"])
    e = Fraction(data["margin"])
    return (e > 0 and is_symmetric(P) and second_opinion.is_psd(shift(P, e))
            and second_opinion.is_psd(shift(lyapunov_form(J, P), e)))


def _check_unstable(data: JSONObject) -> bool:
    from . import second_opinion

    J, P = qmat(data["J"]), qmat(data["P"])
    v = qmat([[x] for x in data["v"]])
    return is_symmetric(P) and second_opinion.is_pd(lyapunov_form(J, P)) and (v.transpose() * P * v)[0, 0] < 0


def inertia_certificate(M: Any, what: str) -> Certificate:
    """Exact inertia :math:`(n_+, n_-, n_0)` of a symmetric matrix (rank :math:`n_++n_-`; a
    :class:`~.diagonal.Diagonal`: the signs of its entries, in its own form)."""
    from .diagonal import Diagonal

    if isinstance(M, Diagonal):  # the signs of its entries, in its own form
        p, n, z = M.inertia()
        return Certificate("inertia", f"{what} has inertia ({p}, {n}, {z})", {"M": M.to_json(), "inertia": [p, n, z]})
    Mq = qmat(M)
    if Mq.nrows() > 0 and is_diagonal(Mq):  # the signs of the diagonal
        d = [Mq[i, i] for i in range(Mq.nrows())]
        got: tuple[int, int, int] | None = (sum(x > 0 for x in d), sum(x < 0 for x in d), sum(x == 0 for x in d))
    else:
        got = exact.inertia(fractions(Mq))
    if got is None:
        raise ValueError(f"the inertia of {what} is undecided: near-singular beyond the exact size limit")
    n_pos, n_neg, n_zero = got
    return Certificate("inertia", f"{what} has inertia ({n_pos}, {n_neg}, {n_zero})",
                       {"M": encode(Mq), "inertia": [n_pos, n_neg, n_zero]})


def _check_inertia(data: JSONObject) -> bool:
    from . import second_opinion

    from .diagonal import diagonal_form

    D = diagonal_form(data["M"])
    got = D.inertia() if D is not None else second_opinion.symmetric_inertia(qmat(data["M"]))
    return got is not None and list(got) == [int(x) for x in data["inertia"]]


class _Checkers(MutableMapping[str, "Checker"]):
    """kind -> checker: every kind of :data:`kinds.KINDS`, imported on first use, plus any added by :func:`register`.

    Iteration lists every known kind without importing anything; looking one up imports the
    module of its checker (once). ``CHECKERS[kind] = fn`` overrides a kind (tests, external code).
    """

    def __init__(self, loaded: dict[str, Checker]) -> None:
        self._loaded = dict(loaded)

    def __getitem__(self, kind: str) -> Checker:
        fn = self._loaded.get(kind)
        if fn is None:
            fn = kinds.resolve(kind) if isinstance(kind, str) else None
            if fn is None:
                raise KeyError(kind)
            self._loaded[kind] = fn
        return fn

    def __setitem__(self, kind: str, fn: Checker) -> None:
        self._loaded[kind] = fn

    def __delitem__(self, kind: str) -> None:
        del self._loaded[kind]

    def __contains__(self, kind: object) -> bool:
        return kind in self._loaded or kind in kinds.KINDS

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*kinds.KINDS, *self._loaded]))

    def __len__(self) -> int:
        return len(set(kinds.KINDS) | set(self._loaded))


#: Checker of every certificate kind (lazy: see :mod:`flowcert.certificates.kinds`).
CHECKERS: MutableMapping[str, Checker] = _Checkers({
    "inertia": _check_inertia,
    "psd": _check_psd,
    "pd": _check_pd,
    "lyapunov": _check_lyapunov,
    "unstable": _check_unstable,
})


def register(kind: str, checker: Checker) -> None:
    """Add (or override) the checker of a kind at run time, for code outside flowcert.

    flowcert's own kinds are listed in :data:`flowcert.certificates.kinds.KINDS` and need no
    registration; a kind registered here is known only in the process that registered it.
    """
    CHECKERS[kind] = checker


class InputNotCarried(KeyError):
    """A certificate's data name an input that is neither in them nor to be found (a side file of a large
    computation, such as a Jacobian stack, that was not written beside the document): the certificate cannot be
    checked here, which is neither an acceptance nor a refusal of it."""


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing entry {exc.args[0]!r}" if exc.args else "missing entry"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def explain(obj: Certificate | CertificateJSON, *, missing_raises: bool = False) -> tuple[bool, str]:
    """Re-verify a certificate and say why when it is refused (``missing_raises``: an input its data name that is
    not to be had here raises :class:`InputNotCarried` instead of refusing).

    Returns
    -------
    accepted : bool
        True only if the check of its kind passes on its data (as :func:`recheck`).
    reason : str
        ``""`` when accepted; otherwise why: malformed object, unknown kind, a checker that could
        not be loaded or could not finish on the data, or the check itself failing.
    """
    try:
        cert = obj if isinstance(obj, Certificate) else Certificate.from_json(obj)
    except Exception as exc:  # noqa: BLE001 - not a certificate object
        return False, f"not a certificate object ({_why(exc)})"
    if not isinstance(cert.kind, str):
        return False, "malformed certificate: 'kind' is not a string"
    if not isinstance(cert.data, dict):
        return False, "malformed certificate: 'data' is not an object"
    try:
        key = hashlib.sha256(json.dumps([cert.kind, cert.claim, cert.checker, _keyed_data(cert.data)],
                                        sort_keys=True, allow_nan=False).encode()).hexdigest()
    except (TypeError, ValueError, RecursionError) as exc:
        return False, f"malformed certificate: data are not plain JSON ({_why(exc)})"
    if key in _RECHECKED:
        return _RECHECKED[key]
    if cert.kind not in CHECKERS:
        return False, f"unknown kind {cert.kind!r}"
    try:
        checker = CHECKERS[cert.kind]
    except Exception as exc:  # noqa: BLE001 - a checker that cannot be loaded has not verified anything
        return False, f"the checker of kind {cert.kind!r} could not be loaded ({_why(exc)})"
    try:
        ok = bool(checker(cert.data))
    except InputNotCarried as exc:  # not a verdict: a caller that counts unchecked certificates asks to be told
        if missing_raises:
            raise
        return False, f"the {cert.kind} check cannot run here: {_why(exc)}"
    except Exception as exc:  # noqa: BLE001 - a checker that cannot finish has not verified anything
        return False, f"the {cert.kind} check could not finish on these data ({_why(exc)})"
    if len(_RECHECKED) >= _MEMO_MAX:
        _RECHECKED.clear()
    _RECHECKED[key] = (ok, "" if ok else f"the {cert.kind} check does not hold on these data")
    return _RECHECKED[key]


def recheck(obj: Certificate | CertificateJSON) -> bool:
    """Re-verify a certificate (object or its JSON) from its data alone.

    The checker of its kind is looked up in :data:`flowcert.certificates.kinds.KINDS` and
    imported on first use, so this works in a fresh interpreter for every kind flowcert writes.
    Within one process each certificate is checked once (memoised by kind, claim, checker and
    a SHA-256 of the data); :func:`explain` gives the reason of a refusal.

    Parameters
    ----------
    obj : Certificate or dict
        The certificate, or its JSON object with its subject fields filled in.

    Returns
    -------
    bool
        True only if the exact check passes. Unknown kinds and malformed data give False.
    """
    return explain(obj)[0]


_HYPOTHESIS_KEYS = ("name", "status", "margin", "method", "certificate", "detail")


@dataclass
class Hypothesis(Itself):
    """One named hypothesis of a theorem, decided on the parameters, with its evidence.

    Attributes
    ----------
    name : str
        The hypothesis, as the theorem states it (``Sigma0 >= 0``).
    status : Status
        ``holds``, ``fails``, ``unknown`` or ``assumed`` (:class:`~flowcert.certificates.verdicts.Status`;
        a plain word given here is made one).
    margin : float or None
        How far the checked quantity is from the boundary; intended sign: positive when it holds
        (some entries still report the raw quantity; ``method`` says which).
    method : str
        How it was decided (``exact rational LDL``, ``cell definition``, ``assumed by the user`` …).
    certificate : Certificate or None
        The re-checkable evidence, where one exists.
    detail : str
        Why, in words (the reason of an ``unknown``, the witness of a ``fails``).
    seconds : float
        Time spent re-checking the certificate (not in the document).
    """

    name: str
    status: Status
    margin: float | None = None
    method: str = ""
    certificate: Certificate | None = None
    detail: str = ""
    seconds: float = field(default=0.0, compare=False)
    #: keys of a saved record the type does not know, written back as they came
    extra: JSONObject = field(default_factory=dict, repr=False, compare=False)
    _order: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, Status(value) if name == "status" else value)

    def _repr_html_(self) -> str | None:
        """The notebook view (:func:`flowcert.display.hypothesis_html`): the hypothesis as mathematics."""
        return None if HTML_VIEW is None else HTML_VIEW(self)

    def to_json(self) -> HypothesisJSON:
        """The hypothesis record of the document."""
        return ordered({"name": self.name, "status": self.status.value, "margin": self.margin,
                        "method": self.method,
                        "certificate": self.certificate.to_json() if self.certificate else None,
                        "detail": self.detail}, self._order, self.extra)

    @classmethod
    def from_json(cls, rec: HypothesisJSON) -> Hypothesis:
        """From a hypothesis record of a saved document (its key order and unknown keys kept).

        Parameters
        ----------
        rec : dict
            The record, as ``verify --json`` writes it.

        Returns
        -------
        Hypothesis
        """
        extra, order = split(rec, _HYPOTHESIS_KEYS)
        cert = rec.get("certificate")
        return cls(rec.get("name", ""), rec.get("status", "unknown"), rec.get("margin"), rec.get("method", ""),
                   None if cert is None else Certificate.from_json(cert), rec.get("detail", ""),
                   extra=extra, _order=order)


#: The engine's former name of :class:`Hypothesis`.
HypothesisResult = Hypothesis


def certified(
    name: str, status: Status, cert: Certificate, margin: float | None, method: str, detail: str = ""
) -> HypothesisResult:
    """A verdict backed by ``cert``: ``unknown`` unless :func:`recheck` accepts it."""
    t0 = time.perf_counter()
    ok = recheck(cert)
    secs = time.perf_counter() - t0
    if not ok:
        return HypothesisResult(
            name, "unknown", margin, method, None, f"re-check of the {cert.kind} certificate failed; {detail}", secs
        )
    return HypothesisResult(name, status, margin, method, cert, detail, secs)


def float_source(M: Any, sign: int = 1) -> np.ndarray | None:
    """``sign * M`` when ``M`` is a finite float64 matrix (then its exact forms are memoised by its bytes:
    :func:`encode`, :func:`qmat`), else None (negating floats is exact)."""
    if isinstance(M, np.ndarray) and M.dtype == np.float64 and M.ndim == 2 and np.all(np.isfinite(M)):
        return M if sign > 0 else -M
    return None
