"""The public API: every name resolves lazily, and importing the package imports none of them."""

from __future__ import annotations

import subprocess
import sys

import groundeval


def test_every_public_name_resolves_to_the_object_its_module_defines() -> None:
    names = groundeval.__all__
    assert len(names) > 50 and names == sorted(names)
    for name in names:
        value = getattr(groundeval, name)
        assert value is not None, name
    assert "ExtractionTask" in dir(groundeval)


def test_importing_the_package_imports_no_public_module() -> None:
    code = (
        "import sys, groundeval\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('groundeval.'))\n"
        "print(loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
