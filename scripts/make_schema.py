"""Write the JSON Schema of the run record, generated from its pydantic model.

The schema file ships inside the package (``groundeval/schemas/run_record.schema.json``) so that
tools outside Python can validate run records. Regenerate after changing
``groundeval.records.run_record``; ``--check`` verifies the committed file and writes nothing.

    uv run python scripts/make_schema.py
    uv run python scripts/make_schema.py --check
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from groundeval.records.run_record import SCHEMA_VERSION, RunRecord

TARGET = Path(__file__).resolve().parents[1] / "src" / "groundeval" / "schemas" / "run_record.schema.json"


def schema_text() -> str:
    schema = RunRecord.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://groundeval.dev/schemas/run_record/v{SCHEMA_VERSION}.json"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify the committed schema; write nothing")
    args = parser.parse_args(argv)
    text = schema_text()
    if args.check:
        if not TARGET.is_file() or TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is out of date with groundeval.records.run_record; run scripts/make_schema.py",
                  file=sys.stderr)
            return 1
        print(f"checked {TARGET.name}: matches RunRecord (schema_version {SCHEMA_VERSION})")
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
