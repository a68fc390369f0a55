"""The PRNG page through AppTest: its controls, its bad inputs, and the numbers it shows."""

from __future__ import annotations

import pytest

from jaxplay import prng
from jaxplay.hosting import catalog
from jaxplay.prng import _pitfalls, _seeds
from tests.support.apptest import assert_clean, open_page, timed_calls
from tests.support.page_texts import PAYLOAD, hostile_links

SPEC = catalog.find("prng")


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def test_article_seed_shows_both_keys_and_the_collision() -> None:
    at = open_page(SPEC)
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["PRNGKey(seed), x64 off"] == "[0, 431641414]"
    assert metrics["PRNGKey(seed), x64 on"] == "[411, 431641414]"
    # One warning about the seed, on the tab that explains it (not one above the tabs too).
    assert len(at.warning) == 1
    warning = at.warning[0].value
    assert "collides with seed 431641414" in warning and "low 32 bits" in warning
    assert "See *Seed" not in warning
    assert not at.get("plotly_chart")  # hidden tabs do not run


def test_on_another_tab_the_seed_warning_shows_once_above_the_tabs() -> None:
    at = open_page(SPEC, prng_tab="Typed keys & implementations")
    assert_clean(at)
    assert len(at.warning) == 1
    assert "same key as seed 431641414" in at.warning[0].value
    assert "See *Seed → key*" in at.warning[0].value


@pytest.mark.parametrize(
    ("seed", "high32", "arithmetic"),
    [("-1", "0x00000000", "`-1 >> 32 = -1`"), ("42", "0x00000000", None)],
)
def test_the_seeding_rule_says_logical_shift_with_this_seeds_numbers(
    seed: str, high32: str, arithmetic: str | None
) -> None:
    at = open_page(SPEC, prng_seed=seed)
    rule = next(c.value for c in at.caption if "The rule" in c.value)
    assert "*logical* shift" in rule
    assert f"Seed {seed}: as int32 it is {seed}, high word {high32}" in rule
    assert (arithmetic in rule) if arithmetic else ("arithmetic shift" not in rule)


def test_pitfalls_tab_runs_the_articles_code() -> None:
    at = open_page(SPEC, prng_tab="Pitfalls")
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Largest difference across eager, jit, vmap, jit(vmap)"] == "0.0"
    # The article's layer as written raises its real error; the fixed one runs.
    errors = texts(at.error)
    assert "ValueError" in errors and "inconsistent sizes" in errors
    assert "output shape `(5, 4)`" in texts(at.success)


@pytest.mark.parametrize(
    ("seed", "fragment"),
    [
        ("1.5", "not a whole number"),
        ("9223372036854775808", "out of range"),
        ("-9223372036854775809", "OverflowError"),
        ("1" * 50, "limit is 40"),
    ],
)
def test_bad_seeds_get_a_clear_message(seed: str, fragment: str) -> None:
    at = open_page(SPEC, prng_seed=seed)
    assert_clean(at)
    assert fragment in texts(at.error)
    assert not at.metric  # the page stops before computing anything with the seed


def test_small_seed_needs_no_warning() -> None:
    at = open_page(SPEC, prng_seed="42")
    assert_clean(at)
    assert "x64 off and on give the same key: [0, 42]" in texts(at.info)
    assert "still differ" in texts(at.info)
    assert not at.warning and not at.success  # the numbers drawn differ: no "all is well"


def test_tree_controls_node_selection_and_limits() -> None:
    # Depth 6 with branching 4 would be 5461 keys: the depth slider offers only what the tree
    # accepts for this branching (3), and a link asking for more gets the deepest allowed.
    at = open_page(SPEC, prng_tab="Key tree", prng_seed="7", prng_depth=6, prng_branching=4)
    assert_clean(at)
    assert not at.error
    depth = at.slider(key="prng_depth")
    assert depth.proto.max == prng.max_depth(4) == 3 and depth.value == 3
    assert "85 keys, 85 distinct." in texts(at.caption)
    at.slider(key="prng_branching").set_value(1).run()
    assert at.slider(key="prng_depth").proto.max == _seeds.MAX_TREE_DEPTH
    at.slider(key="prng_branching").set_value(4).run()
    at.slider(key="prng_depth").set_value(0).run()
    assert "1 key, 1 distinct." in texts(at.caption)
    at.slider(key="prng_depth").set_value(2).run()
    at.selectbox(key="prng_node").set_value("1.2").run()
    assert_clean(at)
    node = prng.key_tree(7, 2, 4).node("1.2")
    shown = texts(at.markdown)
    assert f"**{node.label}** · key data `{prng.key_hex(node.data)}`" in shown
    assert "21 keys, 21 distinct." in texts(at.caption)


