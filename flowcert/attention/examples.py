r"""The consensus paper's printed examples (§7.1–7.4) as parameter mappings, a reduced §7.4, the
stable tetrahedron and the counterexample to Theorem 5.1's domain (note 003 §2.3).

§7.4 draws :math:`P_\eta(t)=D_\eta(t)P'_\eta` with :math:`(D_\eta)_{jj}=|2\sin(w_jt+\phi_j)|`,
:math:`P'\sim U[-\tfrac12,\tfrac12]`, :math:`w\sim U(0,1)`, :math:`\phi\sim U(0,2\pi)`; initial tokens are
uniform on :math:`[-\tfrac12,\tfrac12]^d` projected by :math:`\pi_W(y)=y/\sqrt{y^\top Wy}`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..records import JSONObject


P_7_1 = [[0.9432, 0.0587, -0.1813], [0.0587, 0.8450, -0.1013], [-0.1813, -0.1013, 0.5519]]
P_7_2 = ([[0.0805, -0.1929, 0.1991], [-0.2312, 0.3131, -0.2335], [0.1788, -0.1732, -0.1594]],
         [[-0.3067, 0.0349, 0.1107], [0.0572, -0.0557, 0.1343], [0.1375, 0.1083, 0.1018]])
P_7_3 = [[0.3598, 0.4150, 0.1319], [0.0971, -0.0668, -0.2046], [0.1548, -0.2102, 0.1220]]
U_7_3 = [[-0.2590, 0.4965, 0.5609], [0.4965, -0.7174, -0.5003], [0.5609, -0.5003, -0.0247]]
D_1 = ("2*cos(10*pi*t)", "2*sin(10*pi*t)", "2*cos(6*pi*t)")
D_2 = ("2*cos(6*pi*t)", "2*sin(6*pi*t)", "2*cos(4*pi*t)")


def _DP(D: tuple[str, ...], P: list[list[float]]) -> list[list[str]]:
    return [[f"{D[i]}*({P[i][j]!r})" for j in range(len(P))] for i in range(len(P))]


def _tokens(seed: int, n: int, d: int, W: Any = None, v: Any = None) -> list[list[float]]:
    """Uniform on [-1/2, 1/2]^d (the paper's protocol), flipped into v^T y > 0 if v is given, then pi_W."""
    rng = np.random.default_rng(seed)
    Y = rng.uniform(-0.5, 0.5, (n, d))
    if v is not None:
        Y = Y * np.sign(Y @ np.asarray(v, float))[:, None]
    Wm = np.eye(d) if W is None else np.asarray(W, float)
    return (Y / np.sqrt(np.einsum("id,de,ie->i", Y, Wm, Y))[:, None]).tolist()


#: angles on S^1 of the counterexample to Thm 5.1's domain (note 003 §2.3): theta_3 is on the separatrix
THM51_ANGLES = (0.0, -0.3, 3.095984385753381)


@dataclass
class Fig5:
    r"""§7.4: causal, h heads, :math:`P_\eta(t)=D_\eta(t)P'_\eta`, :math:`(D_\eta)_{jj}=|2\sin(w_jt+\phi_j)|`,
    :math:`P'\sim U[-\tfrac12,\tfrac12]`, :math:`w\sim U(0,1)`, :math:`\phi\sim U(0,2\pi)` drawn per diagonal entry."""

    Pp: list[np.ndarray]
    w: list[np.ndarray]
    phi: list[np.ndarray]
    X0: np.ndarray

    def P(self, eta: int, t: float) -> np.ndarray:
        return np.abs(2 * np.sin(self.w[eta] * t + self.phi[eta]))[:, None] * self.Pp[eta]


def fig5_parameters(n: int, d: int, heads: int = 2, seed: int = 5) -> Fig5:
    """Random draw of §7.4's parameters (note 003, pitfall 12: w, phi per diagonal entry)."""
    rng = np.random.default_rng(seed)
    Pp, w, phi = [], [], []
    for _ in range(heads):
        Pp.append(rng.uniform(-0.5, 0.5, (d, d)))
        w.append(rng.uniform(0, 1, d))
        phi.append(rng.uniform(0, 2 * np.pi, d))
    X0 = rng.uniform(-0.5, 0.5, (n, d))
    return Fig5(Pp, w, phi, X0 / np.linalg.norm(X0, axis=1)[:, None])


def paper_examples() -> dict[str, JSONObject]:
    """Parameter mappings of §7.1–7.4 (printed matrices), a reduced §7.4 and the stable tetrahedron;
    ``tests/data/attention/consensus_<key>.json`` hold exactly these."""
    I3 = np.eye(3).tolist()
    f5 = fig5_parameters(8, 6)
    heads5 = [{"P": [[f"Abs(2*sin({float(f5.w[e][i])!r}*t + {float(f5.phi[e][i])!r}))*({float(f5.Pp[e][i, j])!r})"
                      for j in range(6)] for i in range(6)], "V": np.eye(6).tolist()} for e in range(2)]
    tet = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / np.sqrt(3)
    return {
        "fig1": {"P": P_7_1, "V": I3, "W": P_7_1, "normalization": "sqrt", "X0": _tokens(0, 10, 3, P_7_1), "t_end": 60.0, "seed": 0},
        "fig3": {"heads": [{"P": _DP(D_1, P_7_2[0]), "V": I3}, {"P": _DP(D_2, P_7_2[1]), "V": I3}], "normalization": "sqrt",
                 "X0": _tokens(0, 10, 3, v=[1.0, 0.0, 0.0]), "t_end": 30.0, "seed": 0},
        "fig4": {"P": _DP(D_1, P_7_3), "V": U_7_3, "causal": True, "normalization": "sqrt",
                 "X0": _tokens(0, 10, 3, v=[-0.57806, 0.10208, -0.80958]), "t_end": 200.0, "seed": 0},
        "fig5_reduced": {"heads": heads5, "causal": True, "normalization": "sqrt", "X0": f5.X0.tolist(), "t_end": 150.0, "seed": 5},
        "tetrahedron": {"P": (-2.0 * np.eye(3)).tolist(), "V": I3, "normalization": "sqrt", "X0": tet.tolist(), "t_end": 60.0, "seed": 0},
        # note 003 §2.3: inside {y_j != -y_1} yet token 3 converges to -y_1 (Thm 5.1's domain claim fails for l >= 3)
        "thm51_counterexample": {"P": np.eye(2).tolist(), "V": np.eye(2).tolist(), "causal": True, "normalization": "sqrt",
                                 "X0": [[math.cos(a), math.sin(a)] for a in THM51_ANGLES], "t_end": 30.0, "seed": 0},
    }
