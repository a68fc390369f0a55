"""Stateful computations: a training loop that threads its state, beside one that hides it."""

from pages import _ui  # every page imports it first: see its docstring

import streamlit as st

from jaxplay import prng, sandbox, state
from jaxplay.core.i18n import _

st.title(":material/model_training: " + _("Stateful computations"))
st.write(
    _(
        "`jit` compiles a **pure** function: what it reads comes in as arguments, what it "
        "changes goes out as results. So a training loop threads its state (parameters, "
        "optimizer state, the PRNG key) through the jitted step and takes the new state back, "
        "every step. Below, a tiny MLP learns a noisy sine of its inputs that way, beside a "
        "version that keeps the state hidden (a global, an attribute of `self`) and looks just "
        "as plausible."
    )
)


@st.cache_data(max_entries=32, show_spinner=False)
def train(loop: str, setup: tuple[int, int, int, str, float], _turn: _ui.Turn | None = None):
    return sandbox.timed(state.train, loop_key=loop, setup=state.Setup(*setup), turn=_turn)


left, right = st.columns(2)
optimizer = left.segmented_control(
    _("Optimizer"),
    list(state.OPTIMIZERS),
    default="adam",
    required=True,
    key="state_optimizer",
    bind="query-params",
)
lr = right.select_slider(
    _("Learning rate"), state.LEARNING_RATES, 0.03, key="state_lr", bind="query-params"
)
left, right = st.columns(2)
steps = left.slider(
    _("Steps"), 10, state.MAX_STEPS, 100, step=10, key="state_steps", bind="query-params"
)
hidden = right.slider(
    _("Hidden units"), 1, state.MAX_HIDDEN, 8, key="state_hidden", bind="query-params"
)
left, right = st.columns([3, 1])
wrong_titles = {loop.key: _(loop.short) for loop in state.LOOPS if loop.hidden_state}
wrong_key = left.segmented_control(
    _("Beside it, hidden state:"),
    list(wrong_titles),
    format_func=wrong_titles.get,
    default="globals",
    required=True,
    key="state_hidden_kind",
    bind="query-params",
)
# A text box read by the PRNG page's strict parser, as every seed box is: a number box turned
# "1e30" into 1 without a word.
seed_text = _ui.text_box(
    right,
    _("Seed"),
    "0",
    key="state_seed",
    bind="query-params",
    max_chars=prng.MAX_SEED_DIGITS + 2,
    help=_("A whole number from 0 to 2147483647."),
)


def read_seed(text: str) -> int | None:
    """The seed, or ``None`` after saying why ``text`` is not one (the page goes on without
    training: ``st.stop()`` would also drop app.py's note on the link's ignored parts)."""
    try:
        seed = prng.parse_seed(text)
        if not 0 <= seed < 2**31:
            raise prng.SeedError(
                _("{seed} is outside 0 to 2147483647 (2**31 - 1).").format(seed=seed)
            )
    except prng.SeedError as err:
        _ui.input_error(err, _("Not a seed:"))
        return None
    return int(seed)


def train_and_show(setup: tuple[int, int, int, str, float], wrong_key: str) -> None:
    """Both loops trained with ``setup``, their losses, the chart and the code that ran."""
    steps = setup[1]
    threaded_loop = state.find_loop("threaded")
    wrong_loop = state.find_loop(wrong_key)
    with _ui.measuring(_("Training…")) as status:
        status.update(
            label=_("Training with the state threaded ({n} jitted steps)…").format(n=int(steps))
        )
        try:
            threaded = train("threaded", setup, _turn=status.turn)
            status.update(
                label=_("Training with hidden state ({kind})…").format(kind=_(wrong_loop.short))
            )
            wrong = train(wrong_loop.key, setup, _turn=status.turn)
        except sandbox.TaskFailed as err:  # the compute worker ran out of time or memory
            status.update(label=_("Failed"), state="error")
            _ui.show_error(err, _("**The measurement failed:** "))
            return
        status.update(
            label=_("Trained both loops, {n} steps each").format(n=int(steps)), state="complete"
        )
    show_losses(threaded, wrong, wrong_loop)
    show_after(threaded, wrong, wrong_loop)
    show_loops(setup, threaded_loop, wrong_loop)


def show_losses(
    threaded: state.TrainingRun, wrong: state.TrainingRun, wrong_loop: state.Loop
) -> None:
    """Where each loop's loss ended, why, and the two curves."""
    a, b = st.columns(2)
    # A lower loss is better (inverse colours); a loss that did not move gets no arrow at all.
    a.metric(
        _("Threaded: loss at step {n}").format(n=len(threaded.losses)),
        f"{threaded.last:.4f}",
        state.loss_change_words(threaded),
        delta_color="inverse",
    )
    b.metric(
        _("Hidden state: loss at step {n}").format(n=len(wrong.losses)),
        f"{wrong.last:.4f}",
        state.loss_change_words(wrong) or _("unchanged from the first step"),
        delta_color="inverse" if state.loss_change_words(wrong) else "off",
        delta_arrow="auto" if state.loss_change_words(wrong) else "off",
    )
    st.markdown(state.explain_runs(threaded, wrong))
    if wrong.distinct_losses == 1:
        st.info(state.explain_stuck(wrong_loop.key), icon=":material/lightbulb:")
    _ui.chart(
        state.loss_figure,
        [(_("state threaded"), threaded.losses), (_(wrong_loop.title).lower(), wrong.losses)],
        key="state_loss_chart",
    )


def show_after(
    threaded: state.TrainingRun, wrong: state.TrainingRun, wrong_loop: state.Loop
) -> None:
    """The loss of each loop's trained parameters on all the data, and why they differ."""
    st.markdown(
        _("**Using the trained parameters afterwards** (`loss_fn(trained, x, y)` on all data):")
    )
    a, b = st.columns(2)
    with a:
        st.caption(_("State threaded"))
        _ui.show_outcome(threaded.after, what="`loss_fn(trained, x, y)`")
    with b:
        st.caption(_(wrong_loop.title))
        _ui.show_outcome(wrong.after, what="`loss_fn(trained, x, y)`")
    if state.explain_after(threaded, wrong):
        st.markdown(state.explain_after(threaded, wrong))


def show_loops(
    setup: tuple[int, int, int, str, float], threaded_loop: state.Loop, wrong_loop: state.Loop
) -> None:
    """The code that ran: both loops, the model, the data and the optimizer."""
    _ui.show_code(*threaded_loop.parts, label=_("Show the threaded loop that ran"), expanded=True)
    _ui.show_code(*wrong_loop.parts, label=_("Show the hidden-state loop that ran"))
    init, update = state.OPTIMIZERS[setup[3]]
    _ui.show_code(
        state.make_data,
        state.init_params,
        state.predict,
        state.loss_fn,
        init,
        update,
        label=_("Show the model, the data and the optimizer"),
    )
    actions = st.container(horizontal=True)
    with actions:
        _ui.code_lab_button(
            state.training_snippet("threaded", state.Setup(*setup)),
            key="state_open_threaded",
            label=_("Open the threaded loop in the Code Lab"),
        )
        _ui.code_lab_button(
            state.training_snippet(wrong_loop.key, state.Setup(*setup)),
            key="state_open_hidden",
            label=_("Open the hidden-state loop in the Code Lab"),
        )


seed = read_seed(seed_text)
if seed is not None:
    train_and_show(
        (seed, int(steps), int(hidden), optimizer or "adam", float(lr)), wrong_key or "globals"
    )
