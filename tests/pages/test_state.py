"""The stateful-computations page through AppTest: its numbers follow the settings, both
hidden-state versions, and the Code Lab buttons."""

from __future__ import annotations

import pytest

from jaxplay import state
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, editor_text, open_page

SPEC = catalog.find("state")


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def test_default_view_states_the_runs_numbers() -> None:
    at = open_page(SPEC, state_steps=30)
    assert_clean(at)
    threaded = state.train("threaded", state.Setup(0, 30, 8, "adam", 0.03))
    wrong = state.train("globals", state.Setup(0, 30, 8, "adam", 0.03))
    shown = texts(at.markdown)
    assert f"the loss went to **{threaded.last:.4f}** by step 30 (a step's loss is measured " in (
        shown
    )
    assert f"loss **stays at {wrong.last:.4f}** through step 30 (1 different value)" in shown
    assert "compiled the step once" in shown
    assert "read the params, the optimizer state and the key from the globals once" in texts(
        at.info
    )
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Threaded: loss at step 30"] == f"{threaded.last:.4f}"
    # "Before its update": step 30's loss is that of the parameters 29 steps trained.
    before = state.train("threaded", state.Setup(0, 29, 8, "adam", 0.03))
    assert threaded.last == pytest.approx(float(before.after.value or "nan"), rel=1e-5)
    assert threaded.last != pytest.approx(float(threaded.after.value or "nan"), rel=1e-5)
    assert len(at.get("plotly_chart")) == 1


def test_other_settings_other_sentence() -> None:
    at = open_page(SPEC, state_steps=20, state_optimizer="momentum", state_lr=0.1, state_seed="3")
    assert_clean(at)
    threaded = state.train("threaded", state.Setup(3, 20, 8, "momentum", 0.1))
    assert f"the loss went to **{threaded.last:.4f}** by step 20" in texts(at.markdown)


def test_self_mutated_inside_jit_leaks_tracers() -> None:
    at = open_page(SPEC, state_steps=20, state_hidden_kind="self")
    assert_clean(at)
    assert "assigned tracers to `self.params`" in texts(at.info)
    assert "`loss_fn(trained, x, y)` raises **UnexpectedTracerError**" in texts(at.error)


def test_code_lab_buttons_load_the_loops_that_ran() -> None:
    at = open_page(SPEC, state_steps=20, state_hidden_kind="self")
    at.button(key="state_open_hidden").click().run()
    assert_clean(at)
    expected = state.training_snippet("self", state.Setup(0, 20, 8, "adam", 0.03))
    assert at.session_state["code_lab_source"] == expected
    assert editor_text(at) == expected


def test_a_flat_loss_has_no_red_arrow_and_the_kept_parameters_are_explained() -> None:
    """The text said "stays at 0.9425" beside a red "+0.0000"; 0.829 afterwards had no word."""
    at = open_page(SPEC, state_hidden_kind="globals")
    assert_clean(at)
    hidden = [m for m in at.metric if m.label.startswith("Hidden state")][0]
    assert hidden.proto.delta == "unchanged from the first step"
    from streamlit.proto.Metric_pb2 import Metric

    assert hidden.proto.color == Metric.MetricColor.GRAY  # no better/worse colour
    assert hidden.proto.direction == Metric.MetricDirection.NONE  # no arrow
    texts = " ".join(m.value for m in at.markdown)
    assert "computed them from the initial parameters" in texts
    assert "loss after its first step is the same" in texts


def test_a_seed_that_is_not_a_whole_number_is_refused_with_why() -> None:
    """The number box turned 1e30 into 1 silently; the seed box says what is wrong, as the PRNG
    page's does, and trains nothing."""
    for text, fragment in [("1e30", "write the number out in digits"), ("4294967296", "outside")]:
        at = open_page(SPEC, state_seed=text)
        assert_clean(at)
        assert any(fragment in e.value for e in at.error), [e.value for e in at.error]
        assert not at.metric
