"""Record real llama-cpp-python server responses as test fixtures (tests/local/recorded/).

Usage (needs the ``local`` extra; about a minute on 2 cores)::

    uv run python scripts/record_llama_server.py

Starts the real server (``groundeval.models.llama_server.LlamaServer``) on the packaged model
(``smollm2``) and records, as ``{"status", "body", "request"}`` JSON files:

* ``models``: ``GET /v1/models`` (the alias as the model id);
* ``tokenize_count``: ``POST /extras/tokenize/count``;
* ``stop``: a short answer (``finish_reason: stop``, the usage shape);
* ``length``: an answer cut off at ``max_tokens`` (``finish_reason: length``);
* ``fenced``: an answer in a fenced ```` ```json ```` block;
* ``nested``: an answer whose array sits inside an object;
* ``context_length``: the 400 for a prompt longer than the context (a second server with
  ``n_ctx=512``).

and ``server-log.txt``: the lines of the first server's log that ``read_facts`` reads, with the
model's path replaced by ``<model>``. The tests replay them through ``tests/local/fake_llama_server.py``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from groundeval.agents.local import resolve_model
from groundeval.models.llama_server import LlamaServer

OUT = Path(__file__).resolve().parents[1] / "tests" / "local" / "recorded"
SYSTEM = "You are a careful assistant. Reply exactly as asked, with nothing else."


def call(server: LlamaServer, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{server.root}{path}", data=data, method=method,
                                     headers={"content-type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=600) as response:
            status, payload = response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        status, payload = exc.code, json.load(exc)
    return {"status": status, "body": payload, "request": {"method": method, "path": path, "body": body}}


def chat(server: LlamaServer, user: str, max_tokens: int) -> dict[str, Any]:
    return call(server, "POST", "/v1/chat/completions", {
        "model": server.alias, "max_tokens": max_tokens, "temperature": 0,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
    })


def save(name: str, value: dict[str, Any]) -> None:
    (OUT / f"{name}.json").write_text(json.dumps(value, indent=1, ensure_ascii=False) + "\n")
    body = value["body"]
    choice = (body.get("choices") or [{}])[0] if isinstance(body, dict) else {}
    print(f"{name}: {value['status']} {choice.get('finish_reason')} {json.dumps(choice.get('message'))[:160]}")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    model, _ = resolve_model(None)
    alias = model.name.removesuffix(".gguf")
    with tempfile.TemporaryDirectory() as tmp:
        with LlamaServer(model, alias=alias, n_ctx=2048, n_threads=2, log_path=Path(tmp) / "server.log") as server:
            save("models", call(server, "GET", "/v1/models"))
            save("tokenize_count", call(server, "POST", "/extras/tokenize/count", {"input": "Repeat exactly: []"}))
            save("stop", chat(server, "Repeat exactly, with nothing else: []", 32))
            save("length", chat(server, "Write a long paragraph about medication reconciliation.", 8))
            save("fenced", chat(server, 'Repeat exactly:\n```json\n[{"rxcui": "197361"}]\n```', 48))
            save("nested", chat(server, 'Repeat exactly: {"medications": [{"rxcui": "197361"}]}', 48))
            keep = [line for line in server.log_text().splitlines()
                    if line.startswith(("Model metadata:", "llama_context:", "print_info: n_ctx_train", "INFO:"))]
            text = "\n".join(keep).replace(str(model), "<model>")
            (OUT / "server-log.txt").write_text(text + "\n")
        with LlamaServer(model, alias=alias, n_ctx=512, n_threads=2, log_path=Path(tmp) / "small.log") as small:
            save("context_length", chat(small, "Repeat exactly: " + "[] " * 1000, 32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
