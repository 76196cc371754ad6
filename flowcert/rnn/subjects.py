r"""Computed subjects of ``rnn`` certificates: what a ``kpflow analyze`` document's certificates speak of,
re-derived from the document's own ``params`` (KPFlow paper, Thm 2 and the contraction bound; note 002 §2).

The state Jacobians along the trajectory,

.. math::

    A_{b,t}=\partial_zF(z_{b,t-1},x_{b,t};\theta),\qquad z_{b,t}=F(z_{b,t-1},x_{b,t};\theta),\quad
    b=1..B,\ t=1..T,

are a reproducible computation from ``params``: the cell and θ (``cell``, ``H``, ``I``, ``g``, ``dt``,
``bias``, ``noise``, ``weights``, ``A``, all drawn from ``seed`` where not given), the inputs (``task``, ``B``,
``T``, ``seed``) and :math:`z_0=0` (:func:`flowcert.rnn.analyze.build_model`, the definition of the model,
and :func:`flowcert.gpu.rnn.operators.state_jacobians`). They are computed here in float64 with one
thread and returned as exact rationals (each float is the dyadic rational it is), in the order the
certificates list them: trial-major, ``[b * T + t]``.

Soundness. A float computation is not reproducible bit for bit across BLAS builds and CPUs, so
``flowcert recheck`` (:data:`flowcert.bindings.COMPUTED`) does not demand bit equality. A certificate
about these matrices carries its copy :math:`\tilde A_{b,t}`; recheck re-derives :math:`A_{b,t}` here and

1. ties the copy to the subject: every entry :math:`|\tilde a-a|\le\tau\max(1,|a|)`, :math:`\tau=2^{-30}`,
   in exact rationals (:func:`flowcert.certificates.subjects.near`), else refused: a changed ``seed``,
   gain, step or weight moves them by far more than rounding noise;
2. runs the certificate's exact checker on the re-derived :math:`A_{b,t}`, not on the copy: its own data
   (:math:`X`, :math:`\rho^2`; the predicate's value) must prove its claim, in exact rational arithmetic,
   for the document's matrices. Its slack (the inflation of :math:`\rho^2`, :math:`X+2^{-20}I`) absorbs a
   platform's last-bit differences; where it does not, the certificate is refused, never accepted.

So what is accepted is always proved on the subject itself; τ only decides what counts as "the same
data". What is proved is a property of the float64 Jacobians of the float64 trajectory, which is what
the document's operators P, K are built from; not a statement about the real-arithmetic trajectory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any
from ..records import Document

if TYPE_CHECKING:
    from ..certificates.rnn_float import StackRef

__all__ = ["jacobians_of", "jacobian_stack_of", "state_matrix_of", "relu_states_of"]

_CACHE: dict[str, Any] = {}


def _params(doc: Document) -> Any:
    """The document's validated parameters; ``KeyError`` for a user's module (no weights in the document),
    :class:`~flowcert.certificates.subjects.SubjectError` for parameters the loader refuses."""
    from ..certificates.subjects import SubjectError
    from ..schema import ParamError
    from .params import parse_rnn

    raw = doc.get("params") if isinstance(doc, Mapping) else None
    if not isinstance(raw, Mapping) or raw.get("cell") == "module":
        raise KeyError("params")  # a user's torch module: its weights are not in the document
    try:
        return parse_rnn({k: v for k, v in raw.items() if v is not None})
    except ParamError as err:
        raise SubjectError(f"the document's params do not load ({err})") from None


def _model(doc: Document) -> dict[str, Any]:
    """The built model of the document's params (cached by the canonical JSON of ``params``)."""
    import numpy as np

    from ..certificates.subjects import SubjectError
    from ..papers.kpflow import MAX_H, MAX_STEPS

    key = json.dumps(doc.get("params"), sort_keys=True)
    if key in _CACHE:
        return _CACHE[key]
    p = _params(doc)  # before torch is imported: a user's module needs none of it
    if p.B * p.T > MAX_STEPS or p.H > MAX_H:  # no Jacobian certificate is made for larger runs
        raise SubjectError(f"B T = {p.B * p.T} > {MAX_STEPS} or H = {p.H} > {MAX_H}: kpflow analyze certifies "
                           "no Jacobians of a run this large")
    import torch

    from .analyze import build_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        from ..gpu.rnn.operators import state_jacobians

        m = build_model(p)
        J = state_jacobians(m["tr"]).to(torch.float64)
        B, T, H = m["tr"].shape
        out = {"jacobians": J.reshape(B * T, H, H).cpu().numpy(),
               "states": m["tr"].Z[:, :-1].reshape(-1, H).to(torch.float64).cpu().numpy(),
               "A": None if getattr(m["cell"], "A", None) is None else m["cell"].A.to(torch.float64).cpu().numpy()}
    except Exception as exc:  # noqa: BLE001 - a document's params that do not run: refused, with the reason
        raise SubjectError(f"the trajectory of the document's params cannot be computed ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:160]})") from None
    finally:
        torch.set_num_threads(threads)
    if not (np.isfinite(out["jacobians"]).all() and np.isfinite(out["states"]).all()):
        raise SubjectError("the trajectory of the document's params is not finite (diverged)")
    if len(_CACHE) > 4:
        _CACHE.clear()
    _CACHE[key] = out
    return out


