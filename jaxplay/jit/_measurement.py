"""Everything the jit page measures for one workload, in stages, shared by every visitor.

Why a module of its own: the page's measured tabs come from two measurements of the chosen function
and size, which cost seconds. :func:`measure` is what the first tab and the roofline show (each
stage of jit, the first call taken apart, the compiled program); :func:`race` is eager against jit
and the article's stopwatch, measured only when a tab that shows them opens: it was most of a new
setting's cost (2.60 of 3.72 CPU-s, docs/benchmarks.md, *The jit page's cost*), paid by every
visitor who changed the size whether or not they looked at it. Each runs as named stages the page
shows while they happen and is kept once per setting in :data:`MEASUREMENTS` and :data:`RACES`
(:class:`~jaxplay.jit._shared.SharedResults`): every visitor with the same settings gets the same
result, and a visitor who arrives while it is being measured waits for it (seeing its stages)
instead of measuring it again. :func:`warm_up` measures the page's default view once in the
background when a public server starts, so the first visitor of the page does not pay for it."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from jaxplay import sandbox
from jaxplay.core import claims, codec, measure_lock, roofline, timing
from jaxplay.core.compilation import Step
from jaxplay.core.i18n import N_, _
from jaxplay.hosting import environment, results, settings
from jaxplay.jit._first_call import FirstCall, first_call_anatomy
from jaxplay.jit._program import CompiledProgram, read_program
from jaxplay.jit._shared import Report, SharedResult, SharedResults
from jaxplay.jit._stopwatch import ArticleTiming, article_timing
from jaxplay.jit._workloads import (
    DEFAULT_WORKLOAD,
    Workload,
    check,
    footprint_in_worker,
    function_of,
    inputs,
)

V = TypeVar("V")

#: Sampling time of the steady state (``profile_jit``) and of eager against jit.
PROFILE_BUDGET_S = 0.3
COMPARE_BUDGET_S = 0.5
#: Wall-clock budget of one whole measurement, counted from when it takes the measurement lock:
#: past it no call starts, so the lock is held at most this plus one call (a call is at most
#: :data:`jaxplay.jit._workloads.MAX_CALL_S`, predicted before anything runs). What was measured by
#: then is shown, marked as cut; the parts not reached are said to be missing.
MEASUREMENT_BUDGET_S = 15.0
#: Calls in each of the article's two stopwatch loops.
ARTICLE_LOOPS = 10
#: Fresh executables whose first two calls are timed to take the first call apart.
FIRST_CALL_EXECUTABLES = 3


class Stage(enum.Enum):
    """The stages of :func:`measure`, in order (the page's progress bar counts them), in the
    words the page shows (English, marked: the page translates them)."""

    CHECKING = N_("checking what one call costs (traced on abstract shapes, nothing computed)")
    INPUTS = N_("drawing the inputs")
    TRACING = N_("tracing")
    LOWERING = N_("lowering")
    COMPILING = N_("compiling")
    FIRST_CALL = N_("first call")
    STEADY = N_("timing steady calls")
    WARMING_UP = N_("warming up eager and jit")
    SAMPLING = N_("timing eager against jit, interleaved")
    STOPWATCH = N_("running the article's stopwatch")
    ANATOMY = N_("taking the first call apart (fresh executables)")
    ROOFS = N_("measuring this machine's roofs (once per server)")


#: The stages of :func:`measure`, in order.
_MEASURE_ORDER = (
    Stage.CHECKING,
    Stage.INPUTS,
    Stage.TRACING,
    Stage.LOWERING,
    Stage.COMPILING,
    Stage.FIRST_CALL,
    Stage.STEADY,
    Stage.ANATOMY,
    Stage.ROOFS,
)
#: The stages of :func:`race`, in order.
_RACE_ORDER = (Stage.CHECKING, Stage.INPUTS, Stage.WARMING_UP, Stage.SAMPLING, Stage.STOPWATCH)
#: The words of :func:`measure`'s stages and of :func:`race`'s, in order.
STAGES: tuple[str, ...] = tuple(stage.value for stage in _MEASURE_ORDER)
RACE_STAGES: tuple[str, ...] = tuple(stage.value for stage in _RACE_ORDER)
#: The stage of :func:`measure` each step of ``profile_jit`` and ``compare_jit`` is.
_TIMING_STAGES = {
    Step.TRACING: Stage.TRACING,
    Step.LOWERING: Stage.LOWERING,
    Step.COMPILING: Stage.COMPILING,
    Step.FIRST_CALL: Stage.FIRST_CALL,
    Step.STEADY_CALLS: Stage.STEADY,
    Step.WARMING_UP: Stage.WARMING_UP,
    Step.SAMPLING: Stage.SAMPLING,
}


class _Placed:
    """Where a measurement ran (a mixin of :class:`Measurement` and :class:`Race`)."""

    cores: tuple[int, ...]
    in_worker: bool

    def where(self) -> str:
        """Where it was measured, for the sentence after it: ``in a compute worker on 2 cores
        (0‑1)``."""
        cores = environment.cores_text(frozenset(self.cores))
        if self.in_worker:
            return _("in a compute worker on {cores}").format(cores=cores)
        return _("in the server process on {cores}").format(cores=cores)


@dataclass(frozen=True, eq=False)
class Measurement(_Placed):
    """What the jit page's first tab and roofline show for one workload, measured in one go.

    Attributes:
        workload: what was measured.
        device: where, e.g. ``"cpu (cpu)"``.
        profile: each stage of jit (its executable's arguments dropped: the inputs are not kept).
        first_call: first and second calls of fresh executables (``None``: cut).
        program: counts from the compiled program (kernels, bytes, ops).
        reference: this machine's measured roofs.
        seconds: wall time of the whole measurement.
        cut: the measurement's time budget (:data:`MEASUREMENT_BUDGET_S`) stopped it early.
        locked_s: how long it held the measurement lock (the budget applies to this part).
        cores: the cores the measuring process could run on (its CPU affinity, which XLA's
            threads follow), held for it alone under the measurement lock.
        in_worker: measured in a compute worker (:func:`measure_in_worker`), not in the
            server process's own thread.
    """

    workload: Workload
    device: str
    profile: timing.JitProfile
    first_call: FirstCall | None
    program: CompiledProgram
    reference: roofline.MachineReference
    seconds: float
    cut: bool = False
    locked_s: float = 0.0
    cores: tuple[int, ...] = ()
    in_worker: bool = False

    def cut_note(self) -> str:
        """What the time budget cut, in a sentence (empty when nothing was)."""
        return _cut_note(self.cut, [(_("the first call taken apart"), self.first_call)])


@dataclass(frozen=True, eq=False)
class Race(_Placed):
    """Eager against jit, and the article's stopwatch, for one workload (:func:`race`).

    Attributes:
        workload: what was measured.
        device: where, e.g. ``"cpu (cpu)"``.
        comparison: eager against jit, interleaved samples (fewer when ``cut``).
        article: the article's ``time.time()`` measurement of the same function and size
            (``None``: cut, the time budget did not leave room for its calls).
        seconds, cut, locked_s, cores, in_worker: as :class:`Measurement`'s.
    """

    workload: Workload
    device: str
    comparison: timing.JitComparison
    article: ArticleTiming | None
    seconds: float
    cut: bool = False
    locked_s: float = 0.0
    cores: tuple[int, ...] = ()
    in_worker: bool = False

    def cut_note(self) -> str:
        """What the time budget cut, in a sentence (empty when nothing was)."""
        return _cut_note(self.cut, [(_("the article's stopwatch"), self.article)])


@claims.states_nothing("what our own time budget left out of this measurement")
def _cut_note(cut: bool, parts: list[tuple[str, object]]) -> str:
    if not cut:
        return ""
    missing = [name for name, part in parts if part is None]
    text = _(
        "Cut at the measurement's time budget ({budget} s, so that one visitor's measurement "
        "cannot keep everyone else waiting): what is shown was measured, with fewer samples "
        "than usual"
    ).format(budget=f"{MEASUREMENT_BUDGET_S:g}")
    if not missing:
        return text + _(".")
    return text + _("; not measured: {parts}.").format(parts=_(", ").join(missing))


def key_of(workload: Workload) -> tuple[str, int, int, str, str]:
    """The plain value a measurement is kept under (the formula only counts for the formula)."""
    w = workload
    return (w.preset, w.rows, w.cols, w.dtype, w.formula if w.preset == "formula" else "")


def measure(
    workload: Workload,
    progress: measure_lock.Progress = measure_lock.UNWATCHED,
    budget_s: float = MEASUREMENT_BUDGET_S,
    reference: roofline.MachineReference | None = None,
) -> Measurement:
    """Measure ``workload`` in this process, stage by stage, telling ``progress`` each stage as
    it starts.

    Arguments:
        workload: the function and size.
        progress: who measures: told each :class:`Stage` as it starts (in this thread, between
            stopwatches), its place in the queue if another measurement holds the lock, and
            its throttle's wait.
        budget_s: the wall-clock budget once the lock is held (see
            :data:`MEASUREMENT_BUDGET_S`); past it no call starts and the result is ``cut``.
        reference: the machine's roofs, measured already (a compute worker is given its
            server's: it would measure them again for every measurement); this process's own
            (:func:`jaxplay.core.roofline.machine_reference`) when ``None``.

    Raises:
        SizeError, ExprError, TypeError: as :func:`jaxplay.jit.check` (nothing was run).
        Exception: whatever the function raised when called.
    """

    stage = _teller(progress, _MEASURE_ORDER)
    start = time.perf_counter()
    anatomy: FirstCall | None = None
    with _held(workload, progress, budget_s, stage) as (fn, args, deadline, locked):
        profile = timing.profile_jit(
            fn,
            *args,
            budget_s=PROFILE_BUDGET_S,
            lock=False,
            on_stage=lambda step: stage(_TIMING_STAGES[step]),
            deadline=deadline,
        )
        call_s = max(profile.first_call_s, profile.steady.median)
        stage(Stage.ANATOMY)
        # A slow call (a large matmul) gets one fresh executable, not three: the anatomy's
        # calls must not cost more than the rest of the measurement. It runs only if its calls
        # fit in what is left of the budget, judged by the calls just measured.
        fresh = FIRST_CALL_EXECUTABLES if profile.steady.median < 0.05 else 1
        if deadline.allows((fresh + 1) * (2 * call_s + profile.compile_total_s)):
            anatomy = first_call_anatomy(fn, *args, executables=fresh, lock=False)
        program = read_program(profile, fn, *args)
        cut = deadline.cut or anatomy is None
        locked_s = time.perf_counter() - locked
        # The machine's roofs (measured once per process, about a second) under this hold of
        # the lock: the visitor's measurement, not an outermost one for nobody that would escape
        # their throttle; outside locked_s, which is the workload's own time.
        if reference is None:
            stage(Stage.ROOFS)
            reference = roofline.machine_reference()
    # Kept as data only: no inputs, no executable (a kept measurement is read by other server
    # processes through the result store, which holds plain values).
    plain_aot = dataclasses.replace(profile.aot, compiled=None, call_args=())
    plain_profile = dataclasses.replace(profile, aot=plain_aot)
    return Measurement(
        workload=workload,
        device=roofline.device_label(),
        profile=plain_profile,
        first_call=anatomy,
        program=program,
        reference=reference,
        seconds=time.perf_counter() - start,
        cut=cut,
        locked_s=locked_s,
        cores=tuple(sorted(measure_lock.usable_cores())),
    )


def race(
    workload: Workload,
    progress: measure_lock.Progress = measure_lock.UNWATCHED,
    budget_s: float = MEASUREMENT_BUDGET_S,
    compile_s: float = 0.0,
) -> Race:
    """Eager against jit, then the article's stopwatch, of ``workload`` in this process, stage
    by stage (as :func:`measure`).

    Arguments:
        workload, progress, budget_s: as :func:`measure`'s.
        compile_s: what compiling the function took in its :func:`measure` (the article's jit
            loop compiles inside its stopwatch): the stopwatch runs only if its calls and that
            compile fit in what is left of the budget.

    Raises:
        As :func:`measure`.
    """
    stage = _teller(progress, _RACE_ORDER)
    start = time.perf_counter()
    article: ArticleTiming | None = None
    with _held(workload, progress, budget_s, stage) as (fn, args, deadline, locked):
        comparison = timing.compare_jit(
            fn,
            *args,
            budget_s=COMPARE_BUDGET_S,
            lock=False,
            on_stage=lambda step: stage(_TIMING_STAGES[step]),
            deadline=deadline,
        )
        stage(Stage.STOPWATCH)
        loops_s = ARTICLE_LOOPS * (comparison.eager.median + comparison.jitted.median)
        if deadline.allows(loops_s + compile_s):
            article = article_timing(fn, *args, loops=ARTICLE_LOOPS, lock=False)
        locked_s = time.perf_counter() - locked
    return Race(
        workload=workload,
        device=roofline.device_label(),
        comparison=comparison,
        article=article,
        seconds=time.perf_counter() - start,
        cut=deadline.cut or article is None,
        locked_s=locked_s,
        cores=tuple(sorted(measure_lock.usable_cores())),
    )


@contextlib.contextmanager
def _held(
    workload: Workload,
    progress: measure_lock.Progress,
    budget_s: float,
    stage: Callable[[Stage], None],
) -> Iterator[tuple[Callable[..., Any], tuple[Any, ...], timing.Deadline, float]]:
    """How both measurements start: ``workload`` checked (before any wait), then, holding the
    measurement lock, its inputs drawn; yields its function, its inputs, the budget's deadline
    and when the lock was taken (``time.perf_counter``: the budget counts from then)."""
    stage(Stage.CHECKING)
    check(workload)
    fn = function_of(workload)
    with measure_lock.exclusive(progress):
        locked = time.perf_counter()
        deadline = timing.Deadline(budget_s)
        stage(Stage.INPUTS)
        yield fn, tuple(timing.block(inputs(workload))), deadline, locked


def _teller(progress: measure_lock.Progress, order: tuple[Stage, ...]) -> Callable[[Stage], None]:
    """Tells ``progress`` a stage as it starts, with the share of ``order`` done before it."""

    def stage(now: Stage) -> None:
        progress.stage(now.value, order.index(now) / len(order))

    return stage


def measure_in_worker(
    workload: Workload,
    progress: measure_lock.Progress = measure_lock.UNWATCHED,
    budget_s: float = MEASUREMENT_BUDGET_S,
) -> Measurement:
    """:func:`measure` in a compute worker (:func:`jaxplay.sandbox.compute`): the server
    process holds the measurement lock, its cores and the visitor's throttle, and only waits
    while the worker times the workload on those cores; the stages the worker reaches are told
    to ``progress`` as they happen.

    Why: the stopwatch loops are Python. In a server thread they hold the interpreter lock
    every other visitor's page needs while a measurement runs for seconds; the server then
    stalls for everyone. The figures are the same kind either way: the worker has the process's
    cores (its affinity) and JAX's settings, and :data:`jaxplay.core.timing.BUDGET_SCALE`
    travels with the job.

    Where no worker can start, it measures in this thread (:func:`measure`), and the page says
    so (:meth:`Measurement.where`).

    Raises:
        SizeError, ExprError, TypeError: as :func:`jaxplay.jit.check`, here, before any worker
            (so a refusal keeps its type and where in the formula it is).
        jaxplay.sandbox.TaskFailed: the function raised in the worker (``error.exc_type``),
            or the worker failed (deadline, memory, no worker could start).
    """

    def roofs() -> dict[str, object]:
        # The server's roofs, measured once per process: the worker is given them.
        return {
            "reference": sandbox.machine_reference(lambda: progress.stage(Stage.ROOFS.value, None))
        }

    measured = _in_worker(measure, STAGES, workload, progress, budget_s, roofs)
    assert isinstance(measured, Measurement)
    return measured


def race_in_worker(
    workload: Workload,
    progress: measure_lock.Progress = measure_lock.UNWATCHED,
    budget_s: float = MEASUREMENT_BUDGET_S,
    compile_s: float = 0.0,
) -> Race:
    """:func:`race` in a compute worker, as :func:`measure_in_worker` (and for the same reasons:
    its stopwatch loops are Python)."""
    job: dict[str, object] = {"compile_s": compile_s}
    raced = _in_worker(race, RACE_STAGES, workload, progress, budget_s, lambda: job)
    assert isinstance(raced, Race)
    return raced


def _in_worker(
    here: Callable[..., Measurement | Race],
    stages: tuple[str, ...],
    workload: Workload,
    progress: measure_lock.Progress,
    budget_s: float,
    under_lock: Callable[[], dict[str, object]],
) -> Measurement | Race:
    """``here(workload, budget_s=budget_s, **under_lock())`` in a compute worker, holding the
    measurement lock around it (``under_lock`` runs first, under the lock).

    The workload is checked before any wait, its trace in the compute worker too
    (:func:`~jaxplay.jit._workloads.footprint_in_worker` says why)."""
    progress.stage(Stage.CHECKING.value, 0.0)
    check(workload, footprint_in_worker)

    def told(stage: str, fraction: float | None) -> None:
        if stage in stages:  # a worker's frame: only our own stages are shown
            progress.stage(stage, fraction)

    with measure_lock.exclusive(progress):
        job = under_lock()
        cores = len(measure_lock.usable_cores())
        try:
            measured = sandbox.compute(
                here,
                # The lock's budget, one call past it, compiling and drawing the inputs fit
                # in a page's timed computation's limits with room to spare.
                timeout_s=sandbox.TIMED_TIMEOUT_S,
                cpu_s=sandbox.TIMED_TIMEOUT_S * cores,
                on_stage=told,
                workload=workload,
                budget_s=budget_s,
                **job,
            )
        except sandbox.TaskFailed as failed:
            if failed.error.kind != "refused":
                raise
            # No worker could start here: measured in this thread, as without one (and said).
            return here(workload, progress, budget_s, **job)
    if not isinstance(measured, Measurement | Race) or measured.workload != workload:
        raise sandbox.TaskFailed(
            sandbox.RunError(kind="crashed", message=_("The worker measured something else."))
        )
    return dataclasses.replace(measured, in_worker=True)


#: Where :func:`measure_shared` and :func:`race_shared` measure, by ``JAXPLAY_MEASURE_IN``
#: (:func:`jaxplay.hosting.settings.measure_in`).
MEASURERS = {"worker": measure_in_worker, "server": measure}
RACERS = {"worker": race_in_worker, "server": race}


#: One measurement per setting, shared by every visitor (the inputs are not kept, so eight
#: entries hold little beyond compiled programs and numbers); the default view is never dropped.
MEASUREMENTS: SharedResults[Measurement] = SharedResults(
    max_entries=8, keep=frozenset({key_of(DEFAULT_WORKLOAD)})
)


def shared_measurement(workload: Workload) -> SharedResult[Measurement] | None:
    """The shared measurement of ``workload`` if one is kept (never measures)."""
    return MEASUREMENTS.get(key_of(workload))


def measure_shared(
    workload: Workload,
    progress: measure_lock.Progress = measure_lock.UNWATCHED,
    *,
    force: bool = False,
    owner: str = N_("a visitor"),
) -> SharedResult[Measurement]:
    """The shared measurement of ``workload``: kept, joined while in progress, or measured now.

    With several server processes (a result store configured) the measurement is also made once
    for all of them: this process measures, or reads what another one measured, or waits for it.
    ``force`` measures anew and replaces the kept one for everyone ("Measure again").
    """

    def here(told: measure_lock.Progress) -> Measurement:
        return MEASURERS[settings.measure_in()](workload, told)

    kind = "jit.measurement"
    return _shared(kind, MEASUREMENTS, Measurement, here, workload, progress, force, owner)


#: One race per setting, as :data:`MEASUREMENTS`.
RACES: SharedResults[Race] = SharedResults(
    max_entries=8, keep=frozenset({key_of(DEFAULT_WORKLOAD)})
)


def shared_race(workload: Workload) -> SharedResult[Race] | None:
    """The shared race of ``workload`` if one is kept (never measures)."""
    return RACES.get(key_of(workload))


def race_shared(
    measured: Measurement,
    progress: measure_lock.Progress = measure_lock.UNWATCHED,
    *,
    force: bool = False,
    owner: str = N_("a visitor"),
) -> SharedResult[Race]:
    """The shared race of the workload ``measured`` is of, as :func:`measure_shared` (its
    compile time judges whether the article's stopwatch fits in the budget)."""
    compile_s = measured.profile.compile_total_s

    def here(told: measure_lock.Progress) -> Race:
        return RACERS[settings.measure_in()](measured.workload, told, compile_s=compile_s)

    workload = measured.workload
    return _shared("jit.race", RACES, Race, here, workload, progress, force, owner)


def _shared(
    kind: str,
    kept: SharedResults[V],
    value_type: type[V],
    here: Callable[[measure_lock.Progress], V],
    workload: Workload,
    progress: measure_lock.Progress,
    force: bool,
    owner: str,
) -> SharedResult[V]:
    """``here``'s result for ``workload``: kept in ``kept``, joined while in progress, read
    from the result store (``kind``) or measured now."""

    def run(tell: Report) -> V:
        told = _ToldToAll(progress, tell)
        store = results.configured_store()
        if store is None:
            return here(told)
        # Several server processes: one measurement of these settings for all of them.
        return store.get_or_compute(  # type: ignore[no-any-return]
            kind,
            list(key_of(workload)),
            lambda: here(told),
            codec.dataclass_types(value_type),
            force=force,
            waiting=lambda: tell(N_("another server process is measuring these settings"), None),
        ).value

    return kept.get_or_measure(
        key_of(workload), run, progress.stage, force=force, owner=owner, visitor=progress.visitor
    )


@dataclass(frozen=True)
class _ToldToAll:
    """The progress of a shared measurement: its stages go to every caller waiting for it
    (``tell``), its queue place and throttle to the caller who measures (``measurer``)."""

    measurer: measure_lock.Progress
    tell: Report

    @property
    def visitor(self) -> str | None:
        return self.measurer.visitor

    def stage(self, stage: str, fraction: float | None) -> None:
        self.tell(stage, fraction)

    def queued(self, ahead: int) -> None:
        self.measurer.queued(ahead)

    def throttled(self, wait_s: float) -> None:
        self.measurer.throttled(wait_s)


_warm_up_lock = threading.Lock()
_warm_up_thread: threading.Thread | None = None


def warm_up(workload: Workload = DEFAULT_WORKLOAD) -> threading.Thread:
    """Measure ``workload`` once in a background thread (the first call starts it; later calls
    return the same thread). A visitor who opens the page meanwhile joins that measurement."""
    global _warm_up_thread
    with _warm_up_lock:
        if _warm_up_thread is None:

            def run() -> None:
                # A failure is not kept: the first visitor's own measurement will report it.
                with contextlib.suppress(Exception):
                    everyone = N_("everyone, at the server's start-up")
                    measured = measure_shared(workload, owner=everyone)
                    race_shared(measured.value, owner=everyone)

            _warm_up_thread = threading.Thread(target=run, name="jaxplay-jit-warm-up", daemon=True)
            _warm_up_thread.start()
        return _warm_up_thread
