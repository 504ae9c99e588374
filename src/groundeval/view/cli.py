"""``groundeval view [RUNS_DIR] [--port N] [--no-browser]``: serve the viewer on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["HOST", "build_parser", "main"]

HOST = "127.0.0.1"
"""The only address the viewer binds: run records hold clinical data, so nothing off this machine may read them."""


def build_parser() -> argparse.ArgumentParser:
    """The ``groundeval view`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="groundeval view",
        description="Browse run records in a local web viewer (127.0.0.1 only): runs, cases filtered by outcome, "
        "metric and text, each case's conversation, runs side by side. Ctrl-C stops it.",
    )
    parser.add_argument(
        "runs_dir",
        nargs="?",
        default="runs",
        metavar="RUNS_DIR",
        help="Directory of run records (runs/<run_id>.json). Default: runs.",
    )
    parser.add_argument("--port", type=int, default=8765, help="Port on 127.0.0.1 (0: any free one). Default: 8765.")
    parser.add_argument("--no-browser", action="store_true", help="Do not open a browser; only print the URL.")
    return parser


def main(argv: Sequence[str]) -> int:
    """Run the viewer until Ctrl-C; returns 0, or 4 for a usage error (a missing directory or extra, a taken port)."""
    args = build_parser().parse_args(list(argv))
    directory = Path(args.runs_dir).expanduser().resolve()
    if not directory.is_dir():
        print(
            f"ERROR: groundeval view {args.runs_dir}: not a directory; give the directory of run records (runs/)",
            file=sys.stderr,
        )
        return 4
    if not 0 <= args.port <= 65535:
        print(f"ERROR: --port {args.port}: must be 0 to 65535", file=sys.stderr)
        return 4
    from groundeval.errors import ConfigError

    try:
        from groundeval.view.app import make_app

        app = make_app(directory)
        from groundeval.extras import require_extra

        require_extra("view", "uvicorn", "groundeval view")
    except ConfigError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 4
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does (a port in TIME_WAIT)
    try:  # bound here, not by uvicorn, so a taken port is one clear line rather than uvicorn's log
        sock.bind((HOST, args.port))
    except OSError as exc:
        sock.close()
        print(
            f"ERROR: groundeval view --port {args.port}: cannot listen on {HOST}:{args.port} "
            f"({exc.strerror or exc}; another viewer or server may hold it); pass another port, or --port 0 "
            "for any free one",
            file=sys.stderr,
        )
        return 4
    config = uvicorn.Config(app, host=HOST, port=args.port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    _announce(server, args.no_browser)
    server.run(sockets=[sock])  # uvicorn stops on Ctrl-C (SIGINT) and SIGTERM
    return 0


def _announce(server: object, no_browser: bool) -> None:
    """Print the URL once the socket is bound (and open a browser on it unless ``no_browser``)."""
    import threading
    import time

    def wait() -> None:
        for _ in range(200):  # up to 10 s for the socket
            servers = getattr(server, "servers", None)
            if getattr(server, "started", False) and servers:
                port = servers[0].sockets[0].getsockname()[1]
                url = f"http://{HOST}:{port}/"
                print(f"groundeval view: {url} (Ctrl-C stops it)", flush=True)
                if not no_browser:
                    import webbrowser

                    webbrowser.open(url)
                return
            time.sleep(0.05)

    threading.Thread(target=wait, daemon=True).start()
