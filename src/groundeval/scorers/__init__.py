"""Scorers: deterministic comparison of a parsed answer with the ground truth."""

from __future__ import annotations

from groundeval.scorers.extraction import normalize_display, score_medications

__all__ = ["normalize_display", "score_medications"]
