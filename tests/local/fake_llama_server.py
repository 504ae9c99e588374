"""A stand-in for ``python -m llama_cpp.server``: its flags, its endpoints, and replies recorded from the real one.

Run as ``python fake_llama_server.py --model M --model_alias A --host 127.0.0.1 --port P --n_ctx N ...``.
The ``--model`` file is JSON saying how to behave (a real GGUF would be loaded instead):

* ``replies``: names of recorded responses (``recorded/<name>.json``, ``{"status", "body"}``),
  answered in turn to ``POST /v1/chat/completions``; the last one repeats;
* ``metadata``: printed as llama-cpp-python prints a GGUF's metadata;
* ``fail``: ``"exit"`` (a bad model file: exit 1), ``"sigill"`` (killed by an illegal instruction),
  ``"hang"`` (never listens), ``"die_after_first"`` (exits after answering one completion);
* ``delay_s``: seconds before each completion is answered (a slow model).

Like the real server it prints its load log, answers one request at a time, and logs every
completion request's JSON body on a line ``request: {...}`` (what tests read back). Its tokenizer
counts one token per 3 characters of the input. On Linux it also logs the signal it asked the
kernel for when the thread that started it dies (``parent-death signal N``, 0 for none), so a
test sees what a run's server would get if the run were killed outright.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).resolve().parent / "recorded"


def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in ("--model", "--model_alias", "--host", "--port", "--n_ctx", "--n_threads", "--n_threads_batch"):
        parser.add_argument(flag, required=flag in ("--model", "--port"))
    args = parser.parse_args()
    print(f"fake llama server pid {os.getpid()}", flush=True)
    if sys.platform.startswith("linux"):
        death_signal = ctypes.c_int(-1)
        ctypes.CDLL(None).prctl(2, ctypes.byref(death_signal))  # PR_GET_PDEATHSIG
        print(f"parent-death signal {death_signal.value}", flush=True)
    try:
        plan: dict[str, Any] = json.loads(Path(args.model).read_text())
    except (OSError, ValueError) as exc:
        print(f"gguf_init_from_file_impl: failed to read magic: {exc}", flush=True)
        sys.exit(1)
    fail = plan.get("fail")
    if fail == "exit":
        print("llama_model_load: error loading model: invalid magic characters", flush=True)
        print(f"ValueError: Failed to load model from file: {args.model}", flush=True)
        sys.exit(1)
    if fail == "sigill":
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
        os.kill(os.getpid(), signal.SIGILL)
    if fail == "hang":
        threading.Event().wait()
    print(f"Model metadata: {plan.get('metadata', {})!r}", flush=True)
    print(f"llama_context: n_ctx         = {args.n_ctx}", flush=True)
    replies = [json.loads((RECORDED / f"{name}.json").read_text()) for name in plan.get("replies", ["stop"])]
    served = {"completions": 0}
    alias = args.model_alias or args.model

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [
                    {"id": alias, "object": "model", "owned_by": "me", "permissions": []}]})
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            if self.path == "/extras/tokenize/count":
                self._send(200, {"count": len(body.get("input", "")) // 3})
                return
            if self.path != "/v1/chat/completions":
                self._send(404, {"detail": "Not Found"})
                return
            print("request: " + json.dumps(body), flush=True)
            time.sleep(float(plan.get("delay_s", 0)))
            reply = replies[min(served["completions"], len(replies) - 1)]
            served["completions"] += 1
            self._send(reply["status"], reply["body"])
            if fail == "die_after_first":
                self.wfile.flush()
                os._exit(3)

        def log_message(self, format: str, *fmt_args: Any) -> None:
            print(f"INFO: {self.address_string()} - {format % fmt_args}", flush=True)

    server = HTTPServer((args.host or "127.0.0.1", int(args.port)), Handler)
    print(f"INFO:     Uvicorn running on http://{args.host}:{args.port} (Press CTRL+C to quit)", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
