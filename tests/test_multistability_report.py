"""The multistability report section (report contract) and the §6 reproductions: quick section by
default, the full-size reproductions behind the slow mark (``--full``)."""

from __future__ import annotations

import re

import pytest
import torch

from flowcert.reports import multistability as rm

torch.set_num_threads(1)


def test_quick_section_follows_the_report_contract(tmp_path):
    s = rm.section(tmp_path, quick=True)
    assert set(s) >= {"title", "markdown", "theorems", "figures"}
    for f in s["figures"]:
        assert (tmp_path / f).stat().st_size > 1000
        assert f"]({f})" in s["markdown"]
    ids = {t["id"] for t in s["theorems"]}
    assert {"multistability:thm-2", "multistability:lemma-1", "multistability:obs-D2"} <= ids
    th = {t["id"]: t for t in s["theorems"]}
    assert th["multistability:thm-2"]["applies"] is True
    assert th["multistability:thm-2"]["cross_check"]["status"] == "agrees"
    assert "Certified-unstable points reached: 0" in s["markdown"]
    # the printed (9) is wrong on some random blocks, the corrected one on none
    m = re.search(r"printed form gives the wrong verdict (\d+) times, the corrected form (\d+) times", s["markdown"])
    assert m and int(m.group(1)) > 0 and int(m.group(2)) == 0


def test_example_3a_only_v1_or_vd_and_vd_needs_dominant_lambda_d():
    ex = rm.example3a(6, seed=11)
    assert ex["with_interior_k"] == 0 and ex["vd_needs_|lambda_d|>lambda_1"]
    assert all(r["per_k"][0] >= 2 for r in ex["rows"])  # the +-v1 consensus pair is always stable
    assert ex["unknown"] == 0


@pytest.mark.slow
def test_full_reproductions():
    ex = rm.example3a(100)
    assert ex["with_interior_k"] == 0 and ex["vd_needs_|lambda_d|>lambda_1"] and ex["min"] >= 2
    ex3b = rm.example3b(100)
    assert all(c == 0 for c in ex3b["instances_with_stable_at_k"][1:-1])
    ex2 = rm.example2(12, 20, 20, 100)
    assert ex2["all_agree"]
