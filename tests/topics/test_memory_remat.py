"""Gradient checkpointing: saved residuals, compiled memory, gradients, limits, the chart."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxplay import memory
from jaxplay.memory import VARIANTS, _remat, _remat_report, analyse_variant, build_loss
from jaxplay.memory._residuals import parse_residual, saved_residuals

SMALL, DEPTH = 16, 3


def _residuals(model: str, variant: str, loop: str = "unrolled", **kw):
    loss = build_loss(model, variant, loop, DEPTH)
    params, x = memory.MODELS[model].inputs(SMALL, DEPTH)
    return saved_residuals(loss, params, x, **kw)


def test_residual_counts_follow_each_variant_as_documented():
    """The seed layer: 4 values per round without checkpointing (sin and cos of the input, and the
    two operands of the dot), only the input for the checkpointed whole layer, one per round with
    per-round checkpoints, and the named sin(x) on top with save_only_these_names."""
    rows = {key: _residuals("seed", key) for key in VARIANTS}
    assert len(rows["none"]) == 4 * DEPTH
    assert [r.origin for r in rows["whole"]] == ["argument"]
    assert rows["whole"][0].producer == "x" and rows["whole"][0].shape == (SMALL, SMALL)
    assert len(rows["per_round"]) == DEPTH
    assert len(rows["per_round_dots"]) == DEPTH
    named = [r for r in rows["per_round_names"] if r.origin == "named"]
    assert len(named) == DEPTH and {r.producer for r in named} == {"sin"}
    assert len(rows["per_round_names"]) == 2 * DEPTH
    assert all(r.bytes == SMALL * SMALL * 4 and r.dtype == "f32" for r in rows["none"])
    assert {r.producer for r in rows["none"]} >= {"sin", "cos"}
    assert all("_remat.py" in (r.source or "") for r in rows["none"])


def test_checkpointed_whole_mlp_saves_only_its_inputs():
    rows = _residuals("mlp", "whole")
    assert {r.origin for r in rows} == {"argument"}
    assert sorted(r.producer for r in rows) == ["params[0]", "params[1]", "x"]
    assert len(_residuals("mlp", "none")) > len(rows)


def test_dots_saveable_can_save_as_many_as_no_checkpoint():
    """Why the claim says "with its default policy": on the MLP, dots_saveable saves as many
    residuals as no checkpoint at all, so "checkpoint saves fewer" is not true of every policy."""
    assert len(_residuals("mlp", "per_round_dots")) == len(_residuals("mlp", "none"))
    assert len(_residuals("mlp", "per_round")) < len(_residuals("mlp", "none"))


@pytest.mark.parametrize("model", ["seed", "mlp"])
def test_the_residuals_shown_are_those_of_the_gradient_the_page_takes(model: str) -> None:
    """The page differentiates by one argument (``Model.argnums``); JAX's residual list of the
    function of that argument alone is the ground truth. Counted for both arguments, the MLP
    showed 12 where its gradient saves 11 (the first layer's weights kept again, for ``x``)."""
    argnums = memory.MODELS[model].argnums
    for variant in VARIANTS:
        loss = build_loss(model, variant, "unrolled", DEPTH)
        args = memory.MODELS[model].inputs(SMALL, DEPTH)

        def alone(wrt, loss=loss, args=args):
            return loss(*[wrt if i == argnums else a for i, a in enumerate(args)])

        truth = saved_residuals(alone, args[argnums])
        shown = analyse_variant(model, variant, "unrolled", SMALL, DEPTH, run=False).residuals
        assert len(shown) == len(truth), variant
        assert sorted(r.producer for r in shown if r.origin == "output") == sorted(
            r.producer for r in truth if r.origin == "output"
        )


def test_scan_saves_stacked_residuals():
    none = _residuals("seed", "none", loop="scan")
    per_round = _residuals("seed", "per_round", loop="scan")
    assert all(r.shape == (DEPTH, SMALL, SMALL) for r in none)
    assert [r.shape for r in per_round] == [(DEPTH, SMALL, SMALL)]
    assert sum(r.bytes for r in none) == 4 * DEPTH * SMALL * SMALL * 4


def test_printed_and_structured_residuals_agree():
    for key in ("none", "per_round_names"):
        assert _residuals("seed", key) == _residuals("seed", key, use_private=False)
    for key in ("none", "whole"):  # by one argument: the same count, the same values made
        private = _residuals("mlp", key, argnums=0)
        printed = _residuals("mlp", key, use_private=False, argnums=0)
        assert sorted(r.shape for r in private) == sorted(r.shape for r in printed)


@pytest.mark.parametrize(
    ("aval", "description", "origin", "producer", "source", "nbytes"),
    [
        ("f32[1000,1000]", "from the argument x", "argument", "x", None, 4_000_000),
        (
            "bf16[2,3]",
            "output of cos from /a/b/model.py:12:9 (layer)",
            "output",
            "cos",
            "model.py:12 (layer)",
            12,
        ),
        ("f32[4]", "named 'sin' from /m.py:3:1 (f)", "named", "sin", "m.py:3 (f)", 16),
        ("s32[]", "from a constant", "constant", "constant", None, 4),
        (
            "f64[2]",
            "output of jitted function 'g' from x.py:5 (h)",
            "jitted",
            "g",
            "x.py:5 (h)",
            16,
        ),
    ],
)
def test_parse_residual(aval, description, origin, producer, source, nbytes):
    r = parse_residual(aval, description)
    assert (r.origin, r.producer, r.source, r.bytes) == (origin, producer, source, nbytes)


def test_compiled_memory_is_positive_and_ordered_in_a_scan():
    """In a scan XLA cannot merge recomputation with the forward pass, so per-round
    checkpointing needs less scratch memory than saving everything; keeping the named sin(x)
    lies in between; checkpointing only the whole layer saves nothing at peak."""
    results = {
        k: analyse_variant("seed", k, "scan", 32, 6, run=False)
        for k in ("none", "whole", "per_round", "per_round_names")
    }
    for r in results.values():
        assert r.memory is not None
        assert r.memory["argument"] == r.memory["output"] == 32 * 32 * 4
        assert r.temp_bytes is not None and r.temp_bytes > 0
        assert r.time is None and r.gradient is None
    temp = {k: r.temp_bytes for k, r in results.items()}
    assert temp["per_round"] < temp["per_round_names"] < temp["none"]
    assert temp["whole"] >= temp["per_round"]
    residual = {k: r.residual_bytes for k, r in results.items()}
    assert residual["whole"] < residual["per_round"] < residual["per_round_names"]
    assert residual["per_round_names"] < residual["none"]


def test_jax_places_optimization_barriers_only_where_it_recomputes():
    none = analyse_variant("seed", "none", "unrolled", 8, 2, run=False)
    per_round = analyse_variant("seed", "per_round", "unrolled", 8, 2, run=False)
    assert none.barriers[0] == 0
    assert per_round.barriers[0] > 0


@pytest.mark.parametrize("model", ["seed", "mlp"])
def test_gradients_of_all_variants_agree_and_are_timed(model):
    results = [
        analyse_variant(model, k, "scan", SMALL, DEPTH, run=True, budget_s=0.01) for k in VARIANTS
    ]
    reference = results[0]
    assert reference.gradient is not None
    assert all(np.isfinite(g).all() for g in reference.gradient)
    assert max(float(np.abs(g).max()) for g in reference.gradient) > 0
    for r in results:
        assert r.time is not None and r.time.median > 0
        error = _remat_report.gradient_error(r, reference)
        assert error is not None and error < _remat.GRAD_RTOL, r.variant.key
    if memory.platform() == "cpu":
        assert all(r.peak_bytes is None for r in results)
    rows = _remat_report.summary_rows(results)
    assert [row["variant"] for row in rows] == [v.short for v in VARIANTS.values()]
    assert all(row["gradient vs no checkpoint"] != "not run" for row in rows)
    # As the page shows it: no column empty on this backend, shared sizes said once.
    table = memory.summary_table(results)
    shown = set(table.rows[0])
    if memory.platform() == "cpu":
        assert "peak MiB" not in shown  # a CPU reports no peak
    assert "argument MiB" not in shown and "argument MiB: " in table.constants
    assert {"variant", "saved residuals", "temp MiB", "gradient time"} <= shown


def test_gradient_matches_the_articles_plain_grad():
    """The page's loss is the article's: grad of sum(memory_intensive_layer(x)) on ones."""

    def memory_intensive_layer(x):
        for _ in range(DEPTH):
            x = jnp.sin(x) @ jnp.cos(x).T
        return x

    x = jnp.ones((SMALL, SMALL))
    expected = jax.grad(lambda x: jnp.sum(memory_intensive_layer(x)))(x)
    result = analyse_variant("seed", "whole", "unrolled", SMALL, DEPTH, run=True, budget_s=0.01)
    assert result.gradient is not None
    np.testing.assert_allclose(result.gradient[0], np.ravel(expected), rtol=1e-4)


def test_a_large_gradient_is_kept_as_a_bounded_sample():
    """A cached result holds at most GRADIENT_SAMPLE entries per leaf, whatever the size."""
    size, depth = 256, 5  # the weights' gradient: 5 × 256 × 256 = 327,680 entries
    result = analyse_variant("mlp", "none", "scan", size, depth, run=True, budget_s=0.01)
    assert result.gradient is not None
    weights, biases = result.gradient
    assert depth * size * size > memory.GRADIENT_SAMPLE >= weights.size
    assert weights.size > memory.GRADIENT_SAMPLE // 2
    assert biases.size == depth * size  # small leaves whole


def test_a_wrong_gradient_is_detected():
    ok = analyse_variant("seed", "none", "scan", 8, 2, run=True, budget_s=0.01)
    assert ok.gradient is not None
    broken = memory.RematResult(
        ok.variant, ok.residuals, ok.memory, gradient=(ok.gradient[0] * 1.01,)
    )
    error = _remat_report.gradient_error(broken, ok)
    assert error is not None and error > _remat.GRAD_RTOL


def test_limits_name_themselves():
    assert memory.check_size(64, 10) is None
    message = memory.check_size(memory.MAX_SIZE + 1, 10)
    assert message is not None and str(memory.MAX_SIZE) in message
    message = memory.check_size(64, memory.MAX_DEPTH + 1)
    assert message is not None and str(memory.MAX_DEPTH) in message
    with pytest.raises(ValueError, match=str(memory.MAX_SIZE)):
        analyse_variant("seed", "none", "scan", memory.MAX_SIZE + 1, 2, run=False)
    limit = memory.run_limit(memory.platform())
    with pytest.raises(ValueError, match=str(limit)):
        analyse_variant("seed", "none", "scan", limit + 1, 2, run=True)


def test_memory_time_figure_has_a_point_per_timed_variant():
    results = [
        analyse_variant("seed", k, "scan", 8, 2, run=True, budget_s=0.01)
        for k in ("none", "per_round")
    ]
    untimed = analyse_variant("seed", "whole", "scan", 8, 2, run=False)
    fig = memory.memory_time_figure([*results, untimed], "cpu (cpu)")
    assert len(fig.data) == 2
    assert [t.text[0] for t in fig.data] == [r.variant.short for r in results]
    assert fig.data[0].y[0] == pytest.approx(results[0].temp_bytes / 2**20)
    assert fig.data[0].x[0] == pytest.approx(results[0].time.median * 1e3)
    assert "cpu (cpu)" in fig.layout.title.text
    assert "ms" in fig.layout.xaxis.title.text and "MiB" in fig.layout.yaxis.title.text


def test_variant_code_names_the_models_tag():
    code = memory.variant_code(VARIANTS["per_round_names"], memory.MODELS["mlp"])
    assert "save_only_these_names('activation')" in code
    text = memory.variant_explanation(VARIANTS["per_round_names"], memory.MODELS["seed"])
    assert "checkpoint_name(..., 'sin')" in text


def test_the_articles_residuals_are_what_the_walkthrough_says():
    """40 residuals for the article's 10 rounds, four per round: the matmul's operands and the
    derivative factors (the walkthrough's sentence, checked against JAX)."""
    from jaxplay import article

    x = jnp.ones((8, 8))
    found = _remat.saved_residuals(lambda v: jnp.sum(article.memory_intensive_layer(v)), x)
    producers = [r.producer for r in found]
    assert len(found) == 40
    assert (producers.count("sin"), producers.count("cos"), producers.count("transpose")) == (
        20,
        10,
        10,
    )
    roles = _remat.residual_roles("seed", "none", "unrolled", 10)
    assert roles == {"derivative factors": 20, "matmul operands": 20}
    explanation = article.by_id("memory-checkpoint-fixed").explanation
    assert "40 without checkpointing, four per round" in explanation
    assert "products of each round" not in explanation


def test_residual_roles_are_worked_out_once_per_setting_and_not_shared_with_results():
    """A new size reuses the roles (the size does not change them); a result's roles are its
    own copy, so changing one changes no other."""
    _remat.residual_roles("mlp", "whole", "scan", 3)
    hits = _remat.residual_roles.cache_info().hits
    small = memory.analyse_variant("mlp", "whole", "scan", 8, 3, False)
    large = memory.analyse_variant("mlp", "whole", "scan", 24, 3, False)
    assert _remat.residual_roles.cache_info().hits == hits + 2
    assert small.roles == large.roles == _remat.residual_roles("mlp", "whole", "scan", 3)
    assert small.roles is not large.roles


def _story(model: str, loop: str, size: int, depth: int):  # type: ignore[no-untyped-def]
    """Each variant's result and its paragraph of the story (by variant key)."""
    results = {key: analyse_variant(model, key, loop, size, depth, False) for key in VARIANTS}
    ordered = list(results.values())
    told = _remat_report.remat_story(ordered, _remat.MODELS[model], loop, "cpu")
    return results, {r.variant.key: t for r, t in zip(ordered[1:], told, strict=True)}


def test_a_scan_that_saves_as_many_residuals_says_the_count_does_not_show_the_saving() -> None:
    """The MLP under lax.scan with dots_saveable saves as many residuals as without checkpoint,
    other ones, and less temp memory: "recomputes the rest" of an equal count was said."""
    results, told = _story("mlp", "scan", 128, 4)
    dots, none = results["per_round_dots"], next(iter(results.values()))
    assert len(dots.residuals) == len(none.residuals)
    assert dots.temp_bytes is not None and none.temp_bytes is not None
    assert dots.temp_bytes < none.temp_bytes
    assert {r.description for r in dots.residuals} != {r.description for r in none.residuals}
    assert "the count does not show the saving" in told["per_round_dots"]
    assert "recomputes the rest" not in told["per_round_dots"]


def test_temp_memory_that_grew_is_said_to_grow() -> None:
    """The unrolled MLP of depth 3 checkpointed per block takes more temp memory than without
    checkpoint: "did not drop" was said."""
    results, told = _story("mlp", "unrolled", 128, 3)
    reference = next(iter(results.values())).temp_bytes or 0
    grew = [k for k, r in results.items() if r.temp_bytes is not None and r.temp_bytes > reference]
    assert grew
    for key in grew:
        assert "the temp memory grew" in told[key], told[key]
        assert "did not drop" not in told[key]


@pytest.mark.parametrize("depth", [1, 3])
def test_dots_saveable_saves_nothing_more_on_the_seed_layer(depth: int) -> None:
    """Each seed block's product is the next block's input, saved under every policy: the
    dots_saveable note says so rather than "matrix-product outputs are saved too"."""
    each = analyse_variant("seed", "per_round", "unrolled", 128, depth, False)
    dots = analyse_variant("seed", "per_round_dots", "unrolled", 128, depth, False)
    assert [r.description for r in dots.residuals] == [r.description for r in each.residuals]
    assert "nothing more than nothing_saveable" in _remat.VARIANTS["per_round_dots"].explanation


def test_names_that_save_the_counted_op_do_not_say_nothing_is_recomputed() -> None:
    """The seed layer unrolled, per block with only the tagged ``sin`` saved: no extra ``sin``,
    yet its ``cos`` is recomputed in the lowered program (and merged back by XLA); "XLA has
    nothing to merge" was said."""
    import re

    import jax

    model = _remat.MODELS["seed"]
    results, told = _story("seed", "unrolled", 16, 10)
    names = results["per_round_names"]
    none = next(iter(results.values()))
    assert names.ops[0] == none.ops[0]  # the counted op, sin: no extra one
    shapes = jax.eval_shape(lambda: model.inputs(16, 10))

    def cosines(variant: str) -> int:
        loss = build_loss("seed", variant, "unrolled", 10)
        lowered = jax.jit(jax.grad(loss, argnums=model.argnums)).lower(*shapes).as_text()
        return len(re.findall(r"stablehlo\.cosine", lowered))

    assert cosines("per_round_names") > cosines("none"), "nothing else was recomputed"
    assert "nothing to merge" not in told["per_round_names"]
    assert f"only `{model.op}` is counted here" in told["per_round_names"]


def test_the_variant_explanations_hold_for_the_mlp():
    """The whole layer saves its arguments (the MLP's weights and biases too, not only x), and
    save_only_these_names saves what nothing_saveable does where the tag is the block's output."""
    whole = _residuals("mlp", "whole")
    assert {r.producer for r in whole} == {"params[0]", "params[1]", "x"}
    assert "arguments (x, the MLP's weights and biases) are saved" in VARIANTS["whole"].explanation
    named, plain = _residuals("mlp", "per_round_names"), _residuals("mlp", "per_round")
    assert len(named) == len(plain) and sum(r.bytes for r in named) == sum(r.bytes for r in plain)
    assert "saves no more than nothing_saveable" in VARIANTS["per_round_names"].explanation
