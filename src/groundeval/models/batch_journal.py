"""What resume stands on: a request's ``custom_id`` (stable across runs) and the journal of batches sent.

A custom id is a hash of the request itself (its label, its parameters and its occurrence among
identical requests), so the same command run again computes the same ids; the journal
(``BatchJournal``, one JSON line per batch, flushed and fsynced the moment the provider returns
the batch id) says which batch holds each id.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["BatchJournal", "custom_id"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def custom_id(label: str, params: Mapping[str, Any], occurrence: int = 0) -> str:
    """A request's custom id: its label, a hash of the request and its occurrence.

    Both providers accept 1 to 64 characters of ``[A-Za-z0-9_-]``. The same request made again
    (a second trial of a case) differs only by ``occurrence``; the same command run again gives
    the same ids, which is what resume matches on.

    Returns:
        ``<label, at most 36 safe characters>-<16 hex of SHA-256>-<occurrence>``.
    """
    digest = hashlib.sha256(
        json.dumps({"label": label, "params": params}, sort_keys=True, default=str).encode("utf-8", "surrogatepass")
    ).hexdigest()[:16]
    slug = _UNSAFE.sub("_", label).strip("_")[:36] or "request"
    return f"{slug}-{digest}-{occurrence}"


class BatchJournal:
    """The batches sent, on disk: one JSON line per batch, ``{"batch_id", "provider", "custom_ids", "sent_at"}``.

    Args:
        path: The journal file (created with its directory on the first batch).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def load(self) -> dict[str, str]:
        """Custom id -> batch id of every journalled batch (the newest batch wins); {} without a file.

        A line that is not a journal entry (a write cut by a crash) is skipped.
        """
        found: dict[str, str] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return found
        for line in lines:
            try:
                entry = json.loads(line)
                batch_id, ids = entry["batch_id"], entry["custom_ids"]
            except (ValueError, KeyError, TypeError):
                continue
            if isinstance(batch_id, str) and isinstance(ids, list):
                found.update((cid, batch_id) for cid in ids if isinstance(cid, str))
        return found

    def record(self, batch_id: str, provider: str, ids: list[str]) -> None:
        """Append one batch, flushed and fsynced before returning."""
        line = json.dumps({"batch_id": batch_id, "provider": provider, "custom_ids": ids,
                           "sent_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
                out.flush()
                os.fsync(out.fileno())
