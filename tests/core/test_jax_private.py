"""JAX's private API is used in one module only, and each use survives JAX moving it."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp

from jaxplay import article
from jaxplay.core import compilation, jax_private
from jaxplay.hosting import catalog


def _seed_static_example():
    """The article's ``dynamic_control_flow``, jitted as the article does (``static_argnums=1``)."""
    return jax.jit(compilation.fresh_function(article.dynamic_control_flow), static_argnums=(1,))


def test_cache_size_counts_the_seeds_two_compilations() -> None:
    f = _seed_static_example()
    assert jax_private.cache_size(f) == 0
    f(jnp.ones(5), True)
    f(jnp.ones(5), False)
    f(jnp.ones(5), True)
    assert jax_private.cache_size(f) == 2
    f(jnp.ones(6), True)
    assert jax_private.cache_size(f) == 3


def test_cache_size_is_none_when_jax_will_not_say() -> None:
    assert jax_private.cache_size(lambda x: x) is None

    class Broken:
        def _cache_size(self) -> int:
            raise RuntimeError("gone")

    assert jax_private.cache_size(Broken()) is None


def test_saved_residuals_as_data() -> None:
    pairs = jax_private.saved_residuals(lambda x: jnp.sum(jnp.sin(x) * x), jnp.ones(3))
    assert pairs is not None and any(aval == "f32[3]" for aval, _ in pairs)


def test_user_frame_is_none_for_an_equation_without_a_traceback() -> None:
    class Eqn:
        source_info = None

    assert jax_private.user_frame(Eqn()) is None


def test_no_other_module_reaches_into_jax_internals() -> None:
    """``jax._src`` and ``source_info_util`` appear in ``core/jax_private.py`` alone."""
    private = re.compile(r"jax\._src|source_info_util")
    offenders = [
        str(path.relative_to(catalog.ROOT))
        for path in sorted((catalog.ROOT / "jaxplay").rglob("*.py"))
        if path.name != "jax_private.py" and private.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    assert private.search((catalog.ROOT / "jaxplay/core/jax_private.py").read_text())
