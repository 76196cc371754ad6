r"""Exact forms of float data, found in one step: the texts, keys and images of large matrices.

A float is a dyadic rational, :math:`x=m\,2^{e}` with an integer :math:`m`, so a matrix of floats is
exactly a rational matrix :math:`N/2^k` (integer :math:`N`). Real heads give matrices of
:math:`d^2=147{,}456` such entries (MiniLM, :math:`d=384`), read for dozens of hypotheses; this
module gives each exact form of such a matrix without work per entry in the interpreter where
C code can do it, and always the same value the general routines of
:mod:`flowcert.certificates.core` give:

* :func:`ratio_rows_text`: the JSON text of a matrix of ``"p/q"`` texts;
* :func:`float_rows`: a list of float rows as an array (exactly those floats);
* :func:`content_key` / :func:`content_memo`: a SHA-256 of a value's content (a matrix by its bytes
  or texts), and a memo under it;
* :func:`float_image`: the float matrix equal to an ``fmpq_mat``, if there is one
  (:math:`Q=N/D` equals :math:`F` iff :math:`D=2^k` and :math:`2^kF=N`);
* :func:`is_diagonal`, :func:`coprime_fraction`, :class:`Encoded`.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

#: a matrix of at least this many entries is "large": memoised by content, given a float image
LARGE = 4096


class Encoded(list):  # type: ignore[type-arg]
    """Rows of ``"p/q"`` texts in lowest terms with ``q > 0``, as :func:`flowcert.certificates.core.encode`
    writes them: their own canonical form (:func:`flowcert.certificates.subjects.canonical`), so a subject
    digest of one is its JSON text, without parsing each entry again. JSON, equality and copies treat it
    as a plain list. ``floats``: the float64 matrix the texts are exactly, when they were made from one
    (None otherwise)."""

    floats: np.ndarray | None = None


_RATIO_BYTES = b"-0123456789/"


def is_diagonal(Q: Any) -> bool:
    """Whether the ``fmpq_mat`` ``Q`` is square and zero off its diagonal (exactly: its integer numerators)."""
    return Q.nrows() == Q.ncols() and Q.numer_denom()[0].is_diagonal()


def ratio_rows_text(value: Any) -> str | None:
    """``json.dumps(value, separators=(",", ":"))`` of a matrix of ``"p/q"``-like texts (non-empty rows
    of strings of digits, ``-`` and ``/``), joined without the encoder's work per entry; None for any
    other value. Exact: the characters are checked, so no entry needs escaping or could hide a delimiter."""
    if type(value) not in (list, Encoded) or not value or any(type(r) is not list or not r for r in value):
        return None
    try:
        if "".join(["".join(r) for r in value]).encode("ascii").translate(None, _RATIO_BYTES):
            return None  # a character other than digits, '-' and '/'
    except (TypeError, UnicodeEncodeError):  # an entry that is not a string, or not ASCII
        return None
    return '[["' + '"],["'.join(['","'.join(r) for r in value]) + '"]]'


def float_rows(value: Any) -> np.ndarray | None:
    """A list of equal, non-empty rows of Python floats as a float64 array (exactly those floats), or
    None for any other value (ints, strings, ragged rows: those take the JSON path)."""
    if type(value) is not list or not value or any(type(r) is not list for r in value):
        return None
    n = len(value[0])
    if n == 0 or any(len(r) != n for r in value):
        return None
    kinds: set[type] = set()
    for r in value:
        kinds.update(map(type, r))
    if kinds != {float}:
        return None
    return np.array(value, dtype=np.float64)


def _array_digest(F: np.ndarray, tag: bytes = b"") -> bytes:
    """SHA-256 of a float array's shape and bytes (``tag`` keeps kinds of value apart)."""
    return hashlib.sha256(tag + repr(F.shape).encode() + np.ascontiguousarray(F).tobytes()).digest()


def content_key(value: Any) -> bytes:
    """SHA-256 of a float array's shape and bytes, or of any other value's JSON text (TypeError or
    ValueError for a value that is neither)."""
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return _array_digest(value)
    F = float_rows(value)
    if F is not None:  # not the key of the array itself: a list and an array are memoised apart
        return _array_digest(F, b"list")
    text = ratio_rows_text(value)
    if text is None:  # nested values: each large matrix in them by its own hash (keyed_data)
        text = json.dumps(keyed_data(value), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).digest()


