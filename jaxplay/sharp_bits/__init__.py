"""The sharp-bits page: JAX's gotchas, each a small runnable case with JAX's real behaviour.

Beyond the article: the behaviours JAX's own "sharp bits" guide warns about, each as a case with a
few variants (as usually written, and fixed) run for real: pure functions under ``jit``
(``_purity``), in-place and out-of-bounds updates (``_updates``), NaN gradients, ``debug_nans`` and
``checkify`` (``_nans``), ``print`` vs ``jax.debug.print`` (``_printing``), x64 and weak types
(``_types``). ``_case`` defines a case and runs one (captured, with the sentence computed from what
really happened); ``_registry`` lists them. Nothing here changes a process-wide JAX setting: the
NaN checker and x64 are used through their thread-local context managers.
"""

from ._case import Case as Case
from ._case import CaseRun as CaseRun
from ._case import Param as Param
from ._case import run as run_variant
from ._registry import CASES as CASES
from ._registry import find_case as find_case


def run(case_key: str, variant_key: str, **params: object) -> CaseRun:
    """Run variant ``variant_key`` of the case ``case_key`` with ``params`` (checked)."""
    return run_variant(find_case(case_key), variant_key, params)
