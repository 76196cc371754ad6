"""Extreme magnitudes (issue 33, item 5): every matrix structure at 1e+-150 and 1e+-308.

``verify gaussian`` with ``A = diag(-1e308, -1e308)`` once ran past 150 s (the moment run was asked
to cover 2^1027 time constants of its field), and ``A`` with entries +-1e150 too. These cases put
one key at a time of a well-behaved base file (``tests/data``) at magnitude ``s`` in
:data:`MAGNITUDES`, with each structure of :data:`STRUCTURES`:

* ``diagonal``: :math:`-sI` (the issue's case); ``rotation``: :math:`s\\,(e_1e_2^\\top - e_2e_1^\\top)`
  (eigenvalues :math:`\\pm is`, no decay); ``jordan``: :math:`-sI + s\\,e_1e_2^\\top` (defective);
  ``random``: seeded Gaussian entries rescaled so that the largest is :math:`\\pm s`;
* gaussian: ``A`` (every structure), ``V`` and ``B`` (diagonal, random), ``Sigma0`` (:math:`sI` and a
  random PSD matrix of largest entry :math:`s`), ``b`` and ``mu0`` (:math:`\\pm s`);
* attention: ``V`` (every structure), ``Q`` and ``K`` (diagonal, random).

Each must end within the documented budget (:data:`flowcert.limits.COMMAND_SECONDS` of CPU time)
with exit 0, or be refused by the limits with exit 2 and one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
GAUSS = json.loads((ROOT / "tests" / "data" / "gaussian_stable_2d.json").read_text())
ATT = json.loads((ROOT / "tests" / "data" / "attention" / "multistable_d3.json").read_text())

MAGNITUDES = (1e150, 1e-150, 1e308, 1e-308)
STRUCTURES = ("diagonal", "rotation", "jordan", "random")


def structured(kind: str, s: float, d: int, seed: int = 0) -> np.ndarray:
    """A d x d matrix of the given structure whose largest entry has magnitude ``s`` (exactly, no overflow)."""
    if kind == "diagonal":
        return -s * np.eye(d)
    if kind == "rotation":
        M = np.zeros((d, d))
        M[0, 1], M[1, 0] = s, -s
        return M
    if kind == "jordan":
        M = -s * np.eye(d)
        M[0, 1] = s
        return M
    R = np.random.default_rng(seed).standard_normal((d, d))
    return (R / np.abs(R).max()) * s


def _psd(s: float, d: int, seed: int) -> np.ndarray:
    R = np.random.default_rng(seed).standard_normal((d, d))
    S = R @ R.T
    return (S / np.abs(S).max()) * s


def _varied(base: dict[str, Any], system: str, keys: tuple[str, ...], d: int) -> list[tuple[str, dict[str, Any]]]:
    """Every structure in ``A``/``V`` (the first key), diagonal and random in the other keys, at every magnitude."""
    out = []
    for s in MAGNITUDES:
        for i, key in enumerate(keys):
            for kind in STRUCTURES if i == 0 else ("diagonal", "random"):
                out.append((f"{system}-{key}-{kind}-{s:g}", {**base, key: structured(kind, s, d, 7 + 4 * i).tolist()}))
    return out


def gaussian_cases() -> list[tuple[str, dict[str, Any]]]:
    """``(name, raw gaussian parameters)``: ``A``, ``V``, ``B``, ``Sigma0``, ``b``/``mu0`` at every magnitude."""
    out = _varied(GAUSS, "gaussian", ("A", "V", "B"), 2)
    for s in MAGNITUDES:
        out.append((f"gaussian-Sigma0-diagonal-{s:g}", {**GAUSS, "Sigma0": (s * np.eye(2)).tolist()}))
        out.append((f"gaussian-Sigma0-random-{s:g}", {**GAUSS, "Sigma0": _psd(s, 2, 13).tolist()}))
        out.append((f"gaussian-b-mu0-{s:g}", {**GAUSS, "b": [s, -s], "mu0": [-s, s]}))
    return out


def attention_cases() -> list[tuple[str, dict[str, Any]]]:
    """``(name, raw attention parameters)``: ``V``, ``Q``, ``K`` at every magnitude."""
    return _varied(ATT, "attention", ("V", "Q", "K"), 3)


#: The issue's cases and one of each system, in the default suite (the rest is ``slow``).
DEFAULT = ("gaussian-A-diagonal-1e+308", "gaussian-A-random-1e+150", "gaussian-Sigma0-diagonal-1e-308",
           "attention-V-jordan-1e+150")