def content_memo(memo: OrderedDict[bytes, Any], limit: int, value: Any, compute: Callable[[], Any]) -> Any:
    """``compute()`` for ``value``, memoised in ``memo`` (the ``limit`` most recent) under the SHA-256 of
    ``value``'s JSON text, or of a float array's bytes: a content key, so a value changed in place is
    another key. A value that is neither (numpy scalars, Fractions) is computed every time."""
    try:
        key = content_key(value)
    except (TypeError, ValueError):
        return compute()
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = compute()
        while len(memo) > limit:
            memo.popitem(last=False)
    else:
        memo.move_to_end(key)
    return hit


def coprime_fraction(p: int, q: int) -> Fraction:
    """``Fraction(p, q)`` for ``p/q`` already in lowest terms with ``q > 0`` (an ``fmpq``), without the gcd."""
    if _FROM_COPRIME is not None:
        return _FROM_COPRIME(p, q)
    return Fraction(p, q, _normalize=False)  # type: ignore[call-arg]  # Python 3.11


_FROM_COPRIME = getattr(Fraction, "_from_coprime_ints", None)  # Python >= 3.12


def ratio_text(p: int, q: int) -> str:
    """The text ``str(fmpq)`` gives for ``p/q`` in lowest terms with ``q > 0``."""
    return f"{p}/{q}" if q != 1 else str(p)


def float_text(x: float) -> str:
    return ratio_text(*x.as_integer_ratio())  # exact, lowest terms, q > 0


#: the significand bits of a float64, and the widest shifts whose integers still fit an int64
_MANTISSA_BITS = 53
_MAX_LEFT, _MAX_RIGHT = 63 - _MANTISSA_BITS, 62


def float_texts(F: np.ndarray) -> list[list[str]]:
    r"""Rows of :func:`float_text` of every entry of a finite 2-D float64 array, the integer work in numpy.

    Each :math:`x=m\,2^{e}` (``frexp``, :math:`\tfrac12\le|m|<1`) is the integer :math:`M=m\,2^{53}`
    times :math:`2^{e-53}`, exactly; :math:`M` is divided by its largest power of two :math:`2^{z}` and the
    text is :math:`M2^{-z}\cdot2^{e-53+z}` as ``p`` or ``p/q`` in lowest terms (the numerator is odd when
    the denominator is not 1). Entries whose numerator or denominator leaves an int64 (tiny and huge
    floats) take :func:`float_text`."""
    m, e = np.frexp(F)
    M = np.ldexp(m, _MANTISSA_BITS).astype(np.int64)  # exact: |m| 2^53 < 2^53 is an integer
    E = e.astype(np.int64) - _MANTISSA_BITS
    low = M & -M  # the lowest set bit (0 for x = 0)
    z = np.where(M != 0, np.frexp(low.astype(np.float64))[1].astype(np.int64) - 1, 0)
    M >>= z  # exact: M is divisible by 2^z
    E += z
    E[M == 0] = 0  # zero is "0", not 0/2^53
    fits = (E <= _MAX_LEFT) & (E >= -_MAX_RIGHT)
    P = np.where(fits & (E > 0), M << np.clip(E, 0, _MAX_LEFT), M)
    Qd = np.where(fits & (E < 0), np.int64(1) << np.clip(-E, 0, _MAX_RIGHT), 1)
    texts = list(map("{}/{}".format, P.ravel().tolist(), Qd.ravel().tolist()))
    whole = (Qd == 1).ravel()
    if whole.any():  # integers are written without "/1"
        for k, p in zip(np.flatnonzero(whole).tolist(), P.ravel()[whole].tolist()):
            texts[k] = str(p)
    if not fits.all():
        flat = F.ravel().tolist()
        for k in np.flatnonzero(~fits.ravel()).tolist():
            texts[k] = float_text(flat[k])
    c = F.shape[1]
    return [texts[i * c:(i + 1) * c] for i in range(F.shape[0])]


#: recent exact matrices made from floats, or found to be floats: ``id(Q) -> (private copy of Q, its
#: floats)``. A hint only: :func:`float_image` returns the floats when ``Q`` equals the private copy
#: exactly (one comparison in C), so a matrix changed in place, or another one at a re-used id, is
#: never given floats it is not
_IMAGES: OrderedDict[int, tuple[Any, np.ndarray]] = OrderedDict()
_IMAGES_MAX = 8


