"""Every claim the PRNG page makes, checked against JAX itself."""

from __future__ import annotations

import ast
import threading

import jax
import jax.numpy as jnp
import jax.random as jrandom
import numpy as np
import pytest

from jaxplay import prng
from jaxplay.prng import _figures, _impls, _pitfalls, _seeds, _streams, _trees

M = 0xFFFFFFFF


def jax_key_words(seed: int, x64: bool) -> tuple[int, ...]:
    with jax.enable_x64(x64):
        return tuple(int(w) for w in np.asarray(jrandom.PRNGKey(seed)))


# --- seeds -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seed", "x32", "x64"),
    [
        (prng.ARTICLE_SEED, (0, 431641414), (411, 431641414)),
        (2**32, (0, 0), (1, 0)),
        (-1, (0, M), (M, M)),
        (42, (0, 42), (0, 42)),
        (-(2**63), (0, 0), (2**31, 0)),
    ],
)
def test_describe_seed_matches_known_keys_and_jax(seed, x32, x64) -> None:
    info = prng.describe_seed(seed)
    assert info.x32.key_data == x32 == jax_key_words(seed, False)
    assert info.x64.key_data == x64 == jax_key_words(seed, True)
    assert info.differs == (x32 != x64)


def test_seeding_rule_matches_jax_for_many_seeds() -> None:
    rng = np.random.default_rng(0)
    seeds = [0, 1, 2**31 - 1, 2**31, 2**32 - 1, -(2**31), 2**63 - 1, -(2**63)]
    seeds += [int(s) for s in rng.integers(-(2**63), 2**63 - 1, size=12, dtype=np.int64)]
    for seed in seeds:
        info = prng.describe_seed(seed)
        assert prng.threefry_seed_words(seed, False) == info.x32.key_data, seed
        assert prng.threefry_seed_words(seed, True) == info.x64.key_data, seed
        # jax.random.key follows the same rule as the legacy PRNGKey.
        typed = tuple(int(w) for w in np.asarray(jrandom.key_data(jrandom.key(seed))))
        assert typed == info.x32.key_data


def test_article_seed_collides_with_its_low_bits_only_with_x64_off() -> None:
    info = prng.describe_seed(prng.ARTICLE_SEED)
    assert info.x32_twin == 431641414
    twin = prng.describe_seed(431641414)
    assert twin.x32.key_data == info.x32.key_data
    assert twin.x64.key_data != info.x64.key_data
    assert any("collides with seed 431641414" in n for n in info.notes)
    assert prng.describe_seed(-1).x32_twin == M
    assert prng.describe_seed(7).x32_twin is None
    assert not prng.describe_seed(7).differs


@pytest.mark.parametrize("seed", [2**63, 2**64, -(2**63) - 1])
def test_out_of_range_seeds_report_jaxs_real_error(seed) -> None:
    info = prng.describe_seed(seed)
    assert not info.in_range
    assert info.x32.error and info.x32.error.startswith("OverflowError")
    assert info.x64.error and info.x64.error.startswith("OverflowError")
    with pytest.raises(OverflowError):
        jrandom.PRNGKey(seed)
    with pytest.raises(OverflowError):
        prng.threefry_seed_words(seed, True)
    assert "`-2**63` to `2**63 - 1`" in info.notes[0]  # code spans: no emphasis eats the **


@pytest.mark.parametrize("seed", [-1, -5, 42, 2**31, -(2**31) - 1, 1765663200070])
def test_the_seeding_rule_states_jaxs_own_high_words(seed: int) -> None:
    info = prng.describe_seed(seed)
    rule = prng.seed_rule(info)
    assert "*logical* shift" in rule
    s32 = _seeds.as_signed(seed, 32)
    assert s32 == int(np.array(seed & 0xFFFFFFFF, np.uint32).view(np.int32))
    assert f"as int32 it is {s32}, high word {info.x32.key_data[0]:#010x}" in rule
    assert f"high word {info.x64.key_data[0]:#010x}." in rule
    # Python's >> is arithmetic: it differs from JAX's high word exactly for negative int32s.
    assert ("An arithmetic shift" in rule) == (s32 < 0)


