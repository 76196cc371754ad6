"""The ``flowcert`` command line as a contract (docs/design.md, "The command line and JSON contract"), run as a subprocess.

Expected numbers are derived by hand from the parameter files, never taken from a previous run:

* ``tests/data/gaussian_stable_2d.json``: V > 0, B < 0 give tr(V Sigma B Sigma) <= 0, so
  d/dt tr Sigma <= lambda_max(A + A^T) tr Sigma with A + A^T < 0: Sigma -> 0 exponentially, and then
  mu -> -(A + V)^{-1} b (A + V is triangular with diagonal -0.7, -1.8).
* ``cli/gaussian_blowup_2d.json``: V = B = I, A = diag(1, 2), Sigma0 = I stays diagonal with
  s_i' = 2 a_i s_i + 2 s_i^2, which blows up first at log(1 + a/s)/(2a) = log(3)/4 (a = 2, s = 1);
  eq. (20) with alpha = 2, beta = 2 * 1 * 1 / 2 = 1, y0 = 2 gives log(2)/2.
* ``cli/gaussian_certified_zero_2d.json``: V = -I, B = I, A = -I (Thm 4.7(2): Sigma -> 0), then
  mu' = -2 mu + b, mu -> b/2.
* ``cli/gaussian_bistable_pd_2d.json``: the note's erratum-2 example, started near its stable PD
  equilibrium [[1, -2], [-2, 5]], where A + V Sigma B = 0, so mu -> -V^{-1} b.
* ``cli/gaussian_rounding_sym_part.json``: fl(0.1 + 0.7) < 0.1 + 0.7, so A + A^T is exactly
  indefinite although its floating-point rounding is PSD.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import flowcert
from exact_helpers import exact_pd, exact_psd, qmat
from flowcert.certificates import core
from flowcert.recheck import recheck_document

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
CLI = DATA / "cli"

STABLE = DATA / "gaussian_stable_2d.json"
BLOWUP = CLI / "gaussian_blowup_2d.json"
ZERO = CLI / "gaussian_certified_zero_2d.json"
BISTABLE = CLI / "gaussian_bistable_pd_2d.json"
ROUNDING = CLI / "gaussian_rounding_sym_part.json"

STATUSES = {"holds", "fails", "unknown"}
SIGMA_REGIMES = {"converges_pd", "converges_zero", "converges_singular", "blows_up", "bounded", "unbounded", "unknown"}
MU_REGIMES = {"converges", "diverges", "unknown"}
ID = re.compile(r"^(gaussian|multistability|kpflow|consensus):(prop|lemma|thm|cor|obs)-\d+(\.\d+)*$")


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flowcert", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


_PENDING: dict[tuple, subprocess.Popen] = {}


def _verify_args(path: Path, flags: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "flowcert", "verify", "gaussian", "--params", str(path), "--json", *flags]


def _start(path: Path, *flags: str) -> None:
    key = (path, flags)
    if key not in _PENDING:
        _PENDING[key] = subprocess.Popen(_verify_args(path, flags), cwd=ROOT, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)


def _start_documents() -> None:
    """Start every verify run the module needs at once (they are independent subprocesses)."""
    for path, flags in PREFETCH:
        _start(path, *flags)


@lru_cache(maxsize=None)
def verify(path: Path, *flags: str, timeout: float = 300) -> dict:
    if (path, flags) in PREFETCH:
        _start_documents()
    _start(path, *flags)
    proc = _PENDING[(path, flags)]
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"flowcert verify {path.name} {' '.join(flags)} did not finish in {timeout} s")
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    doc = json.loads(out)  # the whole of stdout is one JSON document
    assert isinstance(doc, dict)
    return doc


@pytest.fixture(scope="module", autouse=True)
def _reap_subprocesses():
    yield
    for proc in _PENDING.values():
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def certificates_in(obj):
    if isinstance(obj, dict):
        if {"kind", "claim", "data"} <= obj.keys():
            yield obj
        for value in obj.values():
            yield from certificates_in(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from certificates_in(value)


# ---------------------------------------------------------------------------------------------
# the documents
# ---------------------------------------------------------------------------------------------

PREFETCH = [(BLOWUP, ("--simulate",)), (STABLE, ("--simulate",)), (ZERO, ("--simulate",)), (BISTABLE, ("--simulate",)),
            (ROUNDING, ())]

DOCS = {
    "stable+simulate": lambda: verify(STABLE, "--simulate"),
    "blowup+simulate": lambda: verify(BLOWUP, "--simulate"),
    "certified_zero+simulate": lambda: verify(ZERO, "--simulate"),
    "bistable+simulate": lambda: verify(BISTABLE, "--simulate", timeout=120),
    "rounding": lambda: verify(ROUNDING),
}


@pytest.mark.parametrize("name", sorted(DOCS))
def test_verify_json_document_schema(name):
    doc = DOCS[name]()
    assert {"flowcert", "system", "params", "theorems", "regime"} <= doc.keys()
    assert doc["flowcert"] == flowcert.__version__
    assert doc["system"] == "gaussian"
    ids = [t["id"] for t in doc["theorems"]]
    assert len(ids) == len(set(ids))
    assert "gaussian:prop-2.1" in ids
    for th in doc["theorems"]:
        assert {"id", "source", "applies", "hypotheses", "prediction", "cross_check"} <= th.keys()
        assert ID.match(th["id"]), th["id"]
        assert th["source"]
        assert th["applies"] in (True, False, None)
        statuses = []
        for h in th["hypotheses"]:
            assert {"name", "status", "margin", "method", "certificate"} <= h.keys()
            assert h["status"] in STATUSES, h
            assert h["margin"] is None or (isinstance(h["margin"], (int, float)) and math.isfinite(h["margin"]))
            assert isinstance(h["method"], str)
            assert h["certificate"] is None or isinstance(h["certificate"], dict)
            statuses.append(h["status"])
        # DESIGN: a result whose hypotheses fail is reported with applies false
        if "fails" in statuses:
            assert th["applies"] is False, th["id"]
        elif statuses and set(statuses) == {"holds"}:
            assert th["applies"] is True, th["id"]
        assert {"status", "details"} <= th["cross_check"].keys()
        assert th["cross_check"]["status"] in {"agrees", "disagrees", "skipped"}
        assert isinstance(th["cross_check"]["details"], dict)

    reg = doc["regime"]
    assert {"Sigma", "mu", "Sigma_inf", "mu_inf", "blowup_time_upper_bound", "basis"} <= reg.keys()
    assert reg["Sigma"] in SIGMA_REGIMES and reg["mu"] in MU_REGIMES
    assert reg["basis"] in {"certified", "simulation"}
    d = len(doc["params"]["Sigma0"])
    if reg["Sigma_inf"] is not None:
        assert np.array(reg["Sigma_inf"], dtype=float).shape == (d, d)
    if reg["mu_inf"] is not None:
        assert np.array(reg["mu_inf"], dtype=float).shape == (d,)
    b = reg["blowup_time_upper_bound"]
    assert b is None or (isinstance(b, float) and b > 0)
    assert ("simulation" in doc) == (name.endswith("+simulate"))


@pytest.mark.parametrize("name", sorted(DOCS))
def test_every_embedded_certificate_rechecks(name):
    # the system modules register their checkers with core on import
    import flowcert.certificates.gaussian  # noqa: F401
    import flowcert.certificates.spectrum  # noqa: F401

    doc = DOCS[name]()
    certs = list(certificates_in(doc))
    check = recheck_document(doc)  # each certificate with its subject filled in from the document
    nested = sum(1 for c in certs for _ in certificates_in(c["data"]))  # checked by their outer certificate
    assert not check.refused and len(check.records) == len(certs) - nested
    assert all(ok for _, _, ok in check.records)
    assert certs  # at least Sigma0 >= 0 carries one
    for th in doc["theorems"]:
        for h in th["hypotheses"]:
            if h["certificate"] is not None:
                assert h["status"] in {"holds", "fails"}


RECHECK_ALONE = """
import json, sys
from flowcert.certificates import recheck_document
docs = json.load(sys.stdin)
out = []
for doc in docs:
    check = recheck_document(doc)
    out += [[kind, ok] for _, kind, ok in check.records] + [["refused: " + why, False] for _, _, why in check.refused]
