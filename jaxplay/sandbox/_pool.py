"""The pool of warm, single-use workers and the scheduling of runs onto them.

Each worker is a process of its own that has started its JAX backend and waits for exactly one
job: forked from the fork server's zygote, which imported JAX once and never started a backend
(:mod:`jaxplay.sandbox._zygote`), or, where the host allows no user namespaces or
``JAXPLAY_FORKSERVER=off``, a fresh interpreter (``subprocess`` + exec). After its job the
worker is killed with everything it started and a new spare takes its place. A few spares are
kept warm so a run does not pay its worker's start-up. At most ``max_concurrent`` runs execute
at once; the others wait in a first-come queue whose position the caller is told, and one
visitor has at most one run in flight (a second waits for the first).

Long: the spares, the queue, the per-visitor rule and the reading of a run's pipes share one lock
and its invariants; split into modules they would share private state instead. What stands
apart is apart: the configuration (:mod:`~jaxplay.sandbox._config`), the checks of a job
(:mod:`~jaxplay.sandbox._jobs`) and one worker's process and pipes
(:mod:`~jaxplay.sandbox._channel`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import select
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from jaxplay.core import codec
from jaxplay.core.i18n import N_, _
from jaxplay.hosting.publicmode import scrub_paths
from jaxplay.hosting.ratelimit import RateLimiter
from jaxplay.sandbox import _inspectors as inspectors
from jaxplay.sandbox import _protocol as protocol
from jaxplay.sandbox._channel import Output, Worker, decode, read_ready
from jaxplay.sandbox._config import MAX_SOURCE_CHARS, RunnerConfig, worker_environment
from jaxplay.sandbox._forkserver import ForkServer, ForkServerUnavailable
from jaxplay.sandbox._jobs import validate_inspect, validate_task
from jaxplay.sandbox._process import Cgroups, make_sandbox
from jaxplay.sandbox._results import (
    InspectRequest,
    Job,
    Limits,
    RunError,
    RunResult,
    Task,
    decode_arrays,
    decode_error,
    decode_repr,
    duration,
    refused,
)

log = logging.getLogger(__name__)

#: The signals a crash is named by (translated where a message is built).
_SIGNAL_NAMES: dict[int, str] = {
    signal.SIGSEGV: N_("a segmentation fault (SIGSEGV)"),
    signal.SIGBUS: N_("a bus error (SIGBUS)"),
    signal.SIGILL: N_("an illegal instruction (SIGILL)"),
    signal.SIGFPE: N_("a floating-point exception (SIGFPE)"),
    signal.SIGABRT: N_("an abort (SIGABRT)"),
}


class WorkerPool:
    """Warm single-use workers, a bounded number of concurrent runs and a visible queue."""

    def __init__(self, config: RunnerConfig | None = None) -> None:
        self.config = config or RunnerConfig.from_env()
        self.cgroups = Cgroups()
        self.sandbox = make_sandbox(
            self.config.sandbox, self.cgroups, scratch_mb=self.config.limits.scratch_mb
        )
        self.forkserver = (
            None
            if self.config.forkserver == "off"
            else ForkServer(
                self.sandbox,
                self.config.limits.scratch_mb,
                worker_environment,
                start_timeout_s=self.config.start_timeout_s,
            )
        )
        self._lock = threading.Condition()
        self._spares: deque[Worker] = deque()
        self._starting = 0
        self._running = 0
        self._computing = 0
        #: The server's compute worker, idle between its jobs (see _keep_computing).
        self._compute_worker: Worker | None = None
        self._queue: deque[object] = deque()
        self._visitors: dict[str, tuple[threading.Lock, int]] = {}
        self._closed = False
        self._start_failures = 0
        self._last_start_error = ""
        self._all: set[Worker] = set()
        per_minute = self.config.runs_per_minute
        #: Per-visitor run limit (public mode); tests may replace it with a fake-clock one.
        self.run_limiter = RateLimiter(per_minute, 60.0) if per_minute else None

    # -- status --------------------------------------------------------------------------
    @property
    def isolated(self) -> bool:
        return self.sandbox.isolated

    def worker_kind(self) -> str:
        """How each run's process is made, in a few words (for the Code Lab's limits line)."""
        if self.forkserver is None:
            return _("a fresh interpreter per run")
        return self.forkserver.describe()

    def refusal(self) -> str | None:
        """Why this pool refuses every run (public without isolation), or ``None``."""
        if self.config.public and not self.sandbox.isolated:
            return _(
                "Running code is disabled: this is a public server (JAXPLAY_PUBLIC=1) and the "
                "bubblewrap sandbox (/usr/bin/bwrap) is not available, so user code could not "
                "be isolated. Ask the operator to install bubblewrap."
            )
        return None

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {
                "sandbox": self.sandbox.name,
                "forkserver": self.forkserver is not None and self.forkserver.unusable is None,
                "isolated": self.sandbox.isolated,
                "cgroups": self.cgroups.available,
                "spares_ready": len(self._spares),
                "starting": self._starting,
                "running": self._running,
                "computing": self._computing,
                "queued": len(self._queue),
                "max_concurrent": self.config.max_concurrent,
                "last_start_error": self._last_start_error,
            }

    # -- spares --------------------------------------------------------------------------
    def warm(self) -> None:
        """Start spares in the background until ``config.spares`` are ready or starting."""
        if self.refusal() is not None:
            return
        with self._lock:
            if self._closed:
                return
            missing = self.config.spares - len(self._spares) - self._starting
            missing = max(0, missing)
            self._starting += missing
        for _spare in range(missing):
            threading.Thread(target=self._start_spare, daemon=True, name="jaxplay-spare").start()

    def _start_spare(self) -> None:
        worker: Worker | None = None
        try:
            worker = self._new_worker()
            with self._lock:
                self._all.add(worker)
            worker.wait_ready(self.config.start_timeout_s)
        except Exception as exc:
            if not self._closed:
                log.warning("jaxplay runner: a worker failed to start: %s", exc)
            if worker is not None:
                worker.stop()
            with self._lock:
                self._starting -= 1
                self._start_failures += 1
                self._last_start_error = str(exc)
                if worker is not None:
                    self._all.discard(worker)
                self._lock.notify_all()
            return
        with self._lock:
            self._starting -= 1
            self._start_failures = 0
            if self._closed:
                self._all.discard(worker)
                worker.stop()
            else:
                self._spares.append(worker)
            self._lock.notify_all()

    def _new_worker(self) -> Worker:
        """A worker forked by the fork server where it can be used, else an exec'd one."""
        forkserver = self.forkserver
        if forkserver is not None and (
            forkserver.unusable is None or self.config.forkserver == "on"
        ):
            try:
                return Worker(self.sandbox, forkserver)
            except ForkServerUnavailable as exc:
                if self.config.forkserver == "on":
                    raise RuntimeError(f"the fork server cannot run here: {exc}") from None
                log.warning(
                    "jaxplay runner: no fork server here (%s); a fresh interpreter per run", exc
                )
        return Worker(self.sandbox)

    def _take_worker(self) -> Worker | None:
        """A ready worker; starts one if none is ready or starting. ``None`` if start-up fails."""
        deadline = time.monotonic() + self.config.start_timeout_s
        with self._lock:
            while True:
                if self._closed:
                    return None
                while self._spares:
                    worker = self._spares.popleft()
                    if worker.launch.process.poll() is None:
                        return worker
                    self._all.discard(worker)
                    worker.stop()
                if self._start_failures >= 3 or time.monotonic() > deadline:
                    return None
                if self._starting == 0:
                    self._starting += 1
                    threading.Thread(target=self._start_spare, daemon=True).start()
                self._lock.wait(0.5)

    # -- queue ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _visitor_slot(self, visitor: str | None):  # type: ignore[no-untyped-def]
        if visitor is None:
            yield
            return
        with self._lock:
            lock, users = self._visitors.get(visitor, (threading.Lock(), 0))
            self._visitors[visitor] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._lock:
                lock, users = self._visitors[visitor]
                if users <= 1:
                    del self._visitors[visitor]
                else:
                    self._visitors[visitor] = (lock, users - 1)

    @contextlib.contextmanager
    def _run_slot(self, on_queue: Callable[[int], None] | None):  # type: ignore[no-untyped-def]
        ticket = object()
        told = None
        with self._lock:
            if len(self._queue) >= self.config.max_queued:
                raise _Busy(len(self._queue))
            self._queue.append(ticket)
        try:
            while True:
                with self._lock:
                    if self._closed:
                        raise _Closed
                    position = self._queue.index(ticket)
                    if position == 0 and self._running < self.config.max_concurrent:
                        self._queue.popleft()
                        self._running += 1
                        break
                    waiting = position + 1
                if on_queue is not None and waiting != told:
                    told = waiting
                    on_queue(waiting)
                with self._lock:
                    self._lock.wait(0.25)
        except BaseException:
            with self._lock:
                if ticket in self._queue:
                    self._queue.remove(ticket)
                self._lock.notify_all()
            raise
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                self._lock.notify_all()

    @contextlib.contextmanager
    def _compute_slot(self):  # type: ignore[no-untyped-def]
        """The place of the server's own work (:func:`jaxplay.sandbox.compute`): counted apart
        and never queued behind visitors' runs. Its caller holds the measurement lock, which is
        its queue: one at a time per server process, on cores no other timing uses (and a
        check's trace, which times nothing, one more at most, under a lock of its own)."""
        with self._lock:
            if self._closed:
                raise _Closed
            self._computing += 1
        try:
            yield
        finally:
            with self._lock:
                self._computing -= 1
                self._lock.notify_all()

    def _take_compute_worker(self) -> Worker | None:
        """The kept compute worker when it is idle and alive, else a spare (which becomes the
        compute worker once it has answered)."""
        with self._lock:
            worker, self._compute_worker = self._compute_worker, None
        if worker is not None and worker.launch.process.poll() is None:
            return worker
        if worker is not None:
            self._retire(worker)
        return self._take_worker()

    def _keep_computing(self, worker: Worker, limits: Limits) -> bool:
        """Keep ``worker`` for the next compute job (it answered this one): unless it has done
        :data:`MAX_COMPUTE_JOBS`, or grown by half a run's memory allowance since it started
        (what it keeps compiled), or the pool is shut down. Of two that answered at once (a
        check's trace beside a measurement), the one that has done more jobs is kept, and the
        other retired: what it compiled stays warm."""
        worker.jobs += 1
        start = int((worker.info or {}).get("vm_bytes", 0))
        grown = worker.vm_bytes - start if start and worker.vm_bytes else 0
        if worker.jobs >= MAX_COMPUTE_JOBS or grown > limits.memory_mb * 1024 * 1024 // 2:
            return False
        with self._lock:
            kept = self._compute_worker
            if self._closed or (kept is not None and kept.jobs >= worker.jobs):
                return False
            self._compute_worker = worker
        if kept is not None:
            self._retire(kept, background=True)
        return True

    # -- runs ----------------------------------------------------------------------------
    def run(
        self,
        source: str,
        *,
        timeout_s: float | None = None,
        inspect: InspectRequest | None = None,
        visitor: str | None = None,
        on_queue: Callable[[int], None] | None = None,
        task: Task | None = None,
        on_stage: Callable[[str, float | None], None] | None = None,
        limits: Limits | None = None,
        trusted: bool = False,
    ) -> RunResult:
        """Run ``source`` (or ``task``) in a fresh sandboxed worker.

        See :func:`jaxplay.sandbox.run_code` and :func:`jaxplay.sandbox.run_task`; ``on_stage``,
        ``limits`` and ``trusted`` are :func:`jaxplay.sandbox.compute`'s (the stages a task
        with ``progress`` sends, its own limits, and no refusal for want of isolation: the
        server's own work on values it chose runs wherever a worker can start).
        """
        reason = None if trusted else self.refusal()
        if reason is None and task is not None:
            reason = validate_task(task)
        if reason is None and not isinstance(source, str):
            reason = _("The code must be text.")
        if reason is None and len(source) > MAX_SOURCE_CHARS:
            reason = _("The code is {length} characters; the limit is {limit}.").format(
                length=f"{len(source):,}", limit=f"{MAX_SOURCE_CHARS:,}"
            )
        if reason is None and inspect is not None:
            reason = validate_inspect(inspect)
        if reason is None:
            reason = self._admit(visitor)
        if reason is not None:
            return self._scrubbed(refused(reason))
        return self._scrubbed(
            self._run(
                source, timeout_s, inspect, visitor, on_queue, task, on_stage, limits, trusted
            )
        )

    def _admit(self, visitor: str | None) -> str | None:
        """Why a run for ``visitor`` may not start now (shut down, rate limit), or ``None``."""
        if self._closed:
            return _("The runner is shut down.")
        if visitor is not None and self.run_limiter is not None:
            wait = self.run_limiter.try_acquire(visitor)
            if wait > 0:
                return _(
                    "This shared server runs at most {runs} pieces of code a minute per visitor, "
                    "and you reached that; try again in {seconds} s."
                ).format(runs=self.run_limiter.capacity, seconds=max(1, math.ceil(wait - 1e-6)))
        return None

    @contextlib.contextmanager
    def reserve(
        self, visitor: str | None = None, on_queue: Callable[[int], None] | None = None
    ) -> Iterator[None]:
        """Hold a run's place (rate limit, one per visitor, a slot of the pool) without a worker.

        For work that starts its own processes outside the pool — the multi-process
        ``jax.distributed`` demo — so it counts against the same limits as a Code Lab run.

        Raises:
            Refused: with the reason (rate limit, server busy, shut down) as its message.
        """
        reason = self._admit(visitor)
        if reason is not None:
            raise Refused(reason)
        try:
            with self._visitor_slot(visitor), self._run_slot(on_queue):
                yield
        except _Busy as busy:
            raise Refused(busy.message()) from None
        except _Closed:
            raise Refused(_("The runner is shut down.")) from None

    def _scrubbed(self, result: RunResult) -> RunResult:
        """``result`` without the server's paths in its error, tracebacks and stderr.

        Public mode also scrubs what the code printed: a visitor's code sees the sandbox's
        paths, which are the server's own (bind-mounted read-only).
        """
        error = result.error
        if error is not None:
            error = replace(
                error,
                message=scrub_paths(error.message),
                traceback=scrub_paths(error.traceback),
            )
        stdout = scrub_paths(result.stdout) if self.config.public else result.stdout
        return replace(
            result,
            error=error,
            stderr=scrub_paths(result.stderr),
            stdout=stdout,
            inspections=_scrub_strings(result.inspections, scrub_paths),
            task=_scrub_strings(result.task, scrub_paths),
        )

    def _run(
        self,
        source: str,
        timeout_s: float | None,
        inspect: InspectRequest | None,
        visitor: str | None,
        on_queue: Callable[[int], None] | None,
        task: Task | None = None,
        on_stage: Callable[[str, float | None], None] | None = None,
        limits: Limits | None = None,
        trusted: bool = False,
    ) -> RunResult:
        given = limits or self.config.limits
        timeout = given.timeout_s if timeout_s is None else max(0.1, float(timeout_s))
        queued_at = time.monotonic()
        try:
            slot = self._compute_slot() if trusted else self._run_slot(on_queue)
            with self._visitor_slot(visitor), slot:
                queued = time.monotonic() - queued_at
                self.warm()
                for _attempt in range(2):
                    worker = self._take_compute_worker() if trusted else self._take_worker()
                    if worker is None:
                        why = self._last_start_error or _("the runner is shut down.")
                        return refused(
                            _("No sandbox worker could be started: {reason}").format(reason=why)
                        )
                    answered = kept = False
                    try:
                        result, answered = self._execute(
                            worker, source, timeout, inspect, task, on_stage, given, keep=trusted
                        )
                        kept = trusted and answered and result is not None and result.ok
                        kept = kept and self._keep_computing(worker, given)
                    finally:
                        if not kept:
                            self._retire(worker, background=answered)
                    if result is not None:
                        return _with_queue_time(result, queued)
                return refused(_("The sandbox workers keep dying before they get the code."))
        except _Closed:
            return refused(_("The runner is shut down."))
        except _Busy as busy:
            return refused(busy.message())

    def _retire(self, worker: Worker, background: bool = False) -> None:
        """Stop a used worker (it is single-use) and start a spare in its place. It leaves
        ``_all`` only once stopped, so a shutdown meanwhile waits for it.

        ``background``: a worker that answered is killed already; waiting for its processes to
        be gone and removing its cgroup need not delay the visitor's result.
        """
        if background:
            try:
                thread = threading.Thread(
                    target=self._retire, args=(worker,), daemon=True, name="jaxplay-retire"
                )
                thread.start()
                return
            except RuntimeError:  # no thread to be had: retire it here
                pass
        try:
            worker.stop()
        except Exception:
            log.exception("jaxplay runner: a used worker could not be stopped")
        finally:
            with self._lock:
                self._all.discard(worker)
            self.warm()

    def _execute(
        self,
        worker: Worker,
        source: str,
        timeout_s: float,
        inspect: InspectRequest | None,
        task: Task | None = None,
        on_stage: Callable[[str, float | None], None] | None = None,
        limits: Limits | None = None,
        keep: bool = False,
    ) -> tuple[RunResult | None, bool]:
        """Send the job and watch the worker: its result (``None`` if it died before taking the
        job) and whether the worker answered (sent its result frame; only signalled to die).

        ``on_stage`` is called in this thread with each stage a task with ``progress`` sends
        before its result, checked first (:func:`stage_of`); without it a stage frame is as
        corrupt as any other frame that is not the result.

        ``keep``: the server's own task (a compute job): the job pipe stays open for the next
        one and a worker that answered is left running (the caller keeps or retires it).
        """
        limits = self.config.limits if limits is None else limits
        group = worker.launch.group
        if group is not None:
            group.limit_pids(limits.processes)
            # What the warm worker holds now, plus the run's allowance: files it writes to the
            # in-memory /tmp and /dev/shm count here too, unlike in the address-space limit.
            held = group.memory_in_use() or int((worker.info or {}).get("rss_bytes", 0))
            group.limit_memory(held + limits.memory_mb * 1024 * 1024)
        job = codec.encode(Job(source, limits, inspect, task, more=keep))
        started = time.monotonic()
        try:
            protocol.write_message(worker.job_w, job)
        except OSError:
            return None, False
        if not keep:
            worker.close_job()
        deadline = started + timeout_s
        output = Output(cap=limits.output_bytes)
        fds = {worker.out_r: "out", worker.err_r: "err", worker.result_r: "result"}
        for fd in fds:
            os.set_blocking(fd, False)
        message: dict[str, Any] | None = None
        error: RunError | None = None
        result_bytes = 0
        open_fds = set(fds)
        while message is None and error is None:
            now = time.monotonic()
            if now >= deadline:
                error = RunError(
                    kind="timeout",
                    message=_("The code ran longer than {seconds} s and was stopped.").format(
                        seconds=f"{timeout_s:g}"
                    ),
                )
                break
            if worker.result_r not in open_fds and worker.launch.process.poll() is not None:
                break
            wait = min(deadline - now, 0.05 if worker.result_r not in open_fds else 0.5)
            ready = select.select(list(open_fds), [], [], wait)[0]
            for fd in ready:
                data = read_ready(fd)
                if data is None:
                    continue
                if not data:
                    open_fds.discard(fd)
                    continue
                if fds[fd] == "result":
                    # The code runs in the worker and can write to this pipe too: a byte cap
                    # bounds what the server reads and parses, and the one frame expected now
                    # is the result (anything else ends the run unread).
                    result_bytes += len(data)
                    if result_bytes > limits.result_bytes:
                        error = RunError(
                            kind="output_limit",
                            message=_(
                                "The run sent back more than {size} of results; it was stopped."
                            ).format(size=_size(limits.result_bytes)),
                        )
                        break
                    try:
                        for item in worker.reader.feed(data):
                            stage = item.get("type") == "stage"
                            if stage and message is None and on_stage is not None:
                                on_stage(*stage_of(item))
                                continue
                            if item.get("type") != "result" or message is not None:
                                raise protocol.ProtocolError("a message that is not its result")
                            message = item
                    except protocol.ProtocolError as exc:
                        error = RunError(
                            kind="crashed",
                            message=_(
                                "The worker's result channel was corrupted ({error})."
                            ).format(error=exc),
                        )
                else:
                    output.add(fds[fd], data)
                    if output.over:
                        error = RunError(
                            kind="output_limit",
                            message=_(
                                "The code printed more than {size}; the run was stopped and the "
                                "output cut there."
                            ).format(size=_size(limits.output_bytes)),
                        )
        elapsed = time.monotonic() - started
        answered = message is not None and error is None
        if answered:
            # The worker flushed its output before it sent the result: all it printed is in
            # the pipes already, so read what is there and do not wait for the pipes' end.
            if keep:
                vm = message.get("vm_bytes") if message is not None else None
                worker.vm_bytes = vm if isinstance(vm, int) and not isinstance(vm, bool) else 0
            else:
                worker.signal_kill()
            self._drain(worker, output, open_fds - {worker.result_r}, wait_s=0.0)
        else:
            worker.kill()
            self._drain(worker, output, open_fds - {worker.result_r})
        if message is None and error is None:
            error = self._classify_exit(worker, output, limits)
        if message is not None and error is None:
            error = decode_error(message.get("error"))
            result = RunResult(
                ok=error is None,
                stdout=decode(output.stdout),
                stderr=decode(output.stderr),
                truncated=output.over,
                value_repr=decode_repr(message.get("value_repr")),
                arrays=decode_arrays(message.get("arrays")),
                duration_s=duration(message.get("duration_s"), elapsed),
                error=error,
                inspections=inspectors.decode(
                    message.get("inspections"), inspect.inspectors if inspect else ()
                ),
                task=message.get("task") if task is not None else None,
            )
            return result, answered
        stdout = decode(output.stdout)
        if output.over:
            stdout += "\n" + _("… output cut at {size}").format(size=_size(limits.output_bytes))
        failed = RunResult(
            ok=False,
            stdout=stdout,
            stderr=decode(output.stderr),
            truncated=output.over,
            duration_s=elapsed,
            error=error,
        )
        return failed, answered

    @staticmethod
    def _drain(worker: Worker, output: Output, fds: set[int], wait_s: float = 0.05) -> None:
        """Read what the (dead or dying) worker left in its output pipes, up to the cap, until
        they end or stay empty for ``wait_s``."""
        deadline = time.monotonic() + 1.0
        fd_names = {worker.out_r: "out", worker.err_r: "err"}
        while fds and time.monotonic() < deadline and not output.over:
            ready = select.select(list(fds), [], [], wait_s)[0]
            if not ready:
                break
            for fd in ready:
                data = read_ready(fd)
                if data is None:
                    continue
                if not data:
                    fds.discard(fd)
                else:
                    output.add(fd_names[fd], data)

    def _classify_exit(self, worker: Worker, output: Output, limits: Limits) -> RunError:
        """Why a worker ended without a result, from its exit status and its cgroup."""
        process = worker.launch.process
        code = process.returncode
        group = worker.launch.group
        stderr = decode(output.stderr[-4000:])
        if group is not None and group.oom_killed():
            return RunError(kind="memory", message=_("The code used more memory than the limit."))
        if code is None:
            return RunError(kind="crashed", message=_("The worker stopped responding."))
        signum = (
            -code if code < 0 else code - 128 if self.sandbox.name == "bwrap" and code > 128 else 0
        )
        if signum == signal.SIGXCPU:
            return RunError(
                kind="timeout",
                message=_("The code used more than {seconds} CPU seconds.").format(
                    seconds=f"{limits.cpu_s:g}"
                ),
            )
        if signum == signal.SIGABRT and any(
            s in stderr for s in ("bad_alloc", "RESOURCE_EXHAUSTED", "Out of memory")
        ):
            return RunError(kind="memory", message=_("The code ran out of memory."))
        if signum in _SIGNAL_NAMES:
            return RunError(
                kind="crashed",
                message=_("The Python process crashed with {signal}.").format(
                    signal=_(_SIGNAL_NAMES[signum])
                ),
            )
        if signum > 0:
            try:
                name = signal.Signals(signum).name
            except ValueError:
                name = _("signal {number}").format(number=signum)
            return RunError(
                kind="crashed",
                message=_("The Python process was killed by {signal}.").format(signal=name),
            )
        return RunError(
            kind="exit",
            message=_(
                "The Python process exited with status {status} before finishing the run."
            ).format(status=code),
        )

    def shutdown(self) -> None:
        """Stop every worker and remove the cgroups; later runs are refused."""
        with self._lock:
            self._closed = True
            self._compute_worker = None
            workers = list(self._all) + list(self._spares)
            self._spares.clear()
            self._lock.notify_all()
        for worker in workers:
            worker.stop()
        if self.forkserver is not None:
            self.forkserver.shutdown()
        self.cgroups.remove()


