"""A view for every object (issue 47, item 3): ``_repr_html_`` of Theorem, Hypothesis, Certificate,
Simulation and a recheck outcome is small (at most 20 KB), well-formed, shows the statement in MathML
(no raw TeX left), summarises arrays instead of dumping them, and marks an ``applies`` that rests on
an ``assumed`` hypothesis differently from a certified one."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest

import flowcert
from flowcert import display
from flowcert.catalogue import Theorem
from flowcert.certificates.core import Certificate, Hypothesis
from flowcert.recheck import DocumentCheck, Recheck, Refusal
from flowcert.result import Result, Simulation

README = {"A": -np.eye(2), "B": np.eye(2) / 2, "V": -np.eye(2) / 5, "b": np.zeros(2), "mu0": np.ones(2),
          "Sigma0": np.eye(2)}
LIMIT = 20_000
TEX_COMMAND = re.compile(r"\\[A-Za-z]+")


@pytest.fixture(scope="module")
def readme() -> flowcert.Result:
    return flowcert.verify("gaussian", README, simulate=True)


def _page(obj: Any) -> str:
    page = obj._repr_html_()
    assert isinstance(page, str) and len(page.encode()) <= LIMIT, (type(obj).__name__, len(page.encode()))
    ET.fromstring(page)  # well-formed: every text escaped
    return page


def _statement(page: str) -> str:
    m = re.search(r'<div class="statement">(.*?)</div>', page, re.S)
    assert m, "the view has a statement"
    return m.group(1)


def test_every_theorem_view_is_small_with_its_statement_in_mathml(readme: flowcert.Result) -> None:
    assert len(readme.theorems) >= 10
    for tid, t in readme.theorems.items():
        page = _page(t)
        statement = _statement(page)
        assert statement.startswith("<math") and TEX_COMMAND.search(statement) is None, (tid, statement[:200])
        assert tid in page and t.label in page


def test_hypotheses_and_certificates_of_the_readme_have_views(readme: flowcert.Result) -> None:
    seen = 0
    for t in readme.theorems.values():
        for h in t.hypotheses:
            page = _page(h)
            assert h.status.value in page
            if h.certificate is not None:
                _page(h.certificate)
                seen += 1
    assert seen > 10
    sigma0 = readme.theorems["gaussian:prop-2.1"].hypotheses[1]
    assert sigma0.name == "Sigma0 >= 0"
    page = _page(sigma0)
    assert "<math" in page and "Sigma0 &gt;= 0" not in page and "Sigma0 >= 0" not in page
    cert = _page(sigma0.certificate)
    statement = _statement(cert)
    assert "<math" in statement and "Σ" in statement and TEX_COMMAND.search(statement) is None


def test_simulation_view_summarises_its_arrays(readme: flowcert.Result) -> None:
    _page(readme.simulation)
    t = np.linspace(0.0, 1.0, 10_000)
    mu = np.stack([t + 0.5, 2 * t], axis=1)
    sim = Simulation(t, {"mu": mu}, True, "ok", None, {"t_end": 1.0, "mu_final": mu[-1].tolist()})
    page = _page(sim)
    assert "(10000,)" in page and "(10000, 2)" in page
    assert f"{t[5000]:.6g}" not in page and f"{mu[5000, 0]:.6g}" not in page  # not dumped in full
    assert len(repr(sim)) < 1_000 and "(10000, 2)" in repr(sim)


def test_certificate_view_summarises_a_large_data_array() -> None:
    values = np.arange(10_000, dtype=float) + 0.123456
    cert = Certificate("psd", "params.Sigma0 is positive semidefinite", {"M": values.reshape(100, 100).tolist()},
                       subject={"M": "params.Sigma0"})
    page = _page(cert)
    assert "(100, 100)" in page and f"{values[5000]:.6g}" not in page and f"{values[0]:.6g}" in page
    assert len(page.encode()) < 5_000


def _theorem(status: str) -> Theorem:
    cert = Certificate("psd", "params.Sigma0 is positive semidefinite", {}, subject={"M": "params.Sigma0"})
    return Theorem("gaussian:prop-2.1", "Proposition 2.1", r"\dot\mu=(A+V)\mu",
                   [Hypothesis("Sigma0 >= 0", "holds", 1.0, "exact", cert),
                    Hypothesis("coefficients_continuous", status, None, "assumed by the user" if status == "assumed" else "")])


def test_an_assumed_applies_looks_different_from_a_certified_one() -> None:
    certified, assumed = _theorem("holds"), _theorem("assumed")
    assert certified.applies.value == assumed.applies.value == "applies"
    page_c, page_a = _page(certified), _page(assumed)
    assert '<b class="applies">applies</b>' in page_c and "assuming" not in page_c
    assert 'class="assumed-applies"' in page_a and "assuming" in page_a and '<b class="applies">' not in page_a
    rule = re.search(r"\.flowcert-result \.assumed-applies\{([^}]*)\}", page_a)
    green = re.search(r"\.flowcert-result \.applies,[^{]*\{([^}]*)\}", page_a)
    assert rule and green and rule.group(1) != green.group(1) and "#d9f2d9" not in rule.group(1)
    # the result table marks it the same way
    doc = {"flowcert": "0", "system": "gaussian", "params": {}, "theorems": [assumed.to_json()]}
    table = Result.from_document(doc)._repr_html_()
    assert 'class="assumed-applies"' in table and "assuming" in table


def test_recheck_views_cut_long_lists() -> None:
    refusals = [Refusal("doc.json", i, f"theorems[{i}].hypotheses[0].certificate", "psd", "bad data")
                for i in range(10_000)]
    r = Recheck(["doc.json"], certificates=10_001, accepted=1, refused=refusals)
    page = _page(r)
    assert "refused" in page and "theorems[0].hypotheses[0].certificate" in page
    assert "theorems[5000]" not in page and f"{10_000 - display.ARRAY_ENTRIES} more" in page
    ok = _page(Recheck(["doc.json"], certificates=2, accepted=2, bound=2))
    assert 'class="holds">re-checked' in ok
    one = _page(DocumentCheck(bound=1, unbound=1, holds_unbound=["theorems[0].hypotheses[0]"]))
    assert "theorems[0].hypotheses[0]" in one and "not all re-checked" in one


def test_summaries_never_grow_with_the_value() -> None:
    big = {"x": np.ones((300, 300)), "nested": {"deep": {"deeper": list(range(10_000))}}, "text": "y" * 10_000}
    out = display.summarise(big)
    assert len(out) < 600 and "(300, 300)" in out
    assert display.summarise([1.0, 2.0]) == "[1, 2]" and display.summarise(np.eye(2)) == "[[1, 0], [0, 1]]"