def test_negative_seeds_are_explained() -> None:
    notes = " ".join(prng.describe_seed(-5).notes)
    assert "two's complement" in notes
    assert "collides with seed 4294967291" in notes


@pytest.mark.parametrize(
    "seed", [-1, -(2**31) - 1, -(2**32), -(2**32) - 1, -(2**40), -prng.ARTICLE_SEED]
)
def test_a_negative_seeds_high_word_is_all_ones_only_where_the_note_says(seed: int) -> None:
    """The note called every negative seed's x64 high word "the sign extension": below -2**31 it
    carries the seed's own bits (-(2**40) gives 0xffffff00), read here from JAX's key."""
    info = prng.describe_seed(seed)
    high = info.x64.key_data[0]
    assert (high == 0xFFFFFFFF) == (-(2**32) <= seed <= -1)
    note = info.notes[0]
    assert f"({high:#010x}; all ones, 0xffffffff, only for seeds from -2**32 to -1)" in note
    assert "sign extension" not in note


def test_a_32_bit_seed_says_the_numbers_drawn_still_differ_with_x64() -> None:
    """The same key with x64 off and on is not the same numbers: the note says so, from the
    claim that draws both (a green "all is well" box said only "the same key")."""
    notes = prng.describe_seed(42).notes
    assert "x64 off and on give the same key: [0, 42]" in notes[0]
    assert "`normal` draws float64 by default" in notes[1]
    with jax.enable_x64(False):
        off = jax.random.normal(jax.random.key(42), (3,))
    with jax.enable_x64(True):
        on = jax.random.normal(jax.random.key(42), (3,))
    assert on.dtype == np.float64 and not np.allclose(np.asarray(off), np.asarray(on))


def test_describe_seed_never_flips_the_global_x64_flag() -> None:
    assert not jax.config.jax_enable_x64
    stop = threading.Event()
    errors: list[BaseException] = []

    def hammer() -> None:
        try:
            while not stop.is_set():
                prng.describe_seed(prng.ARTICLE_SEED)
        except BaseException as err:  # surfaced below
            errors.append(err)

    worker = threading.Thread(target=hammer)
    worker.start()
    try:
        for _ in range(200):
            assert not jax.config.jax_enable_x64
            assert jnp.asarray(1).dtype == jnp.int32
            assert tuple(np.asarray(jrandom.PRNGKey(prng.ARTICLE_SEED))) == (0, 431641414)
    finally:
        stop.set()
        worker.join()
    assert not errors


@pytest.mark.parametrize(
    ("text", "value"),
    [("42", 42), (" -1 ", -1), ("+7", 7), ("1_765_663_200_070", prng.ARTICLE_SEED)],
)
def test_parse_seed_accepts_whole_numbers(text, value) -> None:
    assert prng.parse_seed(text) == value


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("1.5", "not a whole number"),
        ("1e12", "write the number out"),
        ("0x2a", "decimal"),
        ("abc", "not a whole number"),
        ("", "Type a seed"),
        ("1" * 41, "limit is 40"),
        ("1__2", "not a whole number"),
    ],
)
def test_parse_seed_refuses_anything_else(text, fragment) -> None:
    with pytest.raises(prng.SeedError) as err:
        prng.parse_seed(text)
    assert fragment in err.value.message


def test_key_hex() -> None:
    assert prng.key_hex((411, 431641414)) == "0000019b 19ba5346"
    assert prng.key_hex((411, 431641414), short=True) == "019b·5346"


# --- key trees and derivation ------------------------------------------------------------------


@pytest.mark.parametrize(("depth", "branching"), [(0, 3), (1, 1), (3, 2), (2, 4), (4, 3)])
def test_tree_has_every_node_once_and_unique_keys(depth, branching) -> None:
    tree = prng.key_tree(11, depth, branching)
    assert len(tree.nodes) == _trees.tree_size(depth, branching)
    assert tree.unique_keys == len(tree.nodes)
    assert len({n.path for n in tree.nodes}) == len(tree.nodes)
    assert tree.nodes[0].name == "root"


