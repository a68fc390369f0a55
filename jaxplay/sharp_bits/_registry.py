"""The sharp-bits cases, in the page's order (a table, not an if-chain)."""

from __future__ import annotations

from jaxplay.sharp_bits import _nans, _printing, _purity, _types, _updates
from jaxplay.sharp_bits._case import Case

CASES: tuple[Case, ...] = (
    _purity.CASE,
    _updates.UPDATES,
    _updates.BOUNDS,
    _nans.WHERE,
    _nans.DEBUG_NANS,
    _nans.CHECKIFY,
    _printing.CASE,
    _types.X64,
    _types.WEAK,
)


def find_case(key: str) -> Case:
    """The case registered under ``key``; ``KeyError`` if none is."""
    for case in CASES:
        if case.key == key:
            return case
    raise KeyError(key)