def _exact(M: Any) -> list[list[str]]:
    return [[str(Fraction(float(v))) for v in row] for row in M]


def jacobians_of(doc: Document) -> list[list[list[str]]]:
    r"""Every state Jacobian :math:`A_{b,t}` of the document's trajectory, ``[b * T + t]``, as exact ``"p/q"``.

    Raises
    ------
    KeyError
        The document is of a user's module (its weights are not in it): the subject cannot be derived.
    flowcert.certificates.subjects.SubjectError
        The document's ``params`` do not load.
    """
    return [_exact(A) for A in _model(doc)["jacobians"]]


def jacobian_stack_of(doc: Document) -> StackRef:
    r"""The same Jacobians at any size, as the reference of one float64 stack ``[B*T, H, H]`` (trial-major)
    put in the store of :mod:`flowcert.certificates.rnn_float` (``{"sha256", "shape", "dtype",
    "fingerprint"}``): what the real-size certificates (``invertible_float``, ``contraction_float``)
    speak of. Recomputed on each call (no cache: a stack of the peer's size is 419 MB; the store keeps
    the last few by digest).

    Raises
    ------
    KeyError
        The document is of a user's module.
    flowcert.certificates.subjects.SubjectError
        The document's ``params`` do not load, or their trajectory cannot be computed or is not finite.
    """
    import numpy as np

    from ..certificates import rnn_float
    from ..certificates.subjects import SubjectError

    p = _params(doc)
    import torch

    from .analyze import build_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        from ..gpu.rnn.operators import state_jacobians

        m = build_model(p)
        B, T, H = m["tr"].shape
        J = state_jacobians(m["tr"]).reshape(B * T, H, H)
        del m
    except Exception as exc:  # noqa: BLE001 - a document's params that do not run: refused, with the reason
        raise SubjectError(f"the trajectory of the document's params cannot be computed ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:160]})") from None
    finally:
        torch.set_num_threads(threads)
    A = rnn_float.as_stack(J)
    if not np.isfinite(A).all():
        raise SubjectError("the Jacobians of the document's params are not finite (diverged)")
    return rnn_float.register_stack(A)


def relu_states_of(doc: Document) -> list[list[str]]:
    r"""The ReLU cell's states :math:`z_{b,t-1}`, :math:`t\ge2` (rows ``b * (T - 1) + t - 2``), exact: where
    ReLU must be differentiable for Prop. 1 (``KeyError`` for another cell or a user's module)."""
    if (doc.get("params") or {}).get("cell") != "relu_rnn":
        raise KeyError("params.cell")
    return [[str(Fraction(float(v))) for v in row] for row in _model(doc)["states"]]


def state_matrix_of(doc: Document) -> list[list[str]]:
    """The state matrix :math:`A` of the ``linear`` cell (``params.A``, or drawn from ``seed``), exact.

    Raises
    ------
    KeyError
        Not a ``linear`` cell, or a user's module.
    """
    A = _model(doc)["A"]
    if A is None:
        raise KeyError("A")
    return _exact(A)
