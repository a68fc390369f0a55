"""The sharp-bits claims catch the false rules they replaced (issue 21, items 4, 5 and 7).

Each test puts back the rule the page used to state (in the rule table the sentences read, or the
old sentence builder) and checks that the claim's check, which asks JAX, then fails; and that
with the rule as it is now the check holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from jaxplay.core import capture, claims
from jaxplay.sharp_bits import _claims, _nans, _types, _updates

REGISTRY = claims.gather(["sharp_bits"])


@contextmanager
def patched(table: dict[str, Any], **changes: Any) -> Iterator[None]:
    saved = dict(table)
    table.update(changes)
    try:
        yield
    finally:
        table.clear()
        table.update(saved)


def test_weak_types_the_int_array_is_converted_not_the_float() -> None:
    assert REGISTRY["sharp_bits.weak_float_convert"].run().holds
    with patched(_types.CONVERTED, integer="y"):  # the old note: "the jaxpr converts [y]"
        result = REGISTRY["sharp_bits.weak_float_convert"].run()
    assert not result.holds and "int" in result.case and "('x', 'float32', True)" in result.observed


def test_a_weak_float_keeps_an_int_arrays_type_is_false() -> None:
    with patched(_types.PLUS_FLOAT, integer="x's dtype"):
        result = REGISTRY["sharp_bits.weak_same_kind"].run()
    assert not result.holds and "float32" in result.observed


@pytest.mark.parametrize(
    ("use", "key"),
    [
        ("size-zero", "sharp_bits.size_zero_raises"),
        ("take", "sharp_bits.take_fills"),
        ("static-checked", "sharp_bits.static_indices_check"),
    ],
)
def test_never_raises_and_always_clamps_are_false(use: str, key: str) -> None:
    assert REGISTRY[key].run().holds
    with patched(_updates.OUT_OF_BOUNDS, **{use: "clamp"}):  # the old "never raises, clamps"
        result = REGISTRY[key].run()
    assert not result.holds


def test_out_of_bounds_observed_from_jax() -> None:
    assert {use: _claims.observe_out_of_bounds(use, "jit") for use in _updates.OUT_OF_BOUNDS} == {
        "gather": "clamp",
        "scatter": "drop",
        "take": "fill",
        "size-zero": "raise",
        "static-checked": "raise",
    }


def test_debug_nans_two_reruns_is_false(monkeypatch: pytest.MonkeyPatch) -> None:
    def old_sentence(variant: str, params: Any, outcome: Any, value: Any) -> str:
        reran = outcome.stdout.count("de-optimized")
        return f"re-ran the function op by op to find it: {reran} such re-runs printed above."

    assert REGISTRY["sharp_bits.debug_nans_reruns_once"].run().holds
    monkeypatch.setattr(_nans, "explain_debug_nans", old_sentence)
    result = REGISTRY["sharp_bits.debug_nans_reruns_once"].run()
    assert not result.holds and "the Python ran 2 times" in result.observed


def test_the_debug_nans_sentence_counts_what_jax_printed() -> None:
    outcome = capture.run(_nans.with_debug_nans, 0.5)
    sentence = _nans.explain_debug_nans("debug_nans", {"x": 0.5}, outcome, None)
    printed = outcome.stdout.count(_nans.DEOPTIMIZED)
    assert printed == 2
    assert f"JAX printed {printed} lines" in sentence and "(shown below)" in sentence
    assert "re-ran the function once" in sentence and "`jnp.sqrt`, itself a jitted" in sentence


def test_print_under_jit_on_a_warm_server_says_the_trace_was_reused() -> None:
    """The page's own call_jitted shares show_both with every earlier run in the process."""
    from jaxplay import sharp_bits

    sharp_bits.run("printing", "jit", calls=2, batch=3)
    again = sharp_bits.run("printing", "jit", calls=2, batch=3)
    assert "`print` printed 0 lines" in again.sentence
    assert "reuses a trace" in again.sentence and "Eagerly" not in again.sentence


def test_the_words_are_written_from_the_tables_the_claims_check(monkeypatch) -> None:
    """The out-of-bounds intro said "JAX never raises" and the weak-type note said the float is
    converted for every x while the claims checked tables no sentence read. Now the words are
    written from those tables: change a rule and the words change with it."""
    from jaxplay.sharp_bits import _types, _updates

    assert _updates.BOUNDS.intro == _updates.bounds_intro()
    assert "`x[i]` **clamps** the index" in _updates.BOUNDS.intro
    assert "size-0 axis" in _updates.BOUNDS.intro
    monkeypatch.setitem(_updates.OUT_OF_BOUNDS, "take", "clamp")
    assert "`jnp.take` **clamps** the index" in _updates.bounds_intro()
    note = next(v.note for v in _types.WEAK.variants if v.key == "jaxpr")
    assert note == _types.convert_note()
    assert "with an integer x it converts x itself" in note
    monkeypatch.setitem(_types.CONVERTED, "integer", "y")
    assert "with an integer x it converts the float" in _types.convert_note()


def test_the_intros_examples_are_asked_of_jax_as_written(monkeypatch) -> None:
    """The weak-type intro's own examples and the in-place intro's "a plain argument is copied
    first" are checked as the page writes them: wrong words fail their claims."""
    import dataclasses

    registry = claims.gather(["sharp_bits"])
    weak, at_copy = (
        registry["sharp_bits.weak_same_kind"],
        registry["sharp_bits.at_copy_needs_ownership"],
    )
    assert weak.run().holds and at_copy.run().holds
    wrong = _types.WEAK.intro.replace(
        "an int8 array `+ 1.0` is float32", "an int8 array `+ 1.0` is int8"
    )
    monkeypatch.setattr(_types, "WEAK", dataclasses.replace(_types.WEAK, intro=wrong))
    assert not weak.run().holds
    old = _updates.UPDATES.intro.replace("; a plain argument is copied first", "")
    monkeypatch.setattr(_updates, "UPDATES", dataclasses.replace(_updates.UPDATES, intro=old))
    assert not at_copy.run().holds


def test_clip_makes_another_scatter_than_the_default() -> None:
    """The claim once said only ``promise_in_bounds`` differs from the default; JAX's jaxpr
    gives ``clip`` a scatter of its own (the page offers it), and the check now asks every mode."""
    claim = REGISTRY["sharp_bits.updates_drop_by_default"]
    verdict = claim.check(None)
    assert verdict.holds and "'clip' ['GatherScatterMode.CLIP']" in verdict.observed


def test_an_array_of_indices_into_a_size_0_axis_is_not_what_the_intro_says_raises() -> None:
    """The intro says an *integer* index into a size-0 axis raises IndexError: an array of
    indices raises TypeError (so "any index" was false), and a traced integer raises too."""
    import jax
    import jax.numpy as jnp

    with pytest.raises(TypeError):
        jnp.zeros(0)[jnp.array([0])]
    assert REGISTRY["sharp_bits.size_zero_raises"].check("traced").holds
    assert "integer index" in _updates.bounds_intro()
    with pytest.raises(IndexError):
        jax.jit(lambda i: jnp.zeros(0)[i])(0)
