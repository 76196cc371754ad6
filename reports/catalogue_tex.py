"""TeX for the catalogue's plain-text names: moved to :mod:`flowcert.catalogue_tex` (the notebook views
show hypotheses as mathematics too); this name stays for the report's imports."""

from __future__ import annotations

from ..catalogue_tex import HYPOTHESIS_TEX, QUANTITY_TEX, hypothesis_tex, quantity_tex

__all__ = ["HYPOTHESIS_TEX", "QUANTITY_TEX", "hypothesis_tex", "quantity_tex"]
