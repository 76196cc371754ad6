r"""TeX to MathML for every HTML view: the report, the documentation and the notebook views.

:func:`mathml` converts one formula with :mod:`latex2mathml` and re-serialises the result through an
allow-list of MathML elements and attributes, with letters by meaning (:mod:`flowcert.letters`); a
formula it cannot convert faithfully raises ``ValueError``. It lives in the ``flowcert`` layer so
that the objects' own views (:mod:`flowcert.display`) and the report (:mod:`flowcert.reports.html`)
draw formulas the same way.

Examples
--------
>>> "<math" in mathml(r"\dot\mu=(A+V)\mu", display=False)
True
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

from latex2mathml.converter import convert as _latex_to_mathml

from .letters import styled, variant_survives

__all__ = ["mathml"]

_MATHML_ELEMENTS: frozenset[str] = frozenset({
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup",
    "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd",
    "mlabeledtr", "mstyle", "mpadded", "mphantom", "menclose", "merror", "mfenced",
    "mmultiscripts", "mprescripts", "none", "semantics", "annotation",
})
_MATHML_ATTRIBUTES: frozenset[str] = frozenset({
    "display", "mathvariant", "mathcolor", "mathbackground", "mathsize", "stretchy", "fence",
    "separator", "accent", "accentunder", "lspace", "rspace", "minsize", "maxsize",
    "movablelimits", "largeop", "symmetric", "form", "width", "height", "depth",
    "linethickness", "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines",
    "rowlines", "frame", "framespacing", "displaystyle", "scriptlevel", "notation", "open",
    "close", "separators", "columnspan", "rowspan", "bevelled", "numalign", "denomalign",
})
_SAFE_ATTR_VALUE = re.compile(r"^[#%.,\w\s:-]*$")
_CONTROL_SEQUENCE = re.compile(r"\\[A-Za-z]+")
_BRACED_UPRIGHT = re.compile(r"\\mathrm\s*\{\s*([A-Za-z])\s*\}")


class _MathError(ValueError):
    """latex2mathml failed, or produced output we do not trust as a faithful rendering."""


_TOKENS = frozenset({"mi", "mn", "mo", "mtext", "ms"})


def _tag(elem: ET.Element) -> str:
    return elem.tag.rsplit("}", 1)[-1].lower()  # drop the namespace ElementTree puts in front


def _upright_letter(elem: ET.Element, variant: str | None) -> bool:
    """A one-letter ``<mi>`` in ``normal`` style and nothing else (a piece of ``\\mathrm{Err}``)."""
    return (_tag(elem) == "mi" and variant == "normal" and len(elem) == 0 and len(elem.text or "") == 1
            and set(elem.attrib) <= {"mathvariant"} and not (elem.tail or "").strip())


def _merge_upright_runs(elem: ET.Element, variant: str | None) -> list[tuple[ET.Element, str | None]]:
    """Children with their style; runs of upright one-letter ``<mi>`` become one ``<mi>`` (a word
    of several letters is upright by itself, so it needs no ``mathvariant``)."""
    out: list[tuple[ET.Element, str | None]] = []
    run: list[ET.Element] = []

    def flush() -> None:
        if len(run) > 1:
            word = ET.Element("mi")
            word.text = "".join(c.text or "" for c in run)
            word.tail = run[-1].tail
            out.append((word, None))
        elif run:
            out.append((run[0], "normal"))
        run.clear()

    for child in elem:
        style = child.attrib.get("mathvariant", variant)
        if _upright_letter(child, style):
            run.append(child)
            continue
        flush()
        out.append((child, style))
    flush()
    return out


def _clean(elem: ET.Element, in_text: bool = False, variant: str | None = None) -> str:
    """Re-serialise one parsed MathML element through the allow-lists (recursive).

    ``mathvariant`` (own or inherited from ``<mstyle>``) is turned into Unicode letters
    (:func:`flowcert.letters.styled`); it stays as an attribute only where a MathML Core
    browser keeps it (``normal`` on a one-letter ``<mi>``)."""
    name = _tag(elem)
    if name not in _MATHML_ELEMENTS:
        if not in_text:
            raise _MathError(f"element <{name}> is not MathML")
        return html.escape(_as_source(elem), quote=False)  # \text{<b>} is copied verbatim by latex2mathml
    in_text = in_text or name in ("mtext", "ms", "annotation")
    variant = elem.attrib.get("mathvariant", variant)
    text = elem.text or ""
    if name in _TOKENS and variant not in (None, "normal"):
        try:
            text = styled(text, variant)
        except ValueError as exc:
            raise _MathError(f"mathvariant {variant!r} would be dropped by the browser: {exc}") from exc
    attrs = "".join(f' {k}="{html.escape(v, quote=True)}"' for k, v in sorted(elem.attrib.items())
                    if k in _MATHML_ATTRIBUTES and k != "mathvariant" and _SAFE_ATTR_VALUE.match(v))
    if variant is not None and variant_survives(name, variant, text):
        attrs += ' mathvariant="normal"'
    parts = [_text(text, in_text)]
    for child, style in _merge_upright_runs(elem, variant):
        parts.append(_clean(child, in_text, style))
        parts.append(_text(child.tail, in_text))
    return f"<{name}{attrs}>{''.join(parts)}</{name}>"


def _as_source(elem: ET.Element) -> str:
    """Markup found inside ``<mtext>``, written back as the source text it came from."""
    name = elem.tag.rsplit("}", 1)[-1]
    attrs = "".join(f' {k}="{v}"' for k, v in elem.attrib.items())
    inner = (elem.text or "") + "".join(_as_source(c) + (c.tail or "") for c in elem)
    return f"<{name}{attrs}>{inner}</{name}>"


def _text(chunk: str | None, in_text: bool) -> str:
    if not chunk:
        return ""
    if not in_text and _CONTROL_SEQUENCE.search(chunk):
        raise _MathError(f"unsupported control sequence in {chunk!r}")
    return html.escape(chunk, quote=False)


def mathml(latex: str, display: bool) -> str:
    """Sanitised MathML of one formula.

    Parameters
    ----------
    latex : str
        LaTeX source without delimiters.
    display : bool
        Block formula if True, inline otherwise.

    Returns
    -------
    str
        A ``<math>`` element containing only allow-listed MathML.

    Raises
    ------
    ValueError
        If the formula cannot be converted faithfully.
    """
    source = latex.strip()
    if not source:
        raise _MathError("empty formula")
    # latex2mathml drops the upright style of a braced single letter (\mathrm{d}, x^\mathrm{T}); the
    # unbraced form keeps it
    source = _BRACED_UPRIGHT.sub(r"{\\mathrm \1}", source)
    try:
        raw = _latex_to_mathml(source, display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises many exception types
        raise _MathError(f"latex2mathml: {type(exc).__name__}: {exc}") from exc
    if "<!" in raw or "<?" in raw:  # no DTDs, entities or processing instructions
        raise _MathError("declaration in MathML output")
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as exc:
        raise _MathError(f"MathML is not well-formed: {exc}") from exc
    return _clean(root)
