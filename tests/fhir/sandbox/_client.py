"""A minimal FHIR REST client over urllib for the sandbox tests (bounded by a timeout)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def call(
    url: str,
    *,
    token: str | None = "tok",
    method: str = "GET",
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """One request; returns (status, JSON body, headers)."""
    hdrs = {"Accept": "application/fhir+json", **(headers or {})}
    if token is not None:
        hdrs["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        hdrs["Content-Type"] = "application/fhir+json"
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.load(resp), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err), dict(err.headers)
