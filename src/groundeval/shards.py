"""A run split across machines: ``--groundeval-shard=K/N`` picks shard K of N of the cases.

Standard library only (the option table reads ``parse_shard`` in every pytest session).

The split is made at collection, from the order of the case files (``Task.case_files``: sorted by
file name, the same on every machine given the same data directory): the i-th case that loads
(0-based, counting after ``--groundeval-limit``) belongs to shard ``i % N + 1``, so every shard
holds ``floor(cases / N)`` or one more case, every case is in exactly one shard, and a case's
trials (``--groundeval-trials``) and counterfactual twins (``--groundeval-counterfactual``) stay
with it. A case file that cannot be loaded is reported by one shard only: the one its position
among all the files picks (``j % N + 1``). ``groundeval merge`` joins the shards' run records
(``groundeval.records.merge``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Shard", "parse_shard"]

_FORM = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based: ``1/3``, ``2/3``, ``3/3``)."""

    index: int
    count: int

    def owns(self, position: int) -> bool:
        """True when the item at 0-based ``position`` of the split order belongs to this shard."""
        return position % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(value: str) -> Shard:
    """``"K/N"`` as a ``Shard``: whole numbers with 1 <= K <= N.

    Raises:
        ValueError: Not of the form K/N, or K outside 1..N (the message says which and the fix).
    """
    found = _FORM.fullmatch(str(value))
    if found is None:
        raise ValueError("must be K/N, shard K of N, e.g. 2/3 (whole numbers, 1 <= K <= N)")
    index, count = int(found.group(1)), int(found.group(2))
    if count < 1:
        raise ValueError("must split into N >= 1 shards (K/N, e.g. 2/3)")
    if not 1 <= index <= count:
        raise ValueError(f"must name a shard from 1 to {count} (K/N with 1 <= K <= N; shards count from 1)")
    return Shard(index, count)