def remember_image(Q: Any, original: Any, F: np.ndarray) -> None:
    """Note that the ``fmpq_mat`` ``Q`` was made equal to ``original`` (never handed out, never changed),
    whose entries are exactly the floats ``F``: :func:`float_image` of ``Q`` is then a comparison."""
    if Q.nrows() * Q.ncols() < LARGE:
        return
    F = np.array(F, dtype=np.float64)  # a private copy
    F.flags.writeable = False
    _IMAGES[id(Q)] = (original, F)
    _IMAGES.move_to_end(id(Q))
    while len(_IMAGES) > _IMAGES_MAX:
        _IMAGES.popitem(last=False)


def clear_images() -> None:
    """Forget every remembered float image (:func:`remember_image`)."""
    _IMAGES.clear()


def float_image(Q: Any) -> np.ndarray | None:
    r"""The float64 matrix whose entries are exactly those of the large ``fmpq_mat`` ``Q`` (the exact
    form of float data), or None when ``Q`` is small or some entry is no float.

    Exact: with :math:`Q=N/D` (integer :math:`N`, common denominator :math:`D`), :math:`Q` is a float
    matrix iff :math:`D=2^k` and every :math:`N_{ij}` is a float (at most 53 significant bits) whose
    scaling by :math:`2^{-k}` is exact (checked by scaling back: a subnormal result would lose bits)."""
    if Q.nrows() * Q.ncols() < LARGE:
        return None
    known = _IMAGES.get(id(Q))
    if known is not None and known[0] == Q:  # exact, shapes included
        return known[1].copy()  # Q is exactly the matrix these floats are
    F = _image(Q)
    if F is not None:
        import flint

        remember_image(Q, flint.fmpq_mat(Q), F)
    return F


def _image(Q: Any) -> np.ndarray | None:
    """:func:`float_image` without the memory of :func:`remember_image`."""
    for i in range(0, Q.nrows(), max(1, Q.nrows() // 8)):  # a quick look first: a product of floats fails here
        x = Q[i, (7 * i) % Q.ncols()]
        p, q = int(x.p), int(x.q)
        if q & (q - 1) or (p and (abs(p) >> ((p & -p).bit_length() - 1)).bit_length() > 53):
            return None  # a denominator that is no power of two, or more than 53 significant bits
    N, D = Q.numer_denom()
    d = int(D)
    if d <= 0 or d & (d - 1):
        return None  # a denominator that is no power of two: some entry is no float
    numerators = [int(x) for x in N.entries()]
    try:
        scaled = [float(n) for n in numerators]  # correctly rounded: exact iff n has at most 53 significant bits
    except OverflowError:  # entries too far apart for one scale (2^70 beside 2^-1074): entry by entry
        return _entrywise_image(Q)
    if scaled != numerators:  # int == float compares exactly in Python
        return None
    with np.errstate(over="ignore", under="ignore"):
        F = np.ldexp(np.array(scaled, dtype=np.float64), -(d.bit_length() - 1)).reshape(Q.nrows(), Q.ncols())
    # exact unless the scaling left the range of normal floats: check the way back
    with np.errstate(over="ignore"):
        back = np.ldexp(F, d.bit_length() - 1)
    if not (np.all(np.isfinite(F)) and np.array_equal(back.ravel(), np.array(scaled, dtype=np.float64))):
        return _entrywise_image(Q)  # a subnormal entry under the common scale: entry by entry
    return F


def _entrywise_image(Q: Any) -> np.ndarray | None:
    """:func:`float_image` entry by entry: ``p/q`` (lowest terms) is a float iff the correctly rounded
    quotient gives back exactly ``(p, q)`` as its ratio."""
    out = []
    for x in Q.entries():
        p, q = int(x.p), int(x.q)
        try:
            f = p / q  # CPython: correctly rounded
        except OverflowError:
            return None
        if f.as_integer_ratio() != (p, q):
            return None
        out.append(f)
    return np.array(out, dtype=np.float64).reshape(Q.nrows(), Q.ncols())


def keyed_data(data: Any) -> Any:
    """``data`` for a memo key: each large matrix in it (at any depth) stands as the SHA-256 of its finite
    floats or of its ``"p/q"`` texts' JSON (:func:`ratio_rows_text`), without the encoder's work per
    entry; every other value as it is."""
    if isinstance(data, dict):
        return {k: keyed_data(v) for k, v in data.items()}
    if not isinstance(data, list) or not any(isinstance(x, (list, dict)) for x in data):
        return data
    if len(data) >= 16:
        F = float_rows(data)
        if F is not None and np.all(np.isfinite(F)):
            return {"sha256-float64": _array_digest(F).hex()}
        text = ratio_rows_text(data)
        if text is not None:
            return {"sha256": hashlib.sha256(text.encode()).hexdigest()}
    return [keyed_data(x) for x in data]


