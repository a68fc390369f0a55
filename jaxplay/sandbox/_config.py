"""How the runner is set up: the pool's configuration and a worker's environment.

Why a module of its own: :class:`RunnerConfig` is what the settings say (isolation, spares,
concurrency, one run's limits), read once and handed to the pool; the pool itself
(:mod:`jaxplay.sandbox._pool`) holds only the scheduling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxplay.hosting import environment, settings
from jaxplay.sandbox._results import Limits

#: Longest source a run takes (characters); the Code Lab cuts what a visitor sends to this.
MAX_SOURCE_CHARS = 100_000


@dataclass(frozen=True)
class RunnerConfig:
    """How the pool isolates, how many workers it keeps, and the limits of one run.

    :meth:`from_env` reads them through :mod:`jaxplay.hosting.settings`, whose table says what
    each variable means. ``runs_per_minute`` is ``None`` (no limit) outside public mode.
    """

    sandbox: str = settings.SANDBOX_MODES[0]
    forkserver: str = settings.FORKSERVER_MODES[0]
    public: bool = False
    spares: int = settings.DEFAULT_SPARES
    max_concurrent: int = 2
    limits: Limits = field(default_factory=Limits)
    start_timeout_s: float = 120.0
    runs_per_minute: int | None = None
    max_queued: int = settings.DEFAULT_RUN_QUEUE

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> RunnerConfig:
        public = settings.public_mode(environ)
        return cls(
            sandbox=settings.sandbox_mode(environ),
            forkserver=settings.forkserver_mode(environ),
            public=public,
            runs_per_minute=settings.runs_per_minute(environ) if public else None,
            spares=settings.runner_spares(environ),
            max_concurrent=settings.runner_concurrency(environ),
            max_queued=settings.run_queue(environ),
            limits=Limits(
                timeout_s=settings.run_timeout_s(environ),
                cpu_s=settings.run_cpu_s(environ),
                memory_mb=settings.run_memory_mb(environ),
            ),
        )


def worker_environment() -> dict[str, str]:
    """The whole environment of a worker, rebuilt from a short allow-list
    (:func:`jaxplay.hosting.environment.child_environment`, as for every child process).

    Nothing of the server's environment leaks (secrets, tokens, paths) except the few JAX
    settings of :data:`jaxplay.hosting.settings.PASSED_TO_WORKERS` (among them
    ``XLA_CLIENT_MEM_FRACTION``, which caps each worker's share of the GPU: one run cannot
    take the memory every other visitor's run needs); the simulated CPU device count is the app's.
    """
    return environment.child_environment()
