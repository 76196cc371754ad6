"""How a :class:`~flowcert.result.Result` shows itself in Jupyter: a compact styled table.

One row per theorem: its id (with the paper's label and title), the verdict (``applies`` /
``inapplicable`` / ``undecided``), the cross-check (``agrees`` / ``disagrees`` / ``skipped``) and the
hypotheses folded in a ``<details>`` element whose summary counts them and names the one that decides
a theorem that does not apply. Long texts are cut (:data:`TEXT_CAP` characters) and certificates are
not shown (they are in :meth:`~flowcert.result.Result.to_json`), so the page stays small whatever
the size of the matrices: a few kilobytes per theorem at most. The markup is well-formed XML; every
text is escaped.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ARRAY_ENTRIES", "MAPPING_KEYS", "RESULT_STYLE", "TEXT_CAP", "certificate_html", "hypothesis_html", "object_html",
           "recheck_html", "result_html", "result_markdown", "simulation_html", "summarise", "table_html",
           "theorem_html", "verdict_badge", "word_badge"]

#: Longest method / detail text shown in the table (characters); the full text is in the JSON.
TEXT_CAP = 100
#: Size the page aims to stay under (bytes); past it, the per-hypothesis notes are left out.
PAGE_BUDGET = 19_000

#: The style sheet of a result's table (``<style>`` of :func:`result_html`; the verdict words' colours).
RESULT_STYLE = (
    ".flowcert-result{font:13px/1.35 system-ui,-apple-system,'Segoe UI',sans-serif;max-width:78em}"
    ".flowcert-result table{border-collapse:collapse;width:100%;margin:4px 0}"
    ".flowcert-result th,.flowcert-result td{border-bottom:1px solid #d8d8d8;padding:3px 8px;text-align:left;"
    "vertical-align:top}"
    ".flowcert-result th{background:#f4f4f4;font-weight:600}"
    ".flowcert-result b{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;font-weight:600;"
    "white-space:nowrap}"
    ".flowcert-result .applies,.flowcert-result .holds,.flowcert-result .agrees,.flowcert-result .decided"
    "{background:#d9f2d9;color:#145214}"
    ".flowcert-result .inapplicable,.flowcert-result .fails,.flowcert-result .disagrees"
    "{background:#f9d6d6;color:#7d1212}"
    ".flowcert-result .undecided,.flowcert-result .unknown{background:#fcefc4;color:#634b00}"
    ".flowcert-result tr.look td:first-child{border-left:3px solid #c98a00}"
    ".flowcert-result .claim{color:#444}"
    ".flowcert-result .skipped{background:#ececec;color:#555}"
    ".flowcert-result .assumed{background:#dfe6fb;color:#1d3480}"
    ".flowcert-result small{color:#666;font-size:12px}"
    ".flowcert-result summary{cursor:pointer}"
    ".flowcert-result ul{margin:2px 0;padding-left:1.1em}"
)


def _cut(text: Any, cap: int = TEXT_CAP) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= cap else s[: cap - 1] + "…"


def word_badge(word: Any) -> str:
    """A verdict or status word (``applies``, ``holds``, ``agrees`` …) as its coloured badge (styled by :data:`RESULT_STYLE`)."""
    w = html.escape(str(word))
    return f'<b class="{w}">{w}</b>'


def _margin(m: Any) -> str:
    if isinstance(m, (int, float)) and not isinstance(m, bool):
        return f"margin {m:.3g}"
    return ""


def _hypotheses(t: Any, notes_on: bool = True, maths: bool = True) -> str:
    e = html.escape
    counts: dict[str, int] = {}
    for h in t.hypotheses:
        counts[h.status.value] = counts.get(h.status.value, 0) + 1
    summary = ", ".join(f"{n} {w}" for w, n in counts.items()) or "none"
    deciding = t.deciding
    if deciding is not None:
        summary += f" · deciding: {_cut(deciding.name, 60)}"
    items = []
    for h in t.hypotheses:
        notes = [x for x in (e(_margin(h.margin)), _prose(h.method, 48)) if x] if notes_on else []
        if notes_on and h.status.value != "holds" and h.detail:
            notes.append(_prose(h.detail))
        if notes_on and h.certificate is not None:
            notes.append(e(f"certificate: {_cut(h.certificate.kind, 30)}"))
        name = _hypothesis_name(h.name) if maths else e(_cut(h.name, 80))
        items.append(f"<li>{word_badge(h.status.value)} {name}"
                     + (f" <small>{' · '.join(notes)}</small>" if notes else "") + "</li>")
    return f"<details><summary>{e(summary)}</summary><ul>{''.join(items)}</ul></details>"


def look_here_first(t: Any) -> bool:
    """A theorem a reader should see first: its cross-check disagrees, or it is undecided."""
    return t.cross_check.status.value == "disagrees" or t.applies.json is None


def ordered(theorems: Any) -> list[Any]:
    """The theorems with those to look at first (:func:`look_here_first`) on top, each group in catalogue order."""
    items = list(theorems)
    return [t for t in items if look_here_first(t)] + [t for t in items if not look_here_first(t)]


def _theorem_row(t: Any, notes_on: bool = True, maths: bool = True, claims: bool = True) -> str:
    e = html.escape
    label = f"<br/><small>{_inline(t.label)}</small>" if t.label else ""
    claim = f'<br/><small class="claim">{_math(t.statement)}</small>' if claims and t.statement else ""
    look = ' class="look"' if look_here_first(t) else ""
    return (f"<tr{look}><td>{e(t.id)}{label}{claim}</td><td>{verdict_badge(t)}</td>"
            f"<td>{word_badge(t.cross_check.status.value)}</td><td>{_hypotheses(t, notes_on, maths)}</td></tr>")


def table_html(theorems: Any, notes_on: bool = True, maths: bool = True, claims: bool = True) -> str:
    """The ``<table>`` of verdicts, one row per theorem (hypotheses folded; ``notes_on``: with each
    hypothesis' margin, method and reason).

    Parameters
    ----------
    theorems : iterable of Theorem
        The theorems to show, in order (``result.theorems.values()``).
    notes_on : bool, default True
        Whether each hypothesis carries its notes (margin, method, the reason of one that does not
        hold, the certificate's kind); off, only its status and name are shown.
    maths : bool, default True
        Whether hypothesis names are shown as mathematics (MathML, :mod:`flowcert.catalogue_tex`);
        off, as their plain text.
    claims : bool, default True
        Whether each theorem's claim (its statement) is shown under its label, as MathML.

    Returns
    -------
    str
        One ``<table>`` element (well-formed XML, every text escaped), one row per theorem, those to
        look at first on top (:func:`ordered`: disagreeing cross-checks, undecided): id, label and its
        claim as MathML, verdict (an ``applies`` under an assumption marked, :func:`verdict_badge`),
        cross-check, and the hypotheses in a ``<details>`` element.
    """
    head = "".join(f"<th>{c}</th>" for c in ("theorem", "verdict", "cross-check", "hypotheses"))
    body = "".join(_theorem_row(t, notes_on, maths, claims) for t in ordered(theorems))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def extras(result: Any) -> list[str]:
    """One line each for the regime and the simulation, where the result has them.

    Parameters
    ----------
    result : Result
        The result shown (a :class:`~flowcert.result.Result`); its ``regime`` and ``simulation`` are read.

    Returns
    -------
    list of str
        Plain-text lines (not escaped): ``regime: ...`` (Sigma, mu, basis and reason) when there is a
        regime, ``simulation: ...`` (end time, blow-up time, agreement, or why it was skipped) when
        there is a simulation; empty when there is neither.
    """
    from .systems import REGISTRY, get_system

    parts = {k: v for k, v in (("regime", result.regime),
                               ("simulation", None if result.simulation is None else result.simulation.record))
             if v is not None}
    return get_system(result.system).summary_lines(parts, detail=True) if result.system in REGISTRY else []


def result_html(result: Any) -> str:
    """The Jupyter rendering of a :class:`~flowcert.result.Result` (well-formed XML).

    Parameters
    ----------
    result : Result
        The result to render.

    Returns
    -------
    str
        A ``<div class="flowcert-result">`` with its style, a header line (system, status, the counts
        of verdicts and cross-checks), the table of :func:`table_html` and a list of the
        :func:`extras` and of the papers cited. Past :data:`PAGE_BUDGET` bytes the table is rebuilt
        without the per-hypothesis notes, and a line says where to find them.
    """
    e = html.escape
    c = result.counts()
    head = (f"<p><strong>flowcert verify {e(result.system)}</strong> {word_badge(result.status.value)} "
            f"<small>{len(result.theorems)} theorems: {c['applies']} apply, {c['inapplicable']} "
            f"inapplicable, {c['undecided']} undecided · cross-checks: {c['agrees']} agree, "
            f"{c['disagrees']} disagree, {c['skipped']} skipped</small></p>")
    papers = {t.paper.key: t.paper for t in result.theorems.values() if t.paper is not None}
    notes = [*extras(result), *(f"{p.key}: {p.title}, {p.authors} (arXiv {p.arxiv})" for p in papers.values())]
    table = table_html(result.theorems.values())
    if len(table) > PAGE_BUDGET:
        table = table_html(result.theorems.values(), notes_on=False)
        notes.append("margins, methods and reasons of the hypotheses: result.theorems[id].hypotheses or result.to_json()")
    if len(table) > PAGE_BUDGET:
        table = table_html(result.theorems.values(), notes_on=False, maths=False)
        notes.append("each hypothesis as mathematics: result.theorems[id] (its own view)")
    if len(table) > PAGE_BUDGET:
        table = table_html(result.theorems.values(), notes_on=False, maths=False, claims=False)
        notes.append("each theorem's claim: result.theorems[id] (its own view)")
    lines = "".join(f"<li>{e(_cut(x, 300))}</li>" for x in notes)
    return (f'<div class="flowcert-result"><style>{RESULT_STYLE}</style>{head}{table}'
            + (f"<ul>{lines}</ul>" if lines else "") + "</div>")


def result_markdown(result: Any) -> str:
    """A Markdown rendering: one row per theorem, the hypotheses counted and the deciding one named.

    Parameters
    ----------
    result : Result
        The result to render (a :class:`~flowcert.result.Result`).

    Returns
    -------
    str
        A bold header line (system and status), a table with columns theorem, verdict, cross-check
        and hypotheses (``|`` escaped, whitespace collapsed), then the :func:`extras` as a bullet
        list; ends with a newline.
    """

    def md(text: Any) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    lines = [f"**flowcert verify {md(result.system)}**: {result.status.value}", "",
             "| theorem | verdict | cross-check | hypotheses |", "|---|---|---|---|"]
    for t in result.theorems.values():
        counts: dict[str, int] = {}
        for h in t.hypotheses:
            counts[h.status.value] = counts.get(h.status.value, 0) + 1
        hyps = ", ".join(f"{n} {w}" for w, n in counts.items())
        if t.deciding is not None:
            hyps += f"; {t.deciding.status.value}: {t.deciding.name}"
        lines.append(f"| {md(t.id)} | {t.applies.value} | {t.cross_check.status.value} | {md(hyps)} |")
    lines += ["", *(f"- {md(x)}" for x in extras(result))]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# views of single objects: Theorem, Hypothesis, Certificate, Simulation, a recheck
# ---------------------------------------------------------------------------------------

#: Entries of an array or list shown in a view; the rest is summarised by shape, range and count.
ARRAY_ENTRIES = 4
#: Keys of a mapping shown in a view (the rest are counted).
MAPPING_KEYS = 10

_VIEW_STYLE = (
    ".flowcert-view{max-width:60em}"
    ".flowcert-view .statement{margin:4px 0 6px;overflow-x:auto}"
    ".flowcert-view dl{display:grid;grid-template-columns:max-content 1fr;gap:1px 10px;margin:2px 0}"
    ".flowcert-view dt{color:#555}.flowcert-view dd{margin:0}"
    ".flowcert-view code{font-size:12px;white-space:nowrap}"
    ".flowcert-result .assumed-applies{background:#fff;color:#1d3480;border:1px dashed #1d3480}"
)

_TEX_SPAN = re.compile(r"\$([^$]+)\$|`([^`]+)`")
#: Parameter names of the papers as TeX, for a certificate's subject (``params.Sigma0`` -> Σ₀).
_PARAM_TEX = {"Sigma0": r"\Sigma_0", "mu0": r"\mu_0", "Sigma": r"\Sigma", "mu": r"\mu", "A": "A", "B": "B",
              "V": "V", "b": "b", "Q": "Q", "K": "K", "W": "W", "U": "U", "D": "D"}
#: What a certificate of a linear-algebra kind proves of its matrix ``M`` (TeX, ``{M}`` its subject).
_KIND_TEX = {"psd": r"{M}\succeq0", "pd": r"{M}\succ0", "not_psd": r"{M}\not\succeq0", "not_pd": r"{M}\not\succ0",
             "not_symmetric": r"{M}\neq {M}^\top"}


def _math(tex: str, display: bool = False) -> str:
    """One formula as MathML (:func:`flowcert.mathml.mathml`); one it cannot convert as escaped code."""
    from .mathml import mathml

    try:
        return mathml(tex, display)
    except ValueError:
        return f'<code class="tex">{html.escape(tex)}</code>'


def _cut_prose(text: Any, cap: int) -> str:
    """:func:`_cut` that never cuts inside a ``$…$`` formula (it ends before the formula instead)."""
    s = _cut(text, cap)
    if not s.endswith("…"):
        return s
    body = s[:-1]
    if body.count("$") % 2:  # the cut fell inside a formula: drop the formula's opened part
        body = body[:body.rfind("$")].rstrip()
    return body + "…"


def _prose(text: Any, cap: int = TEXT_CAP) -> str:
    """A record's text (a method, a reason: prose with ``$…$`` formulas) as HTML, the formulas in
    MathML, cut to ``cap`` characters between formulas."""
    return _inline(_cut_prose(text, cap)) if text else ""


def _inline(markdown: str) -> str:
    """Markdown with inline ``$…$`` formulas and ``code`` spans as HTML: formulas in MathML, code in
    ``<code>``, the rest escaped."""
    out, pos = [], 0
    for m in _TEX_SPAN.finditer(markdown):
        out.append(html.escape(markdown[pos:m.start()]))
        out.append(_math(m.group(1)) if m.group(1) is not None else f"<code>{html.escape(m.group(2))}</code>")
        pos = m.end()
    out.append(html.escape(markdown[pos:]))
    return "".join(out)


def _hypothesis_name(name: str) -> str:
    """A hypothesis name as mathematics where :mod:`flowcert.catalogue_tex` has its TeX, else as code."""
    from .catalogue_tex import hypothesis_tex

    tex = hypothesis_tex(name)
    return _inline(tex) if tex else f"<code>{html.escape(_cut(name, 80))}</code>"


def _number(x: Any) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def summarise(value: Any, depth: int = 0, cap: int = TEXT_CAP) -> str:
    """A value in a few words: an array (or a list of numbers) longer than :data:`ARRAY_ENTRIES` by its
    shape, dtype, first entries and range, a mapping by its first :data:`MAPPING_KEYS` keys, text cut
    to :data:`TEXT_CAP` characters.

    Parameters
    ----------
    value : object
        Any value of a record: numbers, text, arrays, tensors, lists and mappings of them.
    depth : int, default 0
        Nesting level (below two levels a container is only named).
    cap : int, default TEXT_CAP
        Longest text shown (characters).

    Returns
    -------
    str
        Plain text (not escaped), at most a few hundred characters whatever the size of ``value``.
    """
    import numpy as np

    if value is None or isinstance(value, (bool, int, float, np.integer, np.floating)):
        return _number(float(value) if isinstance(value, np.floating) else value)
    if isinstance(value, str):
        return _cut(value, cap)
    if isinstance(value, Mapping):
        if depth >= 2:
            return f"{{{len(value)} keys}}"
        items = [f"{k}: {summarise(v, depth + 1)}" for k, v in list(value.items())[:MAPPING_KEYS]]
        more = len(value) - MAPPING_KEYS
        return "{" + ", ".join(items) + (f", … {more} more" if more > 0 else "") + "}"
    try:
        arr = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
    except Exception:  # an object numpy cannot hold: its type alone
        return f"<{type(value).__name__}>"
    if arr.dtype.kind in "biuf" and arr.ndim >= 1:
        flat = arr.ravel()
        if flat.size <= 2 * ARRAY_ENTRIES:  # small: every entry, nested as the array is
            return str(np.vectorize(lambda v: _number(v.item() if hasattr(v, "item") else v), otypes=[object])(arr)
                       .tolist()).replace("'", "")
        head = ", ".join(_number(float(v)) for v in flat[:ARRAY_ENTRIES])
        finite = flat[np.isfinite(flat)] if arr.dtype.kind == "f" else flat
        span = f", range [{_number(float(finite.min()))}, {_number(float(finite.max()))}]" if finite.size else ""
        return f"array {tuple(arr.shape)} {arr.dtype}: [{head}, …]{span}"
    if isinstance(value, (list, tuple)):
        if depth >= 2:
            return f"[{len(value)} items]"
        items = [summarise(v, depth + 1) for v in value[:ARRAY_ENTRIES]]
        return "[" + ", ".join(items) + (f", … {len(value) - ARRAY_ENTRIES} more" if len(value) > ARRAY_ENTRIES else "") + "]"
    return _cut(repr(value))


def _fields(rows: list[tuple[str, str]]) -> str:
    """A definition list of ``(name, html)`` rows (names escaped, values as given)."""
    return "<dl>" + "".join(f"<dt>{html.escape(k)}</dt><dd>{v}</dd>" for k, v in rows if v) + "</dl>"


def _keyed(mapping: Mapping[str, Any], cap: int = TEXT_CAP) -> str:
    """A definition list of a prediction or cross-check mapping: each key as mathematics where
    :mod:`flowcert.catalogue_tex` has its TeX (else as code), each value summarised (a text with its
    ``$…$`` formulas in MathML); at most
    :data:`MAPPING_KEYS` keys."""
    from .catalogue_tex import quantity_tex

    rows = []
    for k, v in list(mapping.items())[:MAPPING_KEYS]:
        tex = quantity_tex(str(k))
        name = _inline(tex) if tex else f"<code>{html.escape(str(k))}</code>"
        shown = _prose(v, cap) if isinstance(v, str) else _nested(v, cap) if isinstance(v, Mapping) else \
            html.escape(summarise(v, cap=cap))
        rows.append(f"<dt>{name}</dt><dd>{shown}</dd>")
    more = len(mapping) - MAPPING_KEYS
    if more > 0:
        rows.append(f"<dt>…</dt><dd>{more} more (to_json())</dd>")
    return "<dl>" + "".join(rows) + "</dl>"


def _nested(mapping: Mapping[str, Any], cap: int) -> str:
    """A mapping inside a prediction or cross-check, inline: its texts with their formulas in MathML."""
    items = [f"{html.escape(str(k))}: " + (_prose(v, cap) if isinstance(v, str) else html.escape(summarise(v, 1, cap)))
             for k, v in list(mapping.items())[:MAPPING_KEYS]]
    more = len(mapping) - MAPPING_KEYS
    return "{" + ", ".join(items) + (f", … {more} more" if more > 0 else "") + "}"


def _view(kind: str, body: str) -> str:
    return (f'<div class="flowcert-result flowcert-view flowcert-{kind}"><style>{RESULT_STYLE}{_VIEW_STYLE}</style>'
            f"{body}</div>")


def verdict_badge(theorem: Any) -> str:
    """The verdict of a theorem as a badge: an ``applies`` that rests on ``assumed`` hypotheses wears its
    own class (``assumed-applies``, outlined, not the green of a certified one) and says "assuming".

    Parameters
    ----------
    theorem : Theorem
        The theorem (its ``applies`` and ``assumptions`` are read).

    Returns
    -------
    str
        One ``<b>`` element (escaped text).
    """
    word = theorem.applies.value
    assumed = list(getattr(theorem, "assumptions", ()))
    if word == "applies" and assumed:
        names = ", ".join(_cut(h.name, 40) for h in assumed)
        return f'<b class="assumed-applies" title="{html.escape(names)}">applies, assuming {len(assumed)}</b>'
    return word_badge(word)


def hypothesis_html(h: Any, *, certificate: bool = True) -> str:
    """The notebook view of a :class:`~flowcert.certificates.core.Hypothesis`: status, the hypothesis as
    mathematics, margin, method, reason, and its certificate's kind and claim (``certificate``).

    Parameters
    ----------
    h : Hypothesis
        The hypothesis.
    certificate : bool, default True
        Whether to show the certificate (kind, checker, claim).

    Returns
    -------
    str
        A ``<div>`` (well-formed XML, every text escaped), a kilobyte or two.
    """
    rows = [("margin", html.escape(_margin(h.margin).removeprefix("margin "))),
            ("method", _prose(h.method)), ("detail", _prose(h.detail, 300))]
    if certificate and h.certificate is not None:
        c = h.certificate
        rows.append(("certificate", f"<code>{html.escape(c.kind)}</code> re-checked by <code>"
                                    f"{html.escape(c.checker)}</code>: {html.escape(_cut(c.claim, 200))}"))
    head = f"<p>{word_badge(h.status.value)} {_hypothesis_name(h.name)}</p>"
    return _view("hypothesis", head + _fields(rows))


def _subject_tex(subject: Any, key: str) -> str | None:
    ref = (subject or {}).get(key)
    if not isinstance(ref, str) or not ref.startswith("params."):
        return None
    return _PARAM_TEX.get(ref.removeprefix("params."))


def certificate_html(c: Any) -> str:
    """The notebook view of a :class:`~flowcert.certificates.core.Certificate`: what it proves (as
    mathematics for the matrix kinds whose subject is a parameter), its claim, checker, subject and
    digest, and its data summarised (:func:`summarise`: never whole arrays).

    Parameters
    ----------
    c : Certificate
        The certificate.

    Returns
    -------
    str
        A ``<div>`` (well-formed XML, every text escaped), a few kilobytes whatever the size of the data.
    """
    statement = ""
    tex = _KIND_TEX.get(c.kind)
    matrix = _subject_tex(c.subject, "M")
    if tex and matrix:
        statement = f'<div class="statement">{_math(tex.replace("{M}", "{" + matrix + "}"), True)}</div>'
    subject = ", ".join(f"{k} = {v}" for k, v in (c.subject or {}).items())
    data = list(c.data.items())
    rows = [("claim", html.escape(_cut(c.claim, 300))), ("checker", f"<code>{html.escape(c.checker)}</code>"),
            ("subject", html.escape(_cut(subject, 200))),
            ("digest", f"<code>{html.escape(_cut(c.digest, 24))}</code>" if c.digest else ""),
            *((f"data.{k}", html.escape(summarise(v))) for k, v in data[:MAPPING_KEYS])]
    if len(data) > MAPPING_KEYS:
        rows.append(("data", f"… {len(data) - MAPPING_KEYS} more fields (certificate.data)"))
    head = f"<p><strong>certificate</strong> <code>{html.escape(c.kind)}</code></p>"
    return _view("certificate", head + statement + _fields(rows))


def theorem_html(t: Any) -> str:
    """The notebook view of a :class:`~flowcert.catalogue.Theorem`: id, label and paper, verdict (an
    ``applies`` under an assumption marked, :func:`verdict_badge`), the statement in MathML, the
    correction, each hypothesis (as mathematics, with margin, method and reason), the prediction and
    the cross-check, values summarised (:func:`summarise`).

    Parameters
    ----------
    t : Theorem
        The theorem.

    Returns
    -------
    str
        A ``<div>`` (well-formed XML, every text escaped), at most a few kilobytes per hypothesis.
    """
    e = html.escape
    paper = t.paper
    source = f"{paper.title} (arXiv {paper.arxiv})" if paper is not None else ""
    head = (f"<p><strong>{e(t.id)}</strong> {_inline(t.label)} {verdict_badge(t)} "
            f"<small>{e(_cut(source, 160))}</small></p>")
    statement = f'<div class="statement">{_math(t.statement, True)}</div>' if t.statement else ""
    correction = f"<p><small>corrected: {e(_cut(t.correction, 300))}</small></p>" if t.correction else ""
    items = []
    for h in t.hypotheses:
        notes = [x for x in (e(_margin(h.margin)), _prose(h.method, 60)) if x]
        if h.status.value != "holds" and h.detail:
            notes.append(_prose(h.detail))
        items.append(f"<li>{word_badge(h.status.value)} {_hypothesis_name(h.name)}"
                     + (f" <small>{' · '.join(notes)}</small>" if notes else "") + "</li>")
    hyps = f"<p>hypotheses</p><ul>{''.join(items)}</ul>" if items else ""
    prediction = t.prediction
    if prediction is not None and not isinstance(prediction, Mapping):
        prediction = {"prediction": prediction}
    cc = t.cross_check
    details = cc.details if isinstance(cc.details, Mapping) else {"details": cc.details}
    return _view("theorem", head + statement + correction + hyps
                 + (f"<p>prediction</p>{_keyed(prediction)}" if prediction else "")
                 + f"<p>cross-check {word_badge(cc.status.value)}</p>" + _keyed(details, cap=300))


def simulation_html(s: Any) -> str:
    """The notebook view of a :class:`~flowcert.result.Simulation`: success and message, the times and
    each state by shape, first entries and range (never whole arrays), and the record summarised.

    Parameters
    ----------
    s : Simulation
        The simulation.

    Returns
    -------
    str
        A ``<div>`` (well-formed XML, every text escaped), a few kilobytes whatever the run's length.
    """
    e = html.escape
    word = {True: "agrees", False: "disagrees", None: "skipped"}[s.agrees] if "agrees" in s.record else "skipped"
    ok = {True: "reached the end", False: "failed", None: ""}[s.success]
    head = (f"<p><strong>simulation</strong> {word_badge(word)} <small>{e(ok)}"
            f"{' · ' if ok and s.message else ''}{e(_cut(s.message))}</small></p>")
    rows = [("t", e(summarise(s.t)) if s.t is not None else "")]
    rows += [(f"{k}", e(summarise(v))) for k, v in list(s.states.items())[:MAPPING_KEYS]]
    rows += [(f"record.{k}", e(summarise(v))) for k, v in list(s.record.items())[:MAPPING_KEYS]]
    return _view("simulation", head + _fields(rows))


def recheck_html(r: Any) -> str:
    """The notebook view of a recheck outcome (:class:`flowcert.recheck.Recheck` or one document's
    :class:`flowcert.recheck.DocumentCheck`): whether everything was re-checked, the counts, and the
    first refusals and unbound or unread items by path.

    Parameters
    ----------
    r : Recheck or DocumentCheck
        The outcome.

    Returns
    -------
    str
        A ``<div>`` (well-formed XML, every text escaped), at most a few kilobytes (long lists are cut).
    """
    e = html.escape
    word = "holds" if r.rechecked else ("fails" if r.refused else "unknown")
    label = "re-checked" if r.rechecked else ("refused" if r.refused else "not all re-checked")
    counts = [("certificates", str(getattr(r, "certificates", len(getattr(r, "records", ()))))),
              ("bound", str(r.bound)), ("unbound", str(r.unbound)), ("refused", str(len(r.refused)))]

    def listed(name: str, values: Any) -> tuple[str, str]:
        shown = [f"<li>{e(_cut(_item(v), 160))}</li>" for v in list(values)[:ARRAY_ENTRIES]]
        more = f"<li>… {len(values) - ARRAY_ENTRIES} more</li>" if len(values) > ARRAY_ENTRIES else ""
        return name, f"<ul>{''.join(shown)}{more}</ul>" if shown else ""

    rows = counts + [listed(k, getattr(r, k, [])) for k in ("refused", "holds_unbound", "uncertified", "unread",
                                                              "checkpoint_unbound", "unchecked")]
    return _view("recheck", f'<p><strong>recheck</strong> <b class="{word}">{e(label)}</b></p>' + _fields(rows))


def _item(v: Any) -> str:
    """One entry of a recheck list as text: a path, a ``(path, kind, reason)`` tuple, a refusal record."""
    if hasattr(v, "to_json"):
        v = v.to_json()
    if isinstance(v, Mapping):
        return " · ".join(str(x) for x in v.values() if x is not None)
    if isinstance(v, (list, tuple)):
        return " · ".join(map(str, v))
    return str(v)


def object_html(obj: Any) -> str | None:
    """The view of a certificates-layer object (:class:`~flowcert.certificates.core.Hypothesis`,
    :class:`~flowcert.certificates.core.Certificate`), installed as their ``_repr_html_`` renderer.

    Parameters
    ----------
    obj : Hypothesis or Certificate

    Returns
    -------
    str or None
        Its view; None for another type (Jupyter then shows the text repr).
    """
    from .certificates.core import Certificate, Hypothesis

    if isinstance(obj, Hypothesis):
        return hypothesis_html(obj)
    if isinstance(obj, Certificate):
        return certificate_html(obj)
    return None


def _install() -> None:
    """Give the certificates layer its renderer (it draws nothing itself: :data:`flowcert.certificates.core.HTML_VIEW`)."""
    from .certificates import core

    core.HTML_VIEW = object_html


_install()
