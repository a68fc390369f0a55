"""What the compose page says and offers, built in ``jaxplay.compose`` from a run: the builder's
settings (the address's names), its sentences around a run, each tab's sentences, and the two
timed sweeps' table. Fakes stand in for runs, so each sentence is checked against known values.
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxplay import compose as cp
from jaxplay import sandbox
from jaxplay.compose import _hvp, _jacobians, _per_sample
from jaxplay.core import timing
from jaxplay.core.capture import Outcome
from jaxplay.core.errors import FriendlyError

FIRST = "per-example gradients: jit(vmap(grad(f)))"


def _timing(seconds: float) -> timing.Timing:
    return timing.Timing(samples=(seconds,) * 3, number=1, warmup=1)


def _result(**fields: object) -> cp.PipelineResult:
    base: dict[str, object] = {
        "code": "",
        "input_shape": (4, 3),
        "output_shape": (4, 3),
        "values": np.zeros((4, 3)),
        "jaxpr": "",
        "error": None,
    }
    return cp.PipelineResult(**{**base, **fields})  # type: ignore[arg-type]


# --- the builder's settings: shared links name them ----------------------------------------------


def test_the_settings_keep_the_names_links_use() -> None:
    assert cp.SETTING_KEYS == (
        "compose_preset",
        "compose_t0",
        "compose_t1",
        "compose_t2",
        "compose_t3",
        "compose_function",
        "compose_shape",
        "compose_formula",
    )
    assert cp.DEFAULT_SETTINGS == {
        "compose_preset": FIRST,
        "compose_t0": "jit",
        "compose_t1": "vmap",
        "compose_t2": "grad",
        "compose_t3": "—",
        "compose_function": "sum of sin² (vector → number)",
        "compose_shape": "a batch of 4 vectors: shape (4, 3)",
    }


@pytest.mark.parametrize("name", list(cp.STACK_PRESETS))
def test_a_presets_settings_put_its_stack_in_the_boxes(name: str) -> None:
    preset = cp.STACK_PRESETS[name]
    settings = cp.preset_settings(name)
    boxes = tuple(settings[k] for k in cp.SLOT_KEYS)
    assert cp.stack_of(boxes) == preset.stack
    assert boxes[len(preset.stack) :] == ("—",) * (cp.MAX_STACK - len(preset.stack))
    assert settings["compose_function"] in cp.FUNCTION_CHOICES
    assert settings["compose_shape"] in cp.SHAPE_CHOICES
    assert all(box in cp.SLOT_CHOICES for box in boxes)


def test_the_boxes_offer_every_choice_and_an_empty_box_is_skipped_anywhere() -> None:
    assert cp.SLOT_CHOICES == (
        "—",
        "jit",
        "vmap",
        "grad",
        "jacfwd",
        "jacrev",
        "hessian",
        "checkpoint",
    )
    assert cp.FUNCTION_CHOICES[-1] == cp.TYPED_FORMULA == "type a formula"
    assert cp.PRESET_CHOICES[0] == FIRST and len(cp.PRESET_CHOICES) == len(cp.STACK_PRESETS)
    assert cp.stack_of(("—", "jit", "—", "grad")) == ("jit", "grad")
    assert cp.stack_of(("—",) * cp.MAX_STACK) == ()
    assert [cp.slot_label(i) for i in range(3)] == ["outermost", "then 2", "then 3"]


# --- the builder's sentences -------------------------------------------------------------------


def test_the_caption_says_what_each_transform_does() -> None:
    assert cp.stack_caption(()) == "No transform: f itself."
    caption = cp.stack_caption(("jit", "grad"))
    assert caption.startswith("**jit** compiles the function below it")
    assert " · **grad** gradient of a scalar-valued function" in caption
    assert cp.formula_help().startswith("Allowed: jax.nn.celu, jax.nn.elu, ")


def test_what_the_spinner_says_names_the_worker_and_its_deadline() -> None:
    preset = cp.STACK_PRESETS[FIRST]
    source, shape = cp.FUNCTIONS[preset.function], (4, 3)
    assert cp.applying(preset.stack, source, shape) == "Applying jit ∘ vmap ∘ grad to f"
    deadline = sandbox.RunnerConfig.from_env().limits.timeout_s
    assert cp.applying((), source, shape) == (
        f"Applying no transform to f in a sandboxed worker (at most {deadline:g} s)"
    )


def test_a_refusal_is_a_limit_or_a_failed_run() -> None:
    assert cp.refusal(ValueError("at most 4 transforms"), ("jit",)) == (
        "at most 4 transforms",
        True,
    )
    limit = sandbox.TaskFailed(
        sandbox.RunError("exception", "the result would have 9 elements", exc_type="ValueError")
    )
    assert cp.refusal(limit, ("grad",)) == ("the result would have 9 elements", True)
    slow = sandbox.TaskFailed(sandbox.RunError("timeout", "Ran past its deadline."), timeout_s=3)
    text, is_limit = cp.refusal(slow, ("hessian", "hessian"))
    assert not is_limit
    assert text.startswith("Applying 2 transforms to this formula took longer than 3 s")
    assert "try fewer transforms (hessian counts twice)" in text
    one, _ = cp.refusal(slow, ("hessian",))
    assert one.startswith("Applying 1 transform to this formula took")


def test_jaxs_refusal_is_said_in_plain_words_and_escaped() -> None:
    error = FriendlyError(
        "",
        "TypeError",
        "Gradient only defined for scalar-output functions. Output had shape: (3,).",
    )
    sentence = cp.refused_sentence(error)
    assert sentence.startswith(
        "**JAX refuses:** grad needs a function that returns a scalar \\(shape \\(\\)\\)"
    )
    assert "returns shape \\(3\\,\\)\\." in sentence  # the plain words, escaped for Markdown


def test_the_notes_follow_the_stack_and_the_run() -> None:
    traced = _result(traced_calls=1, eager_max_abs_diff=0.0)
    notes = cp.pipeline_notes(traced, ("jit", "vmap", "grad"))
    assert notes[0].startswith("f's Python code ran once while the whole stack was traced")
    assert "for x's 4 rows" in notes[0]
    assert notes[1] == "The same stack without jit, run op by op, gives identical values."
    apart = cp.pipeline_notes(_result(eager_max_abs_diff=1.5e-7), ("jit", "grad"))
    assert len(apart) == 1
    assert "1.5e-07: XLA compiles the stack as one program and may rewrite it" in apart[0]
    assert cp.pipeline_notes(_result(input_shape=()), ("grad",)) == []
    twice = cp.pipeline_notes(_result(input_shape=(), traced_calls=2), ("vmap",))
    assert "ran twice" in twice[0] and "x's 0 rows" in twice[0]


def test_the_values_and_shapes_are_shown_as_numpy_prints_them() -> None:
    result = _result(input_shape=(2,), output_shape=(2,), values=np.array([1 / 3, 2.0]))
    assert cp.values_text(result) == "[0.3333 2.    ]"
    assert cp.values_text(_result(values=None)) == ""
    assert cp.shapes_sentence(result) == "x has shape `(2,)`; the result has shape `(2,)`:"


# --- per-sample gradients ------------------------------------------------------------------------


def _run(batch: int, features: int, square: Outcome) -> cp.PerSample:
    fixed = np.ones((batch, features))
    return cp.PerSample(
        params_shape=(features,),
        x_shape=(batch, features),
        y_shape=(batch,),
        as_written=Outcome(error_type="ValueError", message="vmap got inconsistent sizes"),
        square=square,
        rows_shape=(batch, features),
        rows_match_model0=False,
        tiled_shape=(batch, features),
        tiled_matches_loop=True,
        fixed=fixed,
        loop=fixed,
    )


def test_the_per_sample_cases_name_the_shapes_and_the_error() -> None:
    ps = _run(10, 3, Outcome())
    (written, failed), (square, ran) = cp.per_sample_cases(ps)
    assert (
        written
        == "**As written (`@jit @vmap`), B = 10, D = 3:** `ValueError: vmap got inconsistent sizes`"
    )
    assert not failed.ok and ran.ok
    assert square == "**As written with as many samples as weights, B = D = 3:** it runs."
    assert cp.shapes_line(ps) == "params `(3,)`, X `(10, 3)`, Y `(10,)`"


@pytest.mark.parametrize(
    ("batch", "sizes", "error"), [(3, "agree", "TypeError"), (5, "disagree", None)]
)
def test_the_why_follows_the_run(batch: int, sizes: str, error: str | None) -> None:
    ps = _run(batch, 3, Outcome(error_type=error))
    why = cp.per_sample_why(ps)
    assert f"params of shape (3,) and B = {batch} samples the sizes {sizes};" in why
    assert f"refuses it (`{error or 'no error'}`)" in why
    assert (
        f"with a ({batch}, 3) matrix of different rows the call returns shape ({batch}, 3)" in why
    )
    assert "(the first row's): **no**" in why and "it equals the loop: **yes**" in why


def test_one_sample_says_it_cannot_show_the_mix_up() -> None:
    """With B = 1 there are no "different rows": the comparison holds trivially."""
    assert "cannot show the mix-up" in cp.per_sample_why(_run(1, 3, Outcome()))
    assert "cannot show the mix-up" not in cp.per_sample_why(_run(2, 3, Outcome()))


def test_the_fix_is_said_and_its_first_rows_shown() -> None:
    ps = _run(10, 3, Outcome())
    assert cp.per_sample_fixed(ps) == (
        "Fixed: shape (10, 3); equal to a Python loop over the samples: **yes**."
    )
    assert cp.fixed_rows(ps).shape == (8, 3)
    assert _per_sample.fixed_rows(_run(2, 3, Outcome())).shape == (2, 3)


# --- jacfwd vs jacrev ----------------------------------------------------------------------------


def _jacobian_sweep() -> _jacobians.JacobianSweep:
    fast, slow = _timing(1e-3), _timing(3e-3)
    timings = {
        ("wide input", "jacfwd"): (fast, slow),
        ("wide input", "jacrev"): (fast, fast),
        ("wide output", "jacfwd"): (fast, fast),
        ("wide output", "jacrev"): (fast, slow),
    }
    return _jacobians.JacobianSweep((4, 64), 4, 64, timings, 0.0, "cpu")


def test_the_jacobian_words() -> None:
    assert cp.agreement_sentence((8, 64), 1.234e-7) == (
        "jacfwd and jacrev agree: Jacobian (8, 64), max |difference| 1.2e-07."
    )
    assert cp.jacobian_plan().endswith(f"with a narrow side of {_jacobians.NARROW}.")
    assert _jacobians.jacobian_verdicts(_jacobian_sweep()) == [
        "wide input (64): **jacrev** is 3.0× faster.",
        "wide output (64): **jacfwd** is 3.0× faster.",
    ]
    assert _jacobians.jacobian_steps((4, 64)) == [
        ("wide input", 4),
        ("wide input", 64),
        ("wide output", 4),
        ("wide output", 64),
    ]
    assert _jacobians.jacobian_step_label(("wide output", 64)) == "wide output, width 64"
    assert _jacobians.jacobian_progress(1) == (
        "Timing jit(jacfwd) and jit(jacrev) at 1 width",
        "Timed both modes at 1 width",
    )
    assert _jacobians.jacobian_progress(3)[1] == "Timed both modes at 3 widths"


# --- Hessian-vector products ---------------------------------------------------------------------


def test_the_hvp_words() -> None:
    made = cp.JitHvp(
        Outcome(error_type="TypeError", message="not a valid JAX type"),
        static_argnums=np.ones(2),
        closure=np.ones(2),
        eager=np.ones(2),
    )
    assert cp.as_written_sentence(made) == "**As written:** `TypeError: not a valid JAX type`"
    why = cp.jit_hvp_why(made, 2.5e-8)
    assert "Both equal the un-jitted hvp: **yes**" in why
    assert f"at n={cp.AGREEMENT_N}: relative difference 2e-08." in why
    assert _hvp.hvp_steps((16, 64)) == [(m, n) for n in (16, 64) for m in cp.HVP_METHODS]
    assert _hvp.hvp_step_label(("hessian(f)(x) @ v", 16)) == "hessian(f)(x) @ v, n=16"
    assert _hvp.hvp_progress(2) == (
        "Timing three ways to H·v at 2 dimensions",
        "Timed three ways at 2 dimensions",
    )
    assert cp.HVP_WAYS.startswith("Three ways to H·v: **forward over reverse**")


def test_the_hvp_summary_names_the_fastest_way_at_the_largest_dimension() -> None:
    methods = cp.HVP_METHODS
    times = dict(zip(methods, (1e-3, 2e-3, 4e-3), strict=True))
    sweep = _hvp.HvpSweep(
        (16, 64),
        {m: (_timing(1.0), _timing(t)) for m, t in times.items()},
        {m: (None, None) for m in methods},
        3e-7,
        "cpu",
    )
    summary = _hvp.hvp_summary(sweep)
    assert summary.startswith(f"At n=64: {methods[0]}: 1 ms; {methods[1]}: 2 ms; ")
    assert f"Fastest: {methods[0]}, 4.0× faster than the slowest." in summary
    assert summary.endswith("from the full Hessian's H·v: 3e-07.")


# --- the two timed sweeps as one table -----------------------------------------------------------


@pytest.mark.parametrize(
    ("sizes", "label", "limit"),
    [(cp.JACOBIAN_SIZES, "Widths", cp.MAX_WIDTH), (cp.HVP_SIZES, "Dimensions n", cp.MAX_HVP_DIM)],
)
def test_each_sweep_offers_sizes_it_can_time(sizes: cp.SizeSweep, label: str, limit: int) -> None:
    assert sizes.label == label
    assert list(sizes.choices) == sorted(sizes.choices) and sizes.choices[-1] == limit
    assert set(sizes.default) <= set(sizes.choices)


def test_the_hvp_sweep_says_its_summary() -> None:
    sweep = _hvp.HvpSweep((16,), {m: (_timing(1e-3),) for m in cp.HVP_METHODS}, {}, 0.0, "cpu")
    assert cp.HVP_SIZES.sentences(sweep) == [_hvp.hvp_summary(sweep)]
    assert cp.JACOBIAN_SIZES.sentences is _jacobians.jacobian_verdicts