print(json.dumps(out))
"""


def test_core_recheck_alone_knows_every_certificate_kind():
    """A user holding only the JSON documents and ``flowcert.certificates`` must be able to re-check them."""
    docs = [DOCS[name]() for name in ("stable+simulate", "certified_zero+simulate", "blowup+simulate")]
    kinds = {c["kind"] for doc in docs for c in certificates_in(doc)}
    assert {"psd", "pd"} <= kinds
    proc = subprocess.run([sys.executable, "-c", RECHECK_ALONE], input=json.dumps(docs), cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rejected = sorted({kind for kind, ok in json.loads(proc.stdout) if ok is not True})
    assert not rejected, f"recheck_document in a fresh interpreter rejects {rejected}"


@pytest.mark.parametrize("name", sorted(DOCS))
def test_definiteness_verdicts_match_exact_arithmetic(name):
    """Every definiteness hypothesis is about the exact matrices of the parameter file."""
    doc = DOCS[name]()
    raw = load({"stable+simulate": STABLE, "blowup+simulate": BLOWUP, "certified_zero+simulate": ZERO,
                "bistable+simulate": BISTABLE, "rounding": ROUNDING}[name])
    A, B, V, S0 = (qmat(raw[k]) for k in ("A", "B", "V", "Sigma0"))
    H = A + A.T
    truth = {"V > 0": exact_pd(V), "-V > 0": exact_pd(-V), "B > 0": exact_pd(B), "Sigma0 > 0": exact_pd(S0),
             "Sigma0 >= 0": exact_psd(S0), "A + A^T >= 0": exact_psd(H), "-(A + A^T) >= 0": exact_psd(-H)}
    checked = 0
    for th in doc["theorems"]:
        for h in th["hypotheses"]:
            if h["name"] in truth:
                expected = "holds" if truth[h["name"]] else "fails"
                assert h["status"] == expected, f"{th['id']}: {h['name']} is {h['status']}, exactly {expected}"
                checked += 1
    assert checked >= 3


def test_params_echo_the_file_exactly():
    doc = verify(STABLE)
    raw = load(STABLE)
    for key in ("A", "B", "V", "b", "mu0", "Sigma0"):
        assert np.array_equal(np.array(doc["params"][key], dtype=float), np.array(raw[key], dtype=float)), key
    assert doc["params"]["t_end"] == raw["t_end"]


def test_stable_file_regime():
    doc = verify(STABLE, "--simulate")
    raw = load(STABLE)
    A, V, b = (np.array(raw[k], dtype=float) for k in ("A", "V", "b"))
    reg = doc["regime"]
    assert reg["Sigma"] == "converges_zero"
    assert reg["mu"] == "converges"
    np.testing.assert_allclose(reg["mu_inf"], -np.linalg.solve(A + V, b), rtol=1e-9, atol=1e-12)
    assert reg["blowup_time_upper_bound"] is None


def test_blowup_regime_and_simulation():
    doc = verify(BLOWUP, "--simulate")
    reg, sim = doc["regime"], doc["simulation"]
    assert reg["Sigma"] == "blows_up"
    assert reg["basis"] == "certified"
    bound = reg["blowup_time_upper_bound"]
    hand_bound = math.log(2) / 2  # eq. (20): alpha = 2, beta = 1, y0 = 2
    assert math.isfinite(bound) and bound >= hand_bound * (1 - 1e-12)
    assert bound == pytest.approx(hand_bound, rel=1e-6)
    true_time = math.log(3) / 4  # s2' = 4 s2 + 2 s2^2, s2(0) = 1
    assert {"t_end", "blowup_time", "mu_final", "Sigma_final", "agrees"} <= sim.keys()
    tb = sim["blowup_time"]
    assert isinstance(tb, float)
    assert tb <= bound
    assert true_time * (1 - 1e-3) <= tb <= true_time * (1 + 1e-9)
    assert sim["t_end"] == pytest.approx(tb)
    assert sim["agrees"] is True
    assert sim["mu_final"] == [0.0, 0.0]  # mu0 = 0, b = 0: mu stays 0
    S = np.array(sim["Sigma_final"])
    assert S.shape == (2, 2) and abs(S[0, 1]) <= 1e-12 * abs(S).max() and S[1, 1] > 1e6
    th = next(t for t in doc["theorems"] if t["id"] == "gaussian:thm-4.8.1")
    assert th["applies"] is True
    assert th["prediction"]["blowup_time_upper_bound"] == pytest.approx(bound, rel=1e-12)


def test_certified_zero_regime():
    doc = verify(ZERO)
    raw = load(ZERO)
    reg = doc["regime"]
    assert reg["Sigma"] == "converges_zero"
    assert reg["basis"] == "certified"
    assert np.array_equal(np.array(reg["Sigma_inf"], dtype=float), np.zeros((2, 2)))
    assert reg["mu"] == "converges"
    np.testing.assert_allclose(reg["mu_inf"], np.array(raw["b"]) / 2, rtol=1e-12, atol=1e-15)
    th = next(t for t in doc["theorems"] if t["id"] == "gaussian:thm-4.7.2")
    assert th["applies"] is True


def test_lemma_3_1_cross_check_does_not_disagree_on_a_contracting_system():
    """Lemma 3.1 is a theorem; its simulation check must not report a disagreement for V = -I, B = I, A = -I."""
    doc = verify(ZERO, "--simulate")
    th = next(t for t in doc["theorems"] if t["id"] == "gaussian:lemma-3.1")
    assert th["cross_check"]["status"] == "agrees", th["cross_check"]["details"]


def test_bistable_example_converges_to_its_pd_equilibrium():
    doc = verify(BISTABLE, "--simulate", timeout=120)
    reg = doc["regime"]
    S_inf = np.array([[1.0, -2.0], [-2.0, 5.0]])
    assert reg["Sigma"] == "converges_pd"
    np.testing.assert_allclose(reg["Sigma_inf"], S_inf, atol=1e-6)
    V, b = np.diag([-5.0, -1.0]), np.array([1.0, 1.0])
    assert reg["mu"] == "converges"
    np.testing.assert_allclose(reg["mu_inf"], -np.linalg.solve(V, b), atol=1e-6)  # A + V S_inf B = 0
    # Table 1 row 2 (Re spec A <= 0 => Sigma -> 0) is false here: Thm 4.7(2) must not apply
    th = next(t for t in doc["theorems"] if t["id"] == "gaussian:thm-4.7.2")
    assert th["applies"] is False


def test_simulate_json_and_plot(tmp_path):
    png = tmp_path / "out.png"
    proc = run("simulate", "gaussian", "--params", str(STABLE), "--json", "--t-end", "25", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {"flowcert", "system", "params", "simulation"} <= doc.keys()
    sim = doc["simulation"]
    assert sim["t_end"] == 25.0
    assert sim["blowup_time"] is None
    raw = load(STABLE)
    A, V, b = (np.array(raw[k], dtype=float) for k in ("A", "V", "b"))
    np.testing.assert_allclose(sim["mu_final"], -np.linalg.solve(A + V, b), atol=1e-6)
    assert np.abs(np.array(sim["Sigma_final"])).max() < 1e-6
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_help_exits_zero():
    proc = run("--help")
    assert proc.returncode == 0
    assert "verify" in proc.stdout and "simulate" in proc.stdout
    script = Path(sys.executable).with_name("flowcert")
    if script.exists():
        proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and "verify" in proc.stdout


BAD_INPUTS = {
    "missing file": (["verify", "gaussian", "--params", "tests/data/no_such_file.json", "--json"], "no_such_file"),
    "unknown system": (["verify", "transformerz", "--params", str(STABLE), "--json"], "transformerz"),
    "indefinite Sigma0": (["verify", "gaussian", "--params", "tests/data/malformed/Sigma0_indefinite.json", "--json"],
                          "Sigma0"),
    "duplicate key": (["verify", "gaussian", "--params", "tests/data/malformed/duplicate_key.json", "--json"], "A"),
    "NaN entry": (["verify", "gaussian", "--params", "tests/data/malformed/B_nan.json", "--json"], "B"),
    "not JSON": (["simulate", "gaussian", "--params", "tests/data/malformed/not_json.json", "--json"], "JSON"),
    "negative --t-end": (["simulate", "gaussian", "--params", str(STABLE), "--t-end", "-1", "--json"], "t-end"),
}


@pytest.fixture(scope="module")
def bad_input_runs():
    """Run every bad-input command concurrently; they only parse and fail."""
    procs = {case: subprocess.Popen([sys.executable, "-m", "flowcert", *args], cwd=ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for case, (args, _) in BAD_INPUTS.items()}
    out = {}
    for case, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        out[case] = (proc.returncode, stdout, stderr)
    return out


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line(case, bad_input_runs):
    returncode, stdout, stderr = bad_input_runs[case]
    mention = BAD_INPUTS[case][1]
    assert returncode == 2, (returncode, stderr)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert mention in lines[0]
    assert stdout == ""


@pytest.mark.slow
def test_verify_simulate_on_the_stable_file():
    doc = verify(STABLE, "--simulate")
    raw = load(STABLE)
    A, V, b = (np.array(raw[k], dtype=float) for k in ("A", "V", "b"))
    sim = doc["simulation"]
    assert sim["t_end"] == raw["t_end"] and sim["blowup_time"] is None
    assert sim["agrees"] is True
    np.testing.assert_allclose(sim["mu_final"], -np.linalg.solve(A + V, b), atol=1e-6)
    assert np.abs(np.array(sim["Sigma_final"])).max() < 1e-6
    prop = next(t for t in doc["theorems"] if t["id"] == "gaussian:prop-2.1")
    assert prop["cross_check"]["status"] == "agrees", prop["cross_check"]["details"]
