"""One training run of a loop from :mod:`jaxplay.state._loops`, measured, and its Code Lab cell.

Why a module of its own: the page compares loops by what they really did: every step's loss, the
programs ``jit`` compiled for the step (:func:`jaxplay.core.jax_private.cache_size`), and what
happens when the trained parameters are used afterwards (the full-data loss, or the error JAX
raises for parameters that are leaked tracers). The sizes a visitor picks are bounded here, before
any work starts, and a run takes its turn like any measurement
(:func:`jaxplay.core.measure_lock.exclusive`): each new seed in a link costs seconds of server CPU,
so in public mode one visitor's runs wait for their throttle and everyone's runs queue behind one
another instead of starving a bystander.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax

from jaxplay.article import code
from jaxplay.core import capture, claims, jax_private, measure_lock, words
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.state import _loops, _model

MAX_STEPS = 200
MAX_HIDDEN = 32
LEARNING_RATES = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)


@dataclass(frozen=True)
class Loop:
    """A way to write the training loop.

    ``title`` and ``short`` (the title after its ``"Hidden state: "``) are marked for the
    catalog, to be shown with ``i18n._``.
    """

    key: str
    title: str
    train: Any
    parts: tuple[Any, ...]
    hidden_state: bool
    short: str = ""


LOOPS: tuple[Loop, ...] = (
    Loop(
        "threaded",
        N_("State threaded through the step"),
        _loops.train_threaded,
        (_loops.make_step, _loops.train_threaded),
        False,
        N_("State threaded through the step"),
    ),
    Loop(
        "globals",
        N_("Hidden state: globals read inside jit"),
        _loops.train_reading_globals,
        (_loops.train_reading_globals,),
        True,
        N_("globals read inside jit"),
    ),
    Loop(
        "self",
        N_("Hidden state: self mutated inside jit"),
        _loops.train_mutating_self,
        (_loops.HiddenStateModel, _loops.train_mutating_self),
        True,
        N_("self mutated inside jit"),
    ),
)


def find_loop(key: str) -> Loop:
    for loop in LOOPS:
        if loop.key == key:
            return loop
    raise KeyError(key)


@dataclass(frozen=True)
class Setup:
    """What a training run is given: bounded by :func:`check`."""

    seed: int
    steps: int
    hidden: int
    optimizer: str
    lr: float

    def check(self) -> Setup:
        if not 1 <= self.steps <= MAX_STEPS:
            raise ValueError(f"steps must be between 1 and {MAX_STEPS}")
        if not 1 <= self.hidden <= MAX_HIDDEN:
            raise ValueError(f"hidden units must be between 1 and {MAX_HIDDEN}")
        if self.optimizer not in _model.OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(_model.OPTIMIZERS)}")
        if self.lr not in LEARNING_RATES:
            raise ValueError(f"the learning rate must be one of {LEARNING_RATES}")
        if not 0 <= self.seed < 2**31:
            raise ValueError("the seed must be between 0 and 2**31 - 1")
        return self


@dataclass(frozen=True)
class TrainingRun:
    """A loop trained once.

    Attributes:
        loop: the :class:`Loop`'s key.
        losses: the minibatch loss of every step.
        compiles: programs ``jit`` compiled for the step (``None``: JAX will not say).
        after: using the trained parameters afterwards (the full-data loss, or JAX's error).
    """

    loop: str
    losses: tuple[float, ...]
    compiles: int | None
    after: capture.Outcome

    @property
    def first(self) -> float:
        return self.losses[0]

    @property
    def last(self) -> float:
        return self.losses[-1]

    @property
    def distinct_losses(self) -> int:
        """Different losses, every NaN counted as one (NaN equals no NaN, so a set keeps each)."""
        return len({"nan" if math.isnan(v) else v for v in self.losses})

    @property
    def first_not_finite(self) -> int | None:
        """The step (from 1) whose loss was first NaN or infinite, or ``None``."""
        return next((i + 1 for i, v in enumerate(self.losses) if not math.isfinite(v)), None)

    @property
    def finite(self) -> bool:
        return all(math.isfinite(v) for v in self.losses)


def full_data_loss(params, x, y):
    return _model.loss_fn(params, x, y)


def train(
    loop_key: str, setup: Setup, progress: measure_lock.Progress = measure_lock.UNWATCHED
) -> TrainingRun:
    """Train with the loop registered under ``loop_key`` (sizes checked before any work).

    Arguments:
        loop_key: a key of the loop registry.
        setup: seed, steps, hidden units, optimizer and learning rate.
        progress: who trains, told if another measurement or run holds the lock or if their
            throttle makes them wait.
    """
    setup = setup.check()
    loop = find_loop(loop_key)
    with measure_lock.exclusive(progress):
        return _train(loop, setup)


def _train(loop: Loop, setup: Setup) -> TrainingRun:
    x, y = _model.make_data(setup.seed, _model.N_EXAMPLES, _model.FEATURES, _model.NOISE)
    params = _model.init_params(jax.random.key(setup.seed + 1), _model.FEATURES, setup.hidden)
    init, update = _model.OPTIMIZERS[setup.optimizer]
    losses, step, trained = loop.train(
        params,
        jax.random.key(setup.seed + 2),
        x,
        y,
        init,
        update,
        setup.lr,
        setup.steps,
        _model.BATCH_SIZE,
    )
    after = capture.run(
        full_data_loss,
        trained,
        x,
        y,
        describe=lambda v: f"{float(v):.6g}",
    )
    return TrainingRun(
        loop=loop.key,
        losses=tuple(losses),
        compiles=jax_private.cache_size(step),
        after=after,
    )


@claims.states("state.globals_baked_in")
def explain_after(threaded: TrainingRun, hidden: TrainingRun) -> str:
    """Why the hidden-state loop's "trained" parameters do better than its flat loss said.

    Said only when the run shows it: the loss stayed flat, yet the kept parameters give the
    threaded loop's loss after exactly one step (every step started again from the parameters
    baked in, and the loop kept the last step's output). ``""`` otherwise.
    """
    if hidden.distinct_losses != 1 or hidden.after.error_type or len(threaded.losses) < 2:
        return ""
    try:
        after = float(hidden.after.value or "nan")
    except ValueError:
        return ""
    one_step = threaded.losses[1]
    if not math.isclose(after, one_step, rel_tol=1e-4):
        return ""
    return claims.qualify(
        "state.globals_baked_in",
        _(
            "Using the hidden-state loop's parameters afterwards gives **{after}**, not the "
            "**{stayed}** its loss stayed at: the loop did store each step's new parameters in "
            "the globals, but every step computed them from the initial parameters baked into "
            "the program, so what it kept is one step of training — the threaded loop's loss "
            "after its first step is the same, **{one_step}**."
        ).format(after=f"{after:.4f}", stayed=f"{hidden.last:.4f}", one_step=f"{one_step:.4f}"),
    )


@claims.states_nothing("a change in a measured loss, as a metric's delta")
def loss_change_words(run: TrainingRun) -> str | None:
    """The metric's delta for a run: the change from its first step, or ``None`` (no arrow, no
    colour) when the loss did not move at the precision shown."""
    change = run.last - run.first
    if not math.isfinite(change):
        return _("diverged at step {step}").format(step=run.first_not_finite)
    if f"{abs(change):.4f}" == "0.0000":
        return None
    return _("{change} from the first step").format(change=f"{change:+.4f}")


@claims.states_nothing("the losses and compile counts measured in the two runs")
def explain_runs(threaded: TrainingRun, hidden: TrainingRun) -> str:
    """The paragraph comparing the threaded run with the hidden-state one (Markdown)."""
    start = (
        _("Both start at a loss of **{loss}**.").format(loss=f"{threaded.first:.4f}")
        if f"{threaded.first:.4f}" == f"{hidden.first:.4f}"
        else _("They start at losses of **{threaded}** and **{hidden}**.").format(
            threaded=f"{threaded.first:.4f}", hidden=f"{hidden.first:.4f}"
        )
    )
    hidden_sentence = (
        _(
            "The hidden-state version's loss **stays at {loss}** through step {steps} "
            "({values}), its step compiled {times}."
        )
        if hidden.distinct_losses == 1
        else _(
            "The hidden-state version's loss went to **{loss}** by step {steps} "
            "({values}), its step compiled {times}."
        )
    ).format(
        loss=f"{hidden.last:.4f}",
        steps=len(hidden.losses),
        values=_values(hidden.distinct_losses),
        times=words.times(hidden.compiles),
    )
    diverged = threaded.first_not_finite
    return (
        _(
            "{start} With the state threaded, the loss diverged: first not finite at step "
            "{step}, **{loss}** at step {steps} ({values}), and `jit` compiled the step {times}. "
            "Try a smaller learning rate. {hidden}"
        )
        if diverged is not None
        else _(
            "{start} With the state threaded, the loss went to **{loss}** by step {steps} (a "
            "step's loss is measured before its update; {values}), and `jit` compiled the step "
            "{times}. {hidden}"
        )
    ).format(
        step=diverged,
        start=start,
        loss=f"{threaded.last:.4f}",
        steps=len(threaded.losses),
        values=_values(threaded.distinct_losses),
        times=words.times(threaded.compiles),
        hidden=hidden_sentence,
    )


def _values(n: int) -> str:
    return ngettext("{n} different value", "{n} different values", n).format(n=f"{n:,}")


#: Why each hidden-state loop never learns, by loop key (the claim of the same key checks it).
WHY_STUCK = {
    "globals": (
        "state.globals_baked_in",
        N_(
            "`jit` read the params, the optimizer state and the key from the globals once, while "
            "tracing, and baked them into the program as constants. The loop updates the globals "
            "after every step, but nothing traces the step again, so every step starts from the "
            "initial parameters."
        ),
    ),
    "self": (
        "state.self_keeps_tracers",
        N_(
            "The first call ran the Python of `_step`, which assigned tracers to `self.params`, "
            "`self.opt_state` and `self.key`. Later calls run the compiled program, which reads "
            "the values baked in at that trace and never writes to `self`; using `self.params` "
            "afterwards raises `UnexpectedTracerError`."
        ),
    ),
}


@claims.states("state.globals_baked_in", "state.self_keeps_tracers")
def explain_stuck(loop_key: str) -> str:
    """Why the hidden-state loop ``loop_key`` never learns (Markdown), qualified by its claim."""
    key, sentence = WHY_STUCK[loop_key]
    return claims.qualify(key, _(sentence))


@claims.states_nothing("code for the Code Lab: not a statement")
def training_snippet(loop_key: str, setup: Setup) -> str:
    """A Code Lab cell: the model, the chosen optimizer, the loop, and a driver that prints the
    first and last loss and then uses the trained parameters."""
    setup = setup.check()
    loop = find_loop(loop_key)
    init, update = _model.OPTIMIZERS[setup.optimizer]
    parts: list[Any] = []
    for part in (
        _model.make_data,
        _model.init_params,
        _model.predict,
        _model.loss_fn,
        init,
        update,
        *loop.parts,
    ):
        parts += [part, "", ""]
    return code(
        "import jax\nimport jax.numpy as jnp\n\n\n",
        *parts,
        f"x, y = make_data({setup.seed}, {_model.N_EXAMPLES}, {_model.FEATURES}, {_model.NOISE})",
        f"params = init_params(jax.random.key({setup.seed + 1}), {_model.FEATURES}, "
        f"{setup.hidden})",
        f"losses, step, trained = {loop.train.__name__}(",
        f"    params, jax.random.key({setup.seed + 2}), x, y, {init.__name__}, "
        f"{update.__name__}, {setup.lr}, {setup.steps}, {_model.BATCH_SIZE}",
        ")",
        'print("loss at the first step:", losses[0])',
        f'print("loss at step {setup.steps}, before its update:", losses[-1])',
        'print("full-data loss of the trained params:", loss_fn(trained, x, y))',
    )
