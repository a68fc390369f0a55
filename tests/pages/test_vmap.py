"""AppTests of the vmap page: the axes editor (good, refused, silently wrong), conv, timing."""

from __future__ import annotations

import pytest

from jaxplay import vmap as vz
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, open_page, timed_calls
from tests.support.page_texts import PAYLOAD, hostile_links

SPEC = catalog.find("vmap")
CONV = "Nested vmap: 2-D convolution"
SPEED = "Loop vs vmap vs jit(vmap)"


def _texts(elements) -> list[str]:
    return [e.value for e in elements]


def test_default_axes_match_the_loop_and_the_jaxpr_shows_one_dot() -> None:
    at = open_page(SPEC)
    assert_clean(at)
    assert any("the same numbers as a loop" in s for s in _texts(at.success))
    markdown = " ".join(_texts(at.markdown))
    assert "(:orange-background[**8**], 5) — axis 0 mapped; the function sees `(5,)`" in markdown
    assert not at.get("plotly_chart")  # only the open tab runs
    at = open_page(SPEC, vmap_tab="jaxpr")
    markdown = " ".join(_texts(at.markdown))
    assert "**vmap**: 1 × `dot_general`" in markdown and "**Python loop**: 4 ×" in markdown
    at = open_page(SPEC, vmap_tab=CONV)
    assert len(at.get("plotly_chart")) == 1
    metrics = {m.label: float(m.value) for m in at.metric}
    assert metrics["max |batch_conv2d − convolve2d|"] < 1e-5


@pytest.mark.parametrize(
    ("state", "kind", "text"),
    [
        ({"vmap_in_axes": "(0, foo)"}, "error", "Not an axis spec"),
        ({"vmap_in_axes": "(0, 0)"}, "error", "same length"),
        ({"vmap_out_axes": "None"}, "error", "out_axes=None"),
        (
            {"vmap_layout": vz.LAYOUTS[1], "vmap_w": vz.W_CHOICES[1], "vmap_in_axes": "(1, None)"},
            "warning",
            "not the per-example",
        ),
        ({"vmap_layout": vz.LAYOUTS[1], "vmap_in_axes": "(1, None)"}, "success", "same numbers"),
        ({"vmap_in_axes": "[0, None]"}, "success", "same numbers"),
        ({"vmap_in_axes": "(0, [None, None])"}, "error", "in_axes must mirror"),
        ({"vmap_in_axes": "(None, (None, 0))"}, "error", "x is not mapped"),
        ({"vmap_out_axes": "(0,)"}, "error", "out_axes must mirror"),
    ],
)
def test_the_editor_explains_each_outcome(state: dict, kind: str, text: str) -> None:
    at = open_page(SPEC, **state)
    assert_clean(at)
    assert any(text in t for t in _texts(getattr(at, kind))), _texts(getattr(at, kind))


def test_a_bad_axis_spec_points_at_its_column() -> None:
    at = open_page(SPEC, vmap_in_axes="(0, foo)")
    assert "(0, foo)\n    ^" in _texts(at.code)


def test_a_bad_custom_kernel_is_refused_and_a_good_one_convolves() -> None:
    at = open_page(
        SPEC, vmap_tab=CONV, vmap_kernels=[vz.CUSTOM_KERNEL], vmap_custom_kernel="1 2; 3"
    )
    assert_clean(at)
    assert any("3 rows of 3" in w for w in _texts(at.warning))
    at = open_page(
        SPEC,
        vmap_tab=CONV,
        vmap_kernels=[vz.CUSTOM_KERNEL],
        vmap_custom_kernel="0 0 0; 0 2 0; 0 0 0",
    )
    assert_clean(at)
    assert float(at.metric[1].value) < 1e-5


def test_measure_twice_in_two_sessions() -> None:
    """The second visitor's Measure replays the cached timings (it crashed with
    CacheReplayClosureError when the cached function drew the progress bar)."""
    for _ in range(2):
        at = open_page(SPEC, vmap_tab=SPEED, vmap_sizes=[1, 4])
        at.button(key="vmap_measure").click().run()
        assert_clean(at)
        assert len(at.get("plotly_chart")) == 1
        captions = _texts(at.caption)
        assert any("the three agree at batch 1, 4 (within" in c for c in captions)


def test_visitor_text_in_the_boxes_renders_as_text() -> None:
    at = open_page(SPEC, vmap_in_axes=PAYLOAD, vmap_out_axes=PAYLOAD)
    assert_clean(at)
    assert hostile_links(at) == []
    at = open_page(SPEC, vmap_tab=CONV, vmap_kernels=[vz.CUSTOM_KERNEL], vmap_custom_kernel=PAYLOAD)
    assert_clean(at)
    assert any("127" in t for t in _texts(at.warning))  # the kernel's refusal quotes it
    assert hostile_links(at) == []


@pytest.mark.parametrize("layout", vz.LAYOUTS)
@pytest.mark.parametrize("w_choice", vz.W_CHOICES)
def test_the_answer_shown_solves_the_puzzle_the_page_poses(layout: str, w_choice: str) -> None:
    """ "Show the answer" answered a question the page never asked: the page now poses it, and
    typing the answer it shows for this X and W gives the loop's numbers."""
    at = open_page(SPEC, vmap_layout=layout, vmap_w=w_choice)
    markdown = " ".join(_texts(at.markdown))
    assert "**The puzzle:**" in markdown and "Which `in_axes`" in markdown
    expander = next(e for e in at.expander if e.label.startswith("Show the answer"))
    answer = expander.code[0].value
    assert answer == vz.correct_axes(layout, w_choice)
    solved = open_page(SPEC, vmap_layout=layout, vmap_w=w_choice, vmap_in_axes=answer)
    assert_clean(solved)
    assert any("the same numbers as a loop" in s for s in _texts(solved.success))


def test_a_compute_worker_past_its_deadline_is_said_and_the_page_lives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sweep's points are timed in the compute worker; one that runs out of time shows why,
    with no traceback (sizes no other test measures: nothing cached)."""
    from jaxplay import sandbox

    monkeypatch.setattr(sandbox, "TIMED_TIMEOUT_S", 0.01)
    at = open_page(SPEC, vmap_tab=SPEED, vmap_sizes=[16, 64])
    at.button(key="vmap_measure").click().run()
    assert not at.exception
    errors = _texts(at.error)
    assert any("The measurement failed" in e and "longer than 0.01 s" in e for e in errors), errors
    assert not at.get("plotly_chart")


def test_the_convolution_runs_in_the_compute_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each new count or size compiled programs (about 14 MB) that JAX kept in the server
    process. It runs where timed work runs; a worker that fails is said, and the page lives."""
    from jaxplay import sandbox

    ran = timed_calls(monkeypatch)
    at = open_page(SPEC, vmap_tab=CONV, vmap_size=9)
    assert_clean(at)
    assert ran == ["run_conv"] and len(at.get("plotly_chart")) == 1
    assert [s.label for s in at.status] == ["Convolved"]
    monkeypatch.setattr(sandbox, "TIMED_TIMEOUT_S", 0.01)
    at = open_page(SPEC, vmap_tab=CONV, vmap_size=10)
    assert not at.exception and not at.get("plotly_chart")
    assert any("The run failed" in e and "longer than 0.01 s" in e for e in _texts(at.error))
