"""The Pytrees claim on an array in a meta field catches the old demo (issue 21, item 6).

The old lab jitted ``apply``, whose dict lookup ``ACTIVATIONS[layer.activation]`` raised its own
``TypeError`` on the first call. Whether JAX's comparison raises first depends on what the
process has cached, so each run here is a fresh interpreter, as a fresh server would be.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

CHECK = """
import dataclasses, sys
from jaxplay.core import claims
from jaxplay.pytrees import _static
claims.gather(["pytrees"])
if sys.argv[1] == "old":
    _static.CHANGES = tuple(dataclasses.replace(c, fn=_static.apply) for c in _static.CHANGES)
result = claims.REGISTRY["pytrees.array_meta_field"].run()
print("HOLDS" if result.holds else "FAILS", result.observed)
"""


def _run(which: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CHECK, which],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout


def test_the_claim_holds_for_the_lab_as_it_is() -> None:
    out = _run("new")
    assert out.startswith("HOLDS"), out


def test_the_claim_fails_for_the_old_dict_lookup() -> None:
    out = _run("old")
    assert out.startswith("FAILS") and "TypeError" in out, out
