"""Letters by meaning: moved to :mod:`flowcert.letters` (the notebook views draw formulas too); this
name stays for the report's imports."""

from __future__ import annotations

from ..letters import VARIANTS, styled, variant_survives

__all__ = ["VARIANTS", "styled", "variant_survives"]
