"""The attention identities re-derived in exact polynomial rings over QQ (the ``symbolic_identity`` checker,
issue 38 item 8): true identities are proved, false ones (a perturbed term, a perturbed field, a relation off
the sphere) are refused, the ring's building blocks equal SymPy's expressions as polynomials, and a
``symbolic_identity`` certificate is refused when its derivation no longer reduces to zero."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import sympy as sp

from flowcert.certificates import core, identities
from flowcert.symbolic.attention import consensus as sc
from flowcert.symbolic.attention import polynomial_proofs as pp

NAMES = sorted(pp.IDENTITIES)


@pytest.fixture
def fresh_caches():
    pp.proofs.cache_clear()
    identities._proved.cache_clear()
    core._RECHECKED.clear()
    yield
    pp.proofs.cache_clear()
    identities._proved.cache_clear()
    core._RECHECKED.clear()


def test_every_attention_identity_of_the_checker_has_a_ring_derivation():
    assert set(NAMES) == set(identities.RUNS)
    assert {n for n in identities.IDENTITIES if n.startswith(("consensus:", "multistability:"))} == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_true_identities_are_proved(name):
    parts = pp.proofs(name)
    assert parts and all(res for _, res in parts)
    for part, res in parts:
        assert all(not e for e in res), (name, part, [str(e) for e in res if e][:1])
    assert pp.proved(name)
    assert core.explain(identities.identity_certificate(name)) == (True, "")


def _ring(dim=3):
    return pp._Ring([("u", dim), ("w", dim)], [("y0", dim), ("y1", dim), ("y2", dim)], [("p", dim)],
                    ["a_0", "a_1", "a_2"])


def test_sphere_reduction_decides_true_and_false_relations():
    r = _ring()
    u, w = r.unit
    one = r.const(1)
    assert not r.on_spheres(pp.dot(u, u) - one, u)
    assert not r.on_spheres((pp.dot(u, u) - one) * u[0] * w[1] + (pp.dot(w, w) - one) * w[2] ** 3, u, w)
    # |u - (u.w) w|^2 = 1 - (u.w)^2 on the spheres, and not off them
    a = pp.dot(u, w)
    g = pp.sub(u, pp.scale(a, w))
    true = pp.dot(g, g) - (one - a**2)
    assert true and not r.on_spheres(true, u, w)
    assert r.on_spheres(true + r.const(1, 10**6) * a, u, w)
    assert r.on_spheres(u[0] * u[1], u)
    # a relation of the sphere of radius 2 is not one of the unit sphere
    assert r.on_spheres(pp.dot(u, u) - r.const(4), u)
    with pytest.raises(ValueError):
        r.on_spheres(pp.dot(u, u) - one, r.vec("y0", 3))


def test_oja_identity_with_a_flipped_sign_is_refused():
    r = pp._Ring((), [("x", 3)], [("v", 3)])
    V, x = r.sym("v", 3), r.vec("x", 3)
    R = pp.dot(x, x, V)
    xdot = pp.sub(pp.matvec(V, x), pp.scale(R, x))
    Wdot, rhs = -pp.dot(x, xdot, V), -pp.dot(xdot, xdot)
    assert not (Wdot - rhs + R**2 * (1 - pp.dot(x, x)))
    assert Wdot - rhs - R**2 * (1 - pp.dot(x, x))
    assert Wdot - rhs + R**2 * (1 - pp.dot(x, x)) + r.const(1, 10**9) * x[0] ** 4


def _as_ring(r, expr):
    """A SymPy expression in the ring (its symbols carry assumptions; the ring's are plain, same names)."""
    plain = sp.expand(expr).xreplace({s: sp.Symbol(s.name) for s in expr.free_symbols})
    return r.R.from_expr(plain) if plain != 0 else r.R(0)


def test_ring_field_equals_the_sympy_field_as_polynomials():
    r = _ring()
    P = sc.symmetric_matrix("p", 3)
    a = [sp.Symbol(f"a_{j}") for j in range(3)]
    Ys = [sc.vector(f"y{i}", 3) for i in range(3)]
    for causal in (False, True):
        want = sc.field(Ys, [(P, None)], W=P, causal=causal, weights=[[a] * 3])
        got = pp.field([r.vec(f"y{i}", 3) for i in range(3)], [[r[f"a_{j}"] for j in range(3)]] * 3,
                       W=r.sym("p", 3), causal=causal)
        for fw, fg in zip(want, got):
            assert [_as_ring(r, e) for e in fw] == fg
    # U in place of the identity (no W): the consensus paper's (7) with value matrix U = P
    want = sc.field(Ys, [(sp.zeros(3), P)], weights=[[a] * 3])
    got = pp.field([r.vec(f"y{i}", 3) for i in range(3)], [[r[f"a_{j}"] for j in range(3)]] * 3, U=r.sym("p", 3))
    assert [[_as_ring(r, e) for e in f] for f in want] == got


def test_ring_arithmetic_is_exact_at_rational_points():
    r = _ring()
    rng = random.Random(7)
    u, y0 = r.vec("u", 3), r.vec("y0", 3)
    P = r.sym("p", 3)
    e = pp.dot(u, y0, P) ** 2 - r.const(1, 3) * pp.dot(u, u)
    point = {g: Fraction(rng.randint(-9, 9), rng.randint(1, 9)) for g in r.R.gens}
    vals = {str(g): v for g, v in point.items()}
    Pm = [[vals[f"p_{min(i, j)}{max(i, j)}"] for j in range(3)] for i in range(3)]
    uu, yy = [vals[f"u_{i}"] for i in range(3)], [vals[f"y0_{i}"] for i in range(3)]
    quad = sum(uu[i] * Pm[i][j] * yy[j] for i in range(3) for j in range(3))
    want = quad**2 - Fraction(1, 3) * sum(x * x for x in uu)
    got = e.evaluate([(g, r.QQ(v.numerator, v.denominator)) for g, v in point.items()])
    assert Fraction(int(got.numerator), int(got.denominator)) == want


@pytest.mark.parametrize("perturb", ["field", "dot"])
def test_a_perturbed_derivation_is_refused_and_its_certificate_too(monkeypatch, fresh_caches, perturb):
    if perturb == "field":
        true_field = pp.field

        def field(Y, weights, **kw):  # drops the projection onto the tangent space of token 0
            out = true_field(Y, weights, **kw)
            out[0] = pp.add(out[0], pp.scale(weights[0][0], pp.scale(pp.dot(Y[0], Y[0], kw.get("W")), Y[0])))
            return out

        monkeypatch.setattr(pp, "field", field)
        refused = {"consensus:theorem_3_2", "consensus:theorem_4_1"}
    else:
        true_dot = pp.dot

        def dot(a, b, W=None):  # a^T b + 10^-9 a_0^2: no longer the inner product
            return true_dot(a, b, W) + a[0] * a[0] * a[0].ring(a[0].ring.domain(1, 10**9))

        monkeypatch.setattr(pp, "dot", dot)
        refused = set(NAMES)
    for name in NAMES:
        assert pp.proved(name) == (name not in refused), name
        ok, reason = core.explain(identities.identity_certificate(name))
        assert ok == (name not in refused), name
        assert ok or "does not hold" in reason


def test_unknown_or_malformed_identity_names_are_refused():
    for data in ({"identity": "consensus:theorem_9_9"}, {"identity": 3}, {}):
        assert not identities._check_symbolic_identity(data)


def test_the_checker_does_not_run_the_sympy_derivation(monkeypatch, fresh_caches):
    """The checker's decision is the ring derivation's: with every SymPy run of :data:`identities.RUNS`
    broken, the attention identities are still proved (and the SymPy runs are never called)."""
    identities.results.cache_clear()

    def broken():
        raise AssertionError("the checker ran the SymPy derivation")

    monkeypatch.setattr(identities, "RUNS", {name: broken for name in identities.RUNS})
    for name in NAMES:
        assert identities.proved(name)
        assert core.explain(identities.identity_certificate(name)) == (True, "")
    identities.results.cache_clear()


def test_an_empty_derivation_proves_nothing(monkeypatch, fresh_caches):
    monkeypatch.setitem(pp.IDENTITIES, "consensus:lemma_6_1", lambda: (("b_dot", []),))
    assert not pp.proved("consensus:lemma_6_1")
    pp.proofs.cache_clear()
    monkeypatch.setitem(pp.IDENTITIES, "consensus:lemma_6_1", lambda: ())
    assert not pp.proved("consensus:lemma_6_1")


def _renamed(r, expr, rename):
    plain = sp.expand(expr).xreplace({s: sp.Symbol(rename(s.name)) for s in expr.free_symbols})
    return r.R.from_expr(plain) if plain != 0 else r.R(0)


def _v_name(name):  # the SymPy derivation names V's entries v_i_j, the ring v_ij
    parts = name.split("_")
    return f"v_{parts[1]}{parts[2]}" if parts[0] == "v" and len(parts) == 3 else name


def test_ring_lyapunov_derivatives_equal_the_sympy_ones():
    """The ring builds the same polynomials as the SymPy derivation of Lemmas 1 and 5 (W-dot and the
    speed term), so both decide the same statement; only the zero test differs."""
    from flowcert.symbolic.attention import multistability as sm

    r = pp._Ring((), [("x", 3)], [("v", 3)])
    V, x = r.sym("v", 3), r.vec("x", 3)
    R = pp.dot(x, x, V)
    xdot = pp.sub(pp.matvec(V, x), pp.scale(R, x))
    got = sm.oja_lyapunov_identity(3)
    rename = lambda n: f"x_{n[1:]}" if n[0] == "x" else _v_name(n)  # noqa: E731
    assert _renamed(r, got["Wdot"], rename) == -pp.dot(x, xdot, V)
    assert _renamed(r, got["rhs"], rename) == -pp.dot(xdot, xdot)

    n, d = 3, 2
    r = pp._Ring((), [(f"x{i}", d) for i in range(n)], [("v", d)])
    V, xs = r.sym("v", d), [r.vec(f"x{i}", d) for i in range(n)]
    xbar = pp.scale(r.const(1, n), pp.add(*xs))
    y = pp.matvec(V, xbar)
    xdots = [pp.sub(y, pp.scale(pp.dot(xi, y), xi)) for xi in xs]
    got = sm.multiagent_lyapunov_identity(n, d)
    assert _renamed(r, got["Wdot"], _v_name) == -pp.dot(xbar, pp.scale(r.const(1, n), pp.add(*xdots)), V)
    assert _renamed(r, got["rhs"], _v_name) == -r.const(1, n) * sum((pp.dot(u, u) for u in xdots), r.const(0))