def test_fold_in_tree() -> None:
    at = open_page(
        SPEC, prng_tab="Key tree", prng_seed="7", prng_method="fold_in", prng_fold=9, prng_depth=1
    )
    assert_clean(at)
    at.selectbox(key="prng_node").set_value("1").run()
    assert "**fold_in(10)**" in texts(at.markdown)


def test_pitfall_controls() -> None:
    at = open_page(SPEC, prng_tab="Pitfalls", prng_seed="3")
    at.button(key="prng_run_checker").click().run()
    assert_clean(at)
    assert f"`KeyReuseError` at line {_pitfalls.KEY_REUSE_LINE}" in texts(at.error)
    captions = texts(at.caption)
    assert "Ran in a fresh sandboxed worker." in captions or "Ran in-process" in captions
    at.slider(key="prng_batch").set_value(4).run()
    assert "silently wrong*: output shape `(4,)`, not `(4, 4)`" in texts(at.warning)
    assert "output shape `(4, 4)`" in texts(at.success)
    assert_clean(at)
    threaded, dropped = _pitfalls.training_runs(3, 60)
    caption = texts(at.caption)
    assert f"Over 60 steps: the threaded key drew {threaded.unique_masks} distinct" in caption
    assert f"loss moved by {threaded.mean_jump:.3g} a step" in caption
    assert "the dropped key drew 1 distinct mask, its loss moving" in caption


def test_parallel_controls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The streams are drawn in the compute worker: each new count compiled programs (about
    5 MB) that JAX kept in the server process."""
    ran = timed_calls(monkeypatch)
    at = open_page(SPEC, prng_tab="Parallel streams", prng_n_keys=1234)
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 3 and ran == ["parallel_stats"]
    at.toggle(key="prng_reuse").set_value(True).run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["correlations inside ±1.96/√n"] == "0%"
    at.number_input(key="prng_n_per").set_value(100).run()
    at.number_input(key="prng_n_keys").set_value(100_000).run()
    # 100,000 keys leave room for 10 samples each: the box offers no more (no refusal).
    assert not at.error
    assert at.number_input(key="prng_n_per").value == 10
    assert at.number_input(key="prng_n_per").proto.max == 10
    assert_clean(at)


@pytest.mark.parametrize("seed", [PAYLOAD, "1` " + PAYLOAD + " `"])
def test_a_hostile_seed_renders_as_text(seed: str) -> None:
    at = open_page(SPEC, prng_seed=seed)
    assert_clean(at)
    assert "127" in texts(at.error)  # the refusal quotes what was typed
    assert hostile_links(at) == []


def test_timing_buttons_draw_measured_charts() -> None:
    at = open_page(SPEC, prng_tab="Typed keys & implementations", prng_n_time=10_000)
    at.button(key="prng_time_impls").click().run()
    assert_clean(at)
    charts = {c.proto.id for c in at.get("plotly_chart")}
    assert any("prng_impl_chart" in cid for cid in charts), charts


def test_derivation_timing_button() -> None:
    at = open_page(SPEC, prng_tab="Key tree")
    at.button(key="prng_time_derive").click().run()
    assert_clean(at)
    charts = {c.proto.id for c in at.get("plotly_chart")}
    assert any("prng_derive_chart" in cid for cid in charts), charts


def test_a_bad_seed_keeps_the_tabs_and_says_what_they_need() -> None:
    """One bad seed hid all five tabs; now they stay, and the open one says it needs a seed."""
    at = open_page(SPEC, prng_seed="12abc", prng_tab="Key tree")
    assert_clean(at)
    assert [t.label for t in at.tabs] == [
        "Seed → key",
        "Key tree",
        "Typed keys & implementations",
        "Parallel streams",
        "Pitfalls",
    ]
    assert any("fix the Seed box above" in i.value for i in at.info)


def test_the_training_pitfall_runs_in_the_compute_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step count compiled a program of about 15 MB that JAX kept in the server process; a
    script moving the slider grew the server by gigabytes. It runs where timed work runs."""
    ran = timed_calls(monkeypatch)
    at = open_page(SPEC, prng_tab="Pitfalls", prng_steps=37)
    assert_clean(at)
    assert "training_runs" in ran
