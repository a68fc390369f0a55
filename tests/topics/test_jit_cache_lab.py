"""The compile-cache lab: counts and explanations of the article's static_argnums example."""

from __future__ import annotations

import pytest

from jaxplay import jit


def test_cache_lab_counts_compilations_and_explains_misses() -> None:
    lab = jit.CacheLab()
    first = lab.call(True, 5)
    assert (first.cache_size, first.compiled) == (1, True) and first.reasons
    flipped = lab.call(False, 5)
    assert (flipped.cache_size, flipped.compiled) == (2, True)
    assert flipped.changed == ("static use_tanh True → False",)
    assert any("Static" in r or "static" in r for r in flipped.reasons)
    hit = lab.call(True, 5)
    assert (hit.cache_size, hit.compiled, hit.reasons) == (2, False, ())
    reshaped = lab.call(True, 6, "float16")
    assert reshaped.cache_size == 3 and reshaped.compiled
    assert reshaped.changed == ("shape (5,) → (6,)", "dtype float32 → float16")
    with pytest.raises(jit.SizeError):
        lab.call(True, 0)


def test_each_visitor_has_their_own_cache() -> None:
    mine, yours = jit.CacheLab(), jit.CacheLab()
    mine.call(True, 5)
    mine.call(False, 5)
    first = yours.call(True, 5)
    assert first.cache_size == 1 and first.compiled
    assert len(mine.history) == 2 and len(yours.history) == 1


def test_an_unknown_dtype_is_refused() -> None:
    with pytest.raises(jit.SizeError, match="float32"):
        jit.CacheLab().call(True, 5, "float64")


def test_jaxs_explanation_names_the_closest_key_not_always_what_changed() -> None:
    """The caption's warning: after (True, 5), (False, 5), (True, 5), a call at length 6 changes
    the shape, and JAX explains the miss against the key it finds closest, naming the static
    flag; the table's *what changed* says the shape."""
    lab = jit.CacheLab()
    for signature in ((True, 5, "float32"), (False, 5, "float32"), (True, 5, "float32")):
        lab.call(*signature)
    lab.call(True, 6, "float32")
    said = "\n".join(lab.history[-1].reasons)
    assert lab.history[-1].compiled and "closest previous key" in said
    assert "Static(val=False)" in said and "shape" not in said
    assert jit.history_table(lab.history)[-1]["what changed"] == "shape (5,) → (6,)"


def test_the_lab_keeps_a_bounded_number_of_versions_and_calls() -> None:
    """A script sending a new length per rerun compiled a version each time (about 3 MB of the
    server's memory) into one lab, with a history row each: 573 MB in 200 reruns. The lab now
    starts over past its versions (a new function, the old one's versions cleared) and keeps
    the last calls only, numbered from where it kept them."""
    from jaxplay.jit import _cache_lab

    lab = jit.CacheLab()
    for n in range(1, _cache_lab.MAX_VERSIONS + 1):
        lab.call(True, n)
    assert lab.restarts == 0 and lab.history[-1].cache_size == _cache_lab.MAX_VERSIONS
    old = lab.jitted
    restarted = lab.call(True, 100)
    assert lab.restarts == 1 and lab.jitted is not old
    assert (restarted.cache_size, restarted.compiled, restarted.previous) == (1, True, None)
    assert str(_cache_lab.MAX_VERSIONS) in jit.cache_lab_restarted(lab.released)
    assert not lab.released
    for _ in range(_cache_lab.MAX_HISTORY + 5):
        lab.call(True, 100)  # "Call again": a row each, no compile
    assert len(lab.history) == _cache_lab.MAX_HISTORY and lab.dropped == 6
    rows = jit.history_table(lab.history, lab.dropped)
    assert rows[0]["call"] == 7 and rows[-1]["call"] == _cache_lab.MAX_HISTORY + 6
    assert rows[0]["what changed"] == "—"  # the same call again: nothing changed


def test_the_labs_of_a_process_hold_a_bounded_number_of_versions_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each session has its own lab: a room's sessions, or one visitor's many, held 16 versions
    each (about 28 MB) without end. Past the process's budget a new version first releases
    the least recently used other lab's versions (JAX's own cache count says they are gone);
    a lab in the middle of its own call is passed over."""
    import weakref

    from jaxplay.core import jax_private
    from jaxplay.jit import _cache_lab

    monkeypatch.setattr(_cache_lab, "MAX_PROCESS_VERSIONS", 6)
    monkeypatch.setattr(_cache_lab, "_labs", weakref.WeakSet())
    old, busy, new = jit.CacheLab(), jit.CacheLab(), jit.CacheLab()
    for n in (1, 2, 3):
        old.call(True, n)
    for n in (1, 2):
        busy.call(True, n)
    busy.used = old.used - 1  # the least recent, but in its own call below
    released = old.jitted
    with busy.lock:
        new.call(True, 1)  # 6 versions with this one: nothing released yet
        assert old.restarts == 0 and jax_private.cache_size(released) == 3
        new.call(True, 2)
    assert old.restarts == 1 and old.released and not old.versions and not old.history
    assert jax_private.cache_size(released) == 0 and old.jitted is not released
    assert busy.restarts == 0 and jax_private.cache_size(busy.jitted) == 2
    said = jit.cache_lab_restarted(old.released)
    assert "for all labs together (every visitor's, every tab's)" in said
    view = old.visit(True, 1, "float32")
    assert (view.restarts, view.released, len(view.history)) == (1, True, 1)
    assert (view.history[0].compiled, view.history[0].cache_size) == (True, 1)
    assert old.visit(True, 1, "float32").history == view.history  # the same call: not again
    old._start_over(released=True)  # another visitor's call, after the page's read:
    assert len(view.history) == 1  # what the page read stays whole
