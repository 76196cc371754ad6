"""The consensus report section honours the report contract (reports/<paper>.py)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("flowcert.attention.params", reason="the attention model core (branch attn) is not merged here")

from flowcert.reports import consensus as rep  # noqa: E402


def test_section_contract(tmp_path):
    sec = rep.section(tmp_path, quick=True)
    assert set(sec) == {"title", "markdown", "theorems", "figures"}
    for name in sec["figures"]:
        assert (tmp_path / name).is_file() and (tmp_path / name).stat().st_size > 1000
    images = re.findall(r"\]\(([^)\s]+\.png)\)", sec["markdown"])
    assert sorted(images) == sorted(sec["figures"])
    ids = [t["id"] for t in sec["theorems"]]
    assert len(ids) == len(set(ids)) == 10 and all(i.startswith("consensus:") for i in ids)
    assert all(t["applies"] is True and t["cross_check"]["status"] == "agrees" for t in sec["theorems"])
    # the four figures of the paper and the tetrahedron are there
    for key in ("fig1", "fig3", "fig4", "fig5", "tetrahedron"):
        assert any(key in f for f in sec["figures"])
    assert "non_consensus" in sec["markdown"] and "NONZERO" not in sec["markdown"]
    # display math on its own lines
    for line in sec["markdown"].splitlines():
        if "$$" in line:
            assert line.startswith("$$") and line.endswith("$$")


@pytest.mark.slow
def test_fig5_full_size(tmp_path):
    """§7.4 at the paper's size: 50 tokens in R^500, two heads, causal, T = 300 (minutes of CPU)."""
    lines, names = rep._fig5_full(tmp_path, quick=False, full=True)
    text = "\n".join(lines)
    assert (tmp_path / names[0]).is_file()
    m = re.search(r"(\d+) of (\d+) runs completed", text)
    assert m and m.group(1) == m.group(2)
    finals = [float(x) for x in re.search(r"final \$E\$: ([^;]+);", text).group(1).split(", ")]
    assert max(finals) < 1e-6