def test_tree_children_are_splits_of_their_parent() -> None:
    tree = prng.key_tree(11, 2, 3)
    parent = tree.node("2")
    kids = np.asarray(jrandom.key_data(jrandom.split(jrandom.wrap_key_data(
        jnp.asarray(parent.data, dtype=jnp.uint32)), 3)))  # fmt: skip
    for i in range(3):
        assert tree.node(f"2.{i}").data == tuple(int(w) for w in kids[i])
    assert tree.node("2.1").label == "split[2] → split[1]"
    assert tree.nodes[0].data == (0, 11)


def test_fold_in_tree_uses_the_chosen_data() -> None:
    tree = prng.key_tree(11, 2, 2, method="fold_in", fold_data=7)
    root = jrandom.key(11)
    expected = jrandom.fold_in(jrandom.fold_in(root, 8), 7)
    assert tree.node("1.0").data == tuple(int(w) for w in np.asarray(jrandom.key_data(expected)))
    assert tree.node("1.0").label == "fold_in(8) → fold_in(7)"
    assert tree.unique_keys == len(tree.nodes)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((6, 4, "split", 0), "limit is 121"),
        ((7, 1, "split", 0), "outside 0..6"),
        ((2, 5, "split", 0), "outside 1..4"),
        ((2, 2, "fold_in", 2**32 - 1), "fold_in data"),
        ((2, 2, "shuffle", 0), "method"),
    ],
)
def test_tree_limits_are_named(args, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        prng.key_tree(1, *args)


def test_node_samples_are_the_keys_samples() -> None:
    key = jrandom.split(jrandom.key(3))[1]
    data = tuple(int(w) for w in np.asarray(jrandom.key_data(key)))
    np.testing.assert_array_equal(prng.node_samples(data, 5), np.asarray(jrandom.normal(key, (5,))))


def test_wide_and_chained_derivations_give_the_documented_keys() -> None:
    n = 6
    d = _trees.derive_keys(5, n)
    root = jrandom.key(5)
    chain, key = [], root
    for _ in range(n):
        key, sub = jrandom.split(key)
        chain.append(np.asarray(jrandom.key_data(sub)))
    np.testing.assert_array_equal(d.keys["chained split"], np.stack(chain))
    np.testing.assert_array_equal(
        d.keys["split(key, n)"], np.asarray(jrandom.key_data(jrandom.split(root, n)))
    )
    folded = np.stack([np.asarray(jrandom.key_data(jrandom.fold_in(root, i))) for i in range(n)])
    np.testing.assert_array_equal(d.keys["fold_in(key, i)"], folded)
    for scheme in _trees.DERIVATIONS:
        assert d.unique(scheme) == n
    # With partitionable threefry (the default) split(key, n)[i] is fold_in(key, i), so the
    # chain's first subkey, split(key)[1], is also the wide scheme's key 1: the page says so.
    assert jax.config.jax_threefry_partitionable
    np.testing.assert_array_equal(d.keys["split(key, n)"], d.keys["fold_in(key, i)"])
    np.testing.assert_array_equal(d.keys["chained split"][0], d.keys["split(key, n)"][1])
    assert d.shared("chained split", "split(key, n)") == 1


def test_time_derivations_measures_each_scheme() -> None:
    rows = prng.time_derivations(64, budget_s=0.01)
    assert [r.scheme for r in rows] == list(_trees.DERIVATIONS)
    assert all(r.timing.median > 0 and r.timing.repeats >= 5 for r in rows)
    with pytest.raises(ValueError):
        prng.time_derivations(0)


# --- typed keys and implementations ------------------------------------------------------------


def test_key_forms_hold_the_same_words_and_draw_the_same_numbers() -> None:
    forms = prng.key_forms(9)
    assert [f.dtype for f in forms] == ["uint32", "key<fry>", "uint32", "key<fry>"]
    assert [f.shape for f in forms] == [(2,), (), (2,), ()]
    assert {f.data for f in forms} == {(0, 9)}
    assert len({f.samples for f in forms}) == 1


def test_impls_have_their_key_shapes() -> None:
    infos = {i.impl: i for i in prng.impl_infos(9)}
    assert set(infos) == set(prng.IMPLS)
    assert infos["threefry2x32"].data_shape == (2,)
    assert infos["rbg"].data_shape == (4,)
    assert infos["unsafe_rbg"].data_shape == (4,)
    assert infos["threefry2x32"].dtype == "key<fry>"
    expected = np.asarray(jrandom.normal(jrandom.key(9, impl="rbg"), (4,)))
    np.testing.assert_allclose(infos["rbg"].samples, expected)
    assert infos["rbg"].split_data != infos["unsafe_rbg"].split_data


def test_time_impls_times_every_implementation() -> None:
    rows = _impls.time_impls(1000, budget_s=0.01)
    assert [r.impl for r in rows] == list(prng.IMPLS)
    assert all(r.timing.median > 0 and r.n == 1000 for r in rows)
    assert rows[0].device.startswith("cpu")
    with pytest.raises(ValueError, match="10,000,000"):
        prng.time_impl("rbg", _seeds.MAX_TIMED_NUMBERS + 1)
    with pytest.raises(ValueError, match="Unknown PRNG"):
        prng.time_impl("mt19937", 10)


# --- parallel streams --------------------------------------------------------------------------


def test_parallel_stats_are_the_articles_samples() -> None:
    """Summaries of the article's own samples: the corner the heatmap shows and the moments."""
    stats = prng.parallel_stats(prng.ARTICLE_SEED, 1000, 10)
    samples = np.asarray(prng.article_parallel(prng.ARTICLE_SEED, 1000, 10), dtype=np.float64)
    assert stats.shape == (1000, 10) and stats.corner.shape == (_streams.HEATMAP_ROWS, 10)
    np.testing.assert_array_equal(stats.corner, samples[: _streams.HEATMAP_ROWS])
    assert stats.mean == pytest.approx(samples.mean()) and stats.std == pytest.approx(samples.std())
    np.testing.assert_allclose(stats.corr, np.corrcoef(samples[:8]))
    assert abs(stats.mean) < 0.05
    assert abs(stats.std - 1) < 0.05
    assert abs(stats.skewness) < 0.15
    assert abs(stats.excess_kurtosis) < 0.3
    assert stats.corr.shape == (8, 8)


def test_independent_streams_stay_inside_the_band_and_reused_ones_do_not() -> None:
    good = prng.parallel_stats(1, 8, 2000)
    assert good.within_band is not None and good.within_band >= 0.85
    assert np.max(np.abs(good.off_diagonal)) < 4 / np.sqrt(2000)
    bad = prng.parallel_stats(1, 8, 2000, reuse=True)
    np.testing.assert_allclose(bad.corr, 1.0, atol=1e-9)
    assert bad.within_band == 0.0


def test_a_band_holding_every_correlation_gives_no_fraction() -> None:
    """At 2 or 3 samples a stream ±1.96/√n is wider than ±1: 100% was said of identical streams."""
    for n in (2, 3):
        assert prng.parallel_stats(1, 1000, n, reuse=True).within_band is None
        assert "cannot tell streams apart" in prng.band_caption(n, 1.96 / np.sqrt(n))
    assert prng.parallel_stats(1, 1000, 4, reuse=True).within_band == 0.0
    assert prng.parallel_stats(1, 5, 10).corr.shape == (5, 5)  # the title says 5 streams


def test_parallel_limit_is_named() -> None:
    with pytest.raises(ValueError, match="1,000,000"):
        prng.parallel_stats(1, 10_000, 1000)


# --- pitfalls ----------------------------------------------------------------------------------


def test_reusing_a_key_repeats_numbers_and_splitting_does_not() -> None:
    demo = _pitfalls.reuse_demo(4)
    assert demo.identical
    assert not np.array_equal(demo.split_a, demo.split_b)
    assert not np.array_equal(demo.first, demo.split_a)


def test_key_reuse_checker_raises_and_leaves_the_setting_alone() -> None:
    outcome = _pitfalls.check_key_reuse_in_process(4)
    assert outcome.raised
    assert outcome.exc_type == "KeyReuseError"
    assert outcome.line == _pitfalls.KEY_REUSE_LINE
    assert outcome.stdout.startswith("first draw:")
    assert not jax.config.jax_debug_key_reuse
    # Without the checker the same program runs quietly.
    key = jrandom.key(4)
    jrandom.normal(key, (3,))
    jrandom.normal(key, (3,))


def test_key_reuse_checker_raises_in_the_sandbox() -> None:
    from jaxplay import sandbox as runner

    outcome = prng.check_key_reuse_sandboxed(4)
    assert outcome.raised
    assert outcome.exc_type == "KeyReuseError"
    assert outcome.line == _pitfalls.KEY_REUSE_LINE
    assert outcome.stdout.startswith("first draw:")
    if runner.refusal() is None:  # a public server without bubblewrap refuses all code
        assert outcome.where == "sandbox"
    assert not jax.config.jax_debug_key_reuse


def test_key_reuse_checker_falls_back_in_process_when_the_sandbox_refuses(monkeypatch) -> None:
    from jaxplay import sandbox as runner
    from jaxplay.sandbox._results import refused

    monkeypatch.setattr(runner, "run_code", lambda *a, **k: refused("public server without bwrap"))
    outcome = prng.check_key_reuse_sandboxed(4)
    assert outcome.raised and outcome.exc_type == "KeyReuseError"
    assert outcome.where.startswith("in-process, because the sandbox did not run it (refused:")


def test_key_reuse_source_is_valid_and_its_line_is_the_second_draw() -> None:
    source = prng.key_reuse_source(4)
    ast.parse(source)
    line = source.splitlines()[_pitfalls.KEY_REUSE_LINE - 1]
    assert line.startswith("b = jax.random.normal(key")
    assert "jax_debug_key_reuse" in source


def test_transforms_give_the_same_numbers() -> None:
    agreement = _pitfalls.transform_agreement(6)
    assert set(agreement.results) == {"eager", "jit", "vmap", "jit(vmap)"}
    assert agreement.max_abs_difference == 0.0


def test_stochastic_layer_as_written_fails_or_silently_changes_shape() -> None:
    written, fixed = _pitfalls.stochastic_layer_runs(5)
    assert written.error_type == "ValueError"
    assert "inconsistent sizes" in (written.error or "")
    assert fixed.shape == (5, 4)
    written, fixed = _pitfalls.stochastic_layer_runs(4)
    assert written.error is None and written.shape == (4,)
    assert fixed.shape == (4, 4)


def test_fixed_stochastic_layer_is_per_sample_noise_with_shared_params() -> None:
    _, fixed = _pitfalls.stochastic_layer_runs(3, seed=2)
    kw, kb, kx, kn = jrandom.split(jrandom.PRNGKey(2), 4)
    W, b = jrandom.normal(kw, (4, 3)), jrandom.normal(kb, (4,))
    xs, keys = jrandom.normal(kx, (3, 3)), jrandom.split(kn, 3)
    for i in range(3):
        expected = W @ xs[i] + b + jrandom.normal(keys[i], (4,)) * 0.1
        np.testing.assert_allclose(fixed.output[i], np.asarray(expected), rtol=1e-5, atol=1e-6)


def test_training_loop_threads_the_key_and_dropping_it_freezes_the_noise() -> None:
    threaded, dropped = _pitfalls.training_runs(0, 40)
    assert threaded.unique_subkeys == threaded.unique_masks == 40
    assert dropped.unique_subkeys == dropped.unique_masks == 1
    assert threaded.masks.shape == dropped.masks.shape == (40, 64, 8)
    # Both start from the same key: the first step is the same, then they part.
    np.testing.assert_array_equal(threaded.masks[0], dropped.masks[0])
    assert threaded.losses[0] == dropped.losses[0]
    # One fixed mask is plain gradient descent on one quadratic: the loss only goes down.
    assert np.all(np.diff(dropped.losses) <= 1e-6)
    assert np.any(np.diff(threaded.losses) > 0)
    assert threaded.mean_jump > dropped.mean_jump > 0
    assert dropped.mean_jump == pytest.approx(np.mean(np.abs(np.diff(dropped.losses))))
    # The mask really is the one the step drew from its subkey.
    key = jrandom.wrap_key_data(jnp.asarray(threaded.subkeys[5], dtype=jnp.uint32))
    np.testing.assert_array_equal(threaded.masks[5], jrandom.bernoulli(key, 0.5, (64, 8)))
    with pytest.raises(ValueError):
        _pitfalls.training_runs(0, 0)


# --- figures -----------------------------------------------------------------------------------


def test_tree_figure_draws_every_node_and_edge() -> None:
    tree = prng.key_tree(11, 2, 3)
    fig = prng.key_tree_figure(tree, selected="1.2")
    edges, nodes = fig.data
    assert len(nodes.x) == len(tree.nodes) == 13
    assert list(nodes.customdata) == [n.name for n in tree.nodes]
    assert list(nodes.text) == [prng.key_hex(n.data, short=True) for n in tree.nodes]
    assert list(nodes.marker.size).count(16) == 1
    assert list(nodes.marker.size)[[n.name for n in tree.nodes].index("1.2")] == 16
    assert sum(v is None for v in edges.x) == len(tree.nodes) - 1
    pos = _figures.tree_positions(tree)
    assert pos[()] == (0.0, pos[(1,)][1])  # the root sits level with its middle child


def test_parallel_figures_show_the_samples() -> None:
    stats = prng.parallel_stats(1, 300, 150)
    samples = _streams.streams(1, 300, 150)
    heat = prng.samples_heatmap(stats)
    assert np.asarray(heat.data[0].z).shape == (_streams.HEATMAP_ROWS, _streams.HEATMAP_COLS)
    assert "200 of 300 keys × 100 of 150 samples" in heat.layout.title.text
    hist = prng.histograms_figure(stats)
    assert len(hist.data) == 4
    centres, density = _streams.density_histogram(samples.reshape(-1))
    np.testing.assert_allclose(hist.data[0].y, density)
    np.testing.assert_allclose(hist.data[0].x, centres)
    np.testing.assert_allclose(hist.data[2].y, _streams.density_histogram(samples[:, 0])[1])
    # The bars are a density: they integrate to the share of samples inside [-4, 4].
    inside = np.mean(np.abs(samples) < 4)
    assert abs(np.sum(density * np.diff(centres)[0]) - inside) < 1e-9
    assert abs(np.max(density) - _figures.normal_pdf(np.zeros(1))[0]) < 0.05
    grid = np.linspace(-8, 8, 4001)
    assert abs(np.trapezoid(_figures.normal_pdf(grid), grid) - 1) < 1e-6
    corr = prng.correlation_figure(stats.corr, stats.band, "t")
    np.testing.assert_array_equal(np.asarray(corr.data[0].z), stats.corr)


def test_timing_and_training_figures() -> None:
    rows = prng.time_derivations(16, budget_s=0.01)
    fig = prng.timing_figure([(r.scheme, r.timing) for r in rows], "16 keys", "cpu")
    np.testing.assert_allclose(fig.data[0].y, [r.timing.median * 1e3 for r in rows])
    assert "cpu" in fig.layout.title.text
    runs = _pitfalls.training_runs(0, 10)
    fig = prng.training_figure(runs)
    assert len(fig.data) == 4
    np.testing.assert_allclose(fig.data[0].y, runs[0].losses)
    np.testing.assert_array_equal(fig.data[3].z, runs[1].masks[:, 0, :].T.astype(int))


def test_the_mask_panels_count_example_0s_masks_as_they_draw_them() -> None:
    """The panel shows example 0's mask per step, and its title counted the batch's masks (60
    where example 0 has 52 at the article's seed and 60 steps)."""
    threaded, dropped = _pitfalls.training_runs(_seeds.ARTICLE_SEED, 60)
    own = len({np.asarray(m)[0].tobytes() for m in threaded.masks})
    assert threaded.unique_example_masks == own < threaded.unique_masks
    titles = [a.text for a in _figures.training_figure((threaded, dropped)).layout.annotations]
    assert any(f"example 0's mask ({own} distinct)" in t for t in titles), titles
    assert dropped.unique_example_masks == 1


def test_a_new_seed_compiles_nothing_new_for_the_implementations_table() -> None:
    """Each implementation's vmap-against-loop draw is one program for the process (JAX's own
    cache count): compiled again for every key, a new seed on the page cost the server about
    3 s of compiling."""
    from jaxplay.core import jax_private

    _impls.impl_infos(11)
    programs = jax_private.cache_size(_impls._mapped_and_looped)
    for seed in (12, 13, 2**31 - 1):
        _impls.impl_infos(seed)
    assert jax_private.cache_size(_impls._mapped_and_looped) == programs >= 1
