r"""Letters by meaning: MathML ``mathvariant`` turned into Unicode mathematical alphanumerics.

latex2mathml writes :math:`\mathcal P` as ``<mi mathvariant="script">P</mi>`` and
:math:`\Bbb R` as ``<mi mathvariant="double-struck">R</mi>``. MathML Core (Chromium) honours
``mathvariant`` only as ``normal`` on an ``<mi>``; every other value is dropped, so
:math:`\mathcal P\mathcal K\mathcal P^*` would be drawn as the matrices ``PKP*`` and
:math:`\mathbb R^d` as ``R^d``. The page therefore carries the letter itself: 𝒫, 𝒦, ℝ, 𝒩, 𝔼,
𝐱 … (the block *Mathematical Alphanumeric Symbols*, U+1D400–U+1D7FF, and the older
*Letterlike Symbols* ℝ ℂ ℕ ℬ ℋ ℭ … that fill its holes), looked up by Unicode character name:
``LATIN CAPITAL LETTER P`` under ``script`` is ``MATHEMATICAL SCRIPT CAPITAL P`` (U+1D4AB).

:func:`styled` maps a text; :func:`variant_survives` says whether a browser keeps an attribute
as it is. The renderer (:func:`flowcert.mathml.mathml`) applies both when it re-serialises
a formula, for the report and for the documentation alike.

Examples
--------
>>> styled("R", "double-struck"), styled("PK", "script"), styled("x", "bold")
('ℝ', '𝒫𝒦', '𝐱')
"""

from __future__ import annotations

import functools
import unicodedata

__all__ = ["VARIANTS", "styled", "variant_survives"]

#: ``mathvariant`` value -> the style words of the Unicode character names (``MATHEMATICAL <words> …``).
VARIANTS: dict[str, str] = {
    "bold": "BOLD", "italic": "ITALIC", "bold-italic": "BOLD ITALIC", "script": "SCRIPT",
    "bold-script": "BOLD SCRIPT", "fraktur": "FRAKTUR", "bold-fraktur": "BOLD FRAKTUR",
    "double-struck": "DOUBLE-STRUCK", "sans-serif": "SANS-SERIF", "bold-sans-serif": "SANS-SERIF BOLD",
    "sans-serif-italic": "SANS-SERIF ITALIC", "sans-serif-bold-italic": "SANS-SERIF BOLD ITALIC",
    "monospace": "MONOSPACE",
}

#: Older code points that stand in for the holes of the mathematical block (ℝ, ℬ, ℭ, ℎ …).
_LETTERLIKE = {"script": "SCRIPT", "fraktur": "BLACK-LETTER", "double-struck": "DOUBLE-STRUCK"}


def _letter(name: str) -> str | None:
    """``CAPITAL P`` / ``SMALL MU`` / ``DIGIT ONE`` / ``NABLA`` from a character's Unicode name."""
    for prefix in ("LATIN ", "GREEK "):
        if name.startswith(prefix):
            name = name[len(prefix):].replace(" LETTER ", " ").replace("LUNATE ", "")
            return name
    if name.startswith("DIGIT ") or name in ("NABLA", "PARTIAL DIFFERENTIAL"):
        return name
    return None


@functools.lru_cache(maxsize=4096)
def _char(ch: str, variant: str) -> str | None:
    """The styled character, the character itself where style does not apply (punctuation,
    operators, letters already styled), or ``None`` when the letter has no styled code point."""
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return ch
    letter = _letter(name)
    if letter is None:
        return ch  # not a plain letter or digit: an operator, or a letter that already carries its style
    if variant == "italic" and letter == "SMALL H":
        return "\u210e"  # PLANCK CONSTANT fills the hole of the italic block
    candidates = [f"MATHEMATICAL {VARIANTS[variant]} {letter}"]
    if variant in _LETTERLIKE:
        candidates.append(f"{_LETTERLIKE[variant]} {letter}")
    for candidate in candidates:
        try:
            return unicodedata.lookup(candidate)
        except KeyError:
            continue
    return None


def styled(text: str, variant: str) -> str:
    """``text`` in the letters of ``variant`` (a ``mathvariant`` value of :data:`VARIANTS`).

    Raises
    ------
    ValueError
        A letter or digit of ``text`` has no code point in that style (for example a bold-script
        digit): a browser would show the plain letter, which would be a different symbol.
    """
    if variant not in VARIANTS:
        raise ValueError(f"mathvariant {variant!r} has no Unicode letters")
    out = []
    for ch in text:
        mapped = _char(ch, variant)
        if mapped is None:
            raise ValueError(f"no {variant} code point for {ch!r} (U+{ord(ch):04X})")
        out.append(mapped)
    return "".join(out)


def variant_survives(element: str, variant: str, text: str) -> bool:
    """Whether a MathML Core browser keeps ``mathvariant=variant`` on ``<element>text</element>``:
    only ``normal`` on a one-character ``<mi>`` (it turns off the automatic italic)."""
    return variant == "normal" and element == "mi" and len(text) == 1
