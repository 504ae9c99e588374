"""Prompt size per extraction case: the trimmed fixture against the raw Synthea bundle.

Usage::

    uv run --group bench python bench/tokens.py [--raw ../shared/data/synthea]

For every fixture in ``fixtures/extraction/MANIFEST.json`` the prompt the agent would get
(``task.prompt(task.load_case(path))``: system prompt + compact Bundle JSON + answer format) is
rendered from the trimmed fixture and from its raw source bundle, and measured in characters
and tokens; the ground truth (``task.truth``) of the two must be identical, or the trimming
changed the answer. Every raw bundle in ``--raw`` is also checked against a 200,000-token
context (Claude's standard window).

Tokens: counted with the ``o200k_base`` BPE (OpenAI's, via ``bpe-openai``, which ships its
vocabulary and needs no network) when the ``bench`` dependency group is installed. Claude's own
tokenizer is not published (the exact count needs the Messages ``count_tokens`` API, i.e. the
network), so the counts are a proxy; the measured characters per token are printed so the
usual chars/4 estimate can be judged. Without ``bpe-openai`` the estimate is characters / 4, and
the output says so.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path

from _timing import ROOT

from groundeval.tasks import make_task

FIXTURES = ROOT / "fixtures" / "extraction"
CONTEXT = 200_000
PIECE = 100_000


def counter() -> tuple[str, Callable[[str], int]]:
    """(method, count(text) -> tokens)."""
    try:
        from bpe_openai import get_encoding
    except ImportError:
        return "estimate: characters / 4 (install the bench group for a real BPE count)", lambda t: len(t) // 4
    enc = get_encoding("o200k_base")

    def tokens(text: str) -> int:
        # bpe-openai refuses one input above 200k tokens: count pieces of ~100k characters, each
        # cut just before a '{' (a pre-tokenizer boundary in compact JSON; at most 1 token off each).
        total, start = 0, 0
        while start < len(text):
            end = text.find("{", start + PIECE) if len(text) - start > PIECE else -1
            end = len(text) if end == -1 else end
            total += len(enc.encode(text[start:end], disallowed_special=()))
            start = end
        return total

    return "o200k_base BPE (bpe-openai; a proxy: Claude's tokenizer is not published)", tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, default=ROOT.parent / "shared" / "data" / "synthea",
                        help="directory of the raw Synthea bundles (default: ../shared/data/synthea)")
    args = parser.parse_args()
    method, count = counter()
    task = make_task("extraction")
    manifest = json.loads((FIXTURES / "MANIFEST.json").read_text())["fixtures"]
    rows = []
    mismatched = []
    for entry in manifest:
        trimmed = task.load_case(FIXTURES / entry["fixture"])
        raw = task.load_case(args.raw / entry["source"])
        if json.dumps(task.truth(trimmed), sort_keys=True) != json.dumps(task.truth(raw), sort_keys=True):
            mismatched.append(entry["fixture"])
        t_text, r_text = task.prompt(trimmed).text, task.prompt(raw).text
        rows.append({"t_chars": len(t_text), "r_chars": len(r_text), "t_tok": count(t_text), "r_tok": count(r_text)})
    print(f"tokens: {method}")
    print(f"{len(rows)} extraction cases, prompt = system + user turn (task.prompt(case).text)")
    print(f"  {'':<10} {'chars median':>13} {'chars max':>11} {'tokens median':>14} {'tokens max':>11}")
    for label, c, t in (("trimmed", "t_chars", "t_tok"), ("raw", "r_chars", "r_tok")):
        print(f"  {label:<10} {statistics.median(r[c] for r in rows):13,.0f} {max(r[c] for r in rows):11,} "
              f"{statistics.median(r[t] for r in rows):14,.0f} {max(r[t] for r in rows):11,}")
    print(f"  raw / trimmed tokens: median {statistics.median(r['r_tok'] / r['t_tok'] for r in rows):.1f}x")
    cpt = statistics.median(r["r_chars"] / r["r_tok"] for r in rows)
    print(f"  characters per token (raw prompts): median {cpt:.2f}")
    same = len(rows) - len(mismatched)
    print(f"  truth identical between trimmed and raw: {same}/{len(rows)}"
          + (f"  DIFFERENT: {', '.join(mismatched)}" if mismatched else ""))
    over = []
    raw_files = sorted(p for p in args.raw.glob("*.json"))
    for path in raw_files:
        tokens = count(task.prompt(task.load_case(path)).text)
        if tokens > CONTEXT:
            over.append((tokens, path.name))
    print(f"raw bundles over a {CONTEXT:,}-token context: {len(over)} of {len(raw_files)}")
    for tokens, name in sorted(over, reverse=True):
        print(f"  {tokens:>9,}  {name}")
    if mismatched:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