#: Jobs a compute worker does before it is replaced (it keeps what it compiled meanwhile).
MAX_COMPUTE_JOBS = 64

#: The longest stage name a worker may send (the stages are our own short sentences).
MAX_STAGE_CHARS = 200


def stage_of(item: dict[str, Any]) -> tuple[str, float | None]:
    """A ``stage`` frame's stage and fraction, checked: text of at most
    :data:`MAX_STAGE_CHARS`, and a fraction from 0 to 1 or none. Anything else is a
    :class:`~jaxplay.sandbox._protocol.ProtocolError` (the frame came from a worker)."""
    stage, fraction = item.get("stage"), item.get("fraction")
    if not isinstance(stage, str) or len(stage) > MAX_STAGE_CHARS:
        raise protocol.ProtocolError("a stage that is not a short text")
    if fraction is not None and (
        isinstance(fraction, bool)
        or not isinstance(fraction, int | float)
        or not 0.0 <= fraction <= 1.0
    ):
        raise protocol.ProtocolError("a stage's fraction that is not from 0 to 1")
    return stage, None if fraction is None else float(fraction)


def _scrub_strings(value: Any, scrub: Callable[[str], str], depth: int = 0) -> Any:
    """``value`` (parsed JSON, or a decoded result's dataclasses and tuples) with ``scrub``
    applied to every string in it."""
    if isinstance(value, str):
        return scrub(value)
    if depth > 8:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        scrubbed = {
            f.name: _scrub_strings(getattr(value, f.name), scrub, depth + 1) for f in fields
        }
        return dataclasses.replace(value, **scrubbed)
    if isinstance(value, tuple):
        return tuple(_scrub_strings(v, scrub, depth + 1) for v in value)
    if isinstance(value, dict):
        return {k: _scrub_strings(v, scrub, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_strings(v, scrub, depth + 1) for v in value]
    return value


class _Closed(Exception):
    pass


class _Busy(Exception):
    """The run queue is full (``max_queued`` runs already wait)."""

    def __init__(self, waiting: int) -> None:
        super().__init__(waiting)
        self.waiting = waiting

    def message(self) -> str:
        return _(
            "This server is busy: {waiting} runs are already waiting for a worker. "
            "Try again in a moment."
        ).format(waiting=self.waiting)


class Refused(Exception):
    """A run (or a reserved place) the pool will not start; the message says why."""


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:g} MiB" if n >= 1024 * 1024 else f"{n / 1024:g} KiB"


def _with_queue_time(result: RunResult, queued: float) -> RunResult:
    return replace(result, queued_s=queued)
