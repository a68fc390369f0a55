"""Every environment variable jaxplay reads: the table of them, their defaults and their readers.

Why one module: an operator hosting the app for a room needs one place that lists every knob, and
each knob must mean the same wherever it is read. So the table below is what the README shows
(its "Configuration" table is :func:`markdown_table`'s output pasted between
``<!-- settings:start -->`` and ``<!-- settings:end -->``; a test greps the sources for
``JAXPLAY_*`` names and compares the README's block with this table), the defaults are the
constants below, and every variable is parsed here, by one reader per setting
(:func:`runner_spares`, :func:`runs_per_minute`, ...), which the runner, the environment and
public mode call (``JAXPLAY_SNIPPET_DB`` is read by :func:`jaxplay.hosting.snippets.default_path`).
A malformed value falls back to the default: a typo in a deployment's environment must not stop
the app from starting.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from jaxplay.core.measure_lock import usable_cores

#: How Code Lab runs are isolated (the first is the default).
SANDBOX_MODES: tuple[str, ...] = ("auto", "bwrap", "process")
FORKSERVER_MODES: tuple[str, ...] = ("auto", "on", "off")
#: Where the pages' timed work runs (the first is the default).
MEASURE_IN_MODES: tuple[str, ...] = ("worker", "server")
#: Sandbox workers kept started and waiting.
DEFAULT_SPARES = 2
#: Runs that may wait for a worker, server-wide.
DEFAULT_RUN_QUEUE = 16
#: Wall-clock seconds, CPU seconds and memory (MB) one run may use.
DEFAULT_RUN_TIMEOUT_S = 10.0
DEFAULT_RUN_CPU_S = 20.0
DEFAULT_RUN_MEMORY_MB = 1536
#: Less memory than this cannot even run ``import jax`` in a worker.
MIN_RUN_MEMORY_MB = 64
#: Runs a visitor may start per minute in public mode (a burst of this many, then refilled).
DEFAULT_RUNS_PER_MINUTE = 20
#: Measurements (timed benchmarks) a visitor may start per minute in public mode.
DEFAULT_BENCHMARKS_PER_MINUTE = 30
#: Measurements the whole server starts per minute in public mode (every visitor together).
DEFAULT_SERVER_BENCHMARKS_PER_MINUTE = 120
#: Shares (snippets saved) one visitor may make per minute, on each app instance.
DEFAULT_SHARES_PER_MINUTE = 10
#: New snippets the whole snippet store accepts per hour (every visitor and instance together).
DEFAULT_SNIPPETS_PER_HOUR = 500
#: Total size of the stored snippets, in MB (MiB).
DEFAULT_SNIPPET_STORE_MB = 200
#: One visitor's share of those two: new snippets per hour, and MB of snippets stored.
DEFAULT_VISITOR_SNIPPETS_PER_HOUR = 50
DEFAULT_VISITOR_SNIPPET_MB = 20
#: Days after which a snippet that nobody opened or shared again is deleted.
DEFAULT_SNIPPET_EXPIRY_DAYS = 30
#: Connections to a PostgreSQL snippet store each app instance opens at most.
DEFAULT_SNIPPET_DB_POOL = 4
#: What counts as one visitor (the first is the default).
VISITOR_KEYS: tuple[str, ...] = ("address", "session")
#: Multiplies how long every measurement samples, and the most it may be set to.
DEFAULT_MEASURE_SCALE = 1.0
MAX_MEASURE_SCALE = 10.0
#: Simulated CPU devices for the sharding demos, and the most a visitor's server may ask for.
DEFAULT_CPU_DEVICES = 8
MAX_CPU_DEVICES = 64
#: JAX's own settings that every sandbox worker gets from the server's environment.
PASSED_TO_WORKERS: tuple[str, ...] = (
    "JAX_PLATFORMS",
    "CUDA_VISIBLE_DEVICES",
    "JAX_ENABLE_X64",
    "XLA_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
)


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, its default (as text) and what it does."""

    name: str
    default: str
    meaning: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "JAXPLAY_PUBLIC",
        "0",
        "`1` for a server that others reach: running code is refused unless the bubblewrap "
        "sandbox is available, runs and benchmarks are rate-limited per visitor, the sidebar "
        "shows the limits and the queues, and error texts show no server paths.",
    ),
    Setting(
        "JAXPLAY_SANDBOX",
        SANDBOX_MODES[0],
        "How Code Lab runs are isolated: `bwrap` (bubblewrap: no network, no server files), "
        "`process` (a plain child process: laptops only) or `auto` (bwrap when "
        "`/usr/bin/bwrap` exists and a trial run of it can create its namespaces here, else a "
        "plain process, which a public server refuses to run code in).",
    ),
    Setting(
        "JAXPLAY_FORKSERVER",
        FORKSERVER_MODES[0],
        "How a run's process is made: `on` (forked from a zygote that imported JAX once, in "
        "user, PID, mount, IPC and network namespaces of its own: about a twelfth of the CPU "
        "of a fresh interpreter, README › Benchmarks), `off` (a fresh interpreter per run) or "
        "`auto` (the fork server where the kernel allows unprivileged user namespaces, else a "
        "fresh interpreter).",
    ),
    Setting(
        "JAXPLAY_RUNNER_SPARES",
        f"{DEFAULT_SPARES}",
        "Sandbox workers kept started and waiting (each a Python process with JAX imported), so "
        "a run does not pay JAX's start-up.",
    ),
    Setting(
        "JAXPLAY_RUNNER_CONCURRENCY",
        "unset (the cores the process runs on)",
        "Code Lab runs executing at once; further runs wait in a first-come queue.",
    ),
    Setting(
        "JAXPLAY_RUN_QUEUE",
        f"{DEFAULT_RUN_QUEUE}",
        "Runs that may wait for a worker, over the whole server (formula evaluations and the "
        'multi-process demo count too); more are refused with "busy", so scripted clients '
        "with a new visitor id per request cannot queue without bound.",
    ),
    Setting(
        "JAXPLAY_RUN_TIMEOUT_S",
        f"{DEFAULT_RUN_TIMEOUT_S:g}",
        "Wall-clock seconds one run may take.",
    ),
    Setting(
        "JAXPLAY_RUN_CPU_S",
        f"{DEFAULT_RUN_CPU_S:g}",
        "CPU seconds one run may use, over all its threads.",
    ),
    Setting(
        "JAXPLAY_RUN_MEMORY_MB",
        f"{DEFAULT_RUN_MEMORY_MB}",
        "Memory (MB) one run may add on top of a started worker (CPU memory; GPU memory is "
        "bounded by `XLA_CLIENT_MEM_FRACTION`).",
    ),
    Setting(
        "JAXPLAY_RUNS_PER_MINUTE",
        f"{DEFAULT_RUNS_PER_MINUTE}",
        "Public mode: Code Lab runs one visitor may start per minute; more are refused with the "
        "time to wait.",
    ),
    Setting(
        "JAXPLAY_BENCHMARKS_PER_MINUTE",
        f"{DEFAULT_BENCHMARKS_PER_MINUTE}",
        "Public mode: timed measurements one visitor may start per minute; more wait their "
        "turn (the page says for how long).",
    ),
    Setting(
        "JAXPLAY_SERVER_BENCHMARKS_PER_MINUTE",
        f"{DEFAULT_SERVER_BENCHMARKS_PER_MINUTE}",
        "Public mode: timed measurements the whole server starts per minute, every visitor "
        "together (holds for scripted clients that come back as a new visitor each time); more "
        "wait their turn.",
    ),
    Setting(
        "JAXPLAY_VISITOR_KEY",
        VISITOR_KEYS[0],
        "What counts as one visitor for the rate limits and the one-run-at-a-time rule: "
        "`address` (the client's IP address; a browser session where none is known) or "
        "`session` (each browser session: use it when a whole room reaches the server through "
        "one NAT address).",
    ),
    Setting(
        "JAXPLAY_TRUSTED_PROXY",
        "0",
        "`1` when the app sits behind your own reverse proxy: the client address is the last "
        "entry of `X-Forwarded-For` (only a proxy you run may set it).",
    ),
    Setting(
        "JAXPLAY_CHECK_CLAIMS",
        "1",
        "`0` to skip checking the pages' statements about JAX against this server's JAX at "
        "start-up (a background thread, about 30 s of one core on the 2-core development VM, "
        "each check holding the measurement lock so that no measurement is timed beside it; "
        "each page then shows how its statements fared).",
    ),
    Setting(
        "JAXPLAY_SNIPPET_DB",
        "`~/.local/share/jaxplay/snippets.sqlite3`",
        "Where the Code Lab's shared snippets are stored: a SQLite file (created on first use) "
        "or a `postgresql://user:password@host/database` URL, which several app instances can "
        "share (its tables are created on first use).",
    ),
    Setting(
        "JAXPLAY_SHARES_PER_MINUTE",
        f"{DEFAULT_SHARES_PER_MINUTE}",
        "Snippets one visitor may share per minute (counted by each app instance on its own); "
        "more are refused with the time to wait.",
    ),
    Setting(
        "JAXPLAY_SNIPPETS_PER_HOUR",
        f"{DEFAULT_SNIPPETS_PER_HOUR}",
        "New snippets the snippet store accepts per hour from all visitors together (counted in "
        "the database, so every instance sharing it shares this limit); sharing code that is "
        "already stored does not count.",
    ),
    Setting(
        "JAXPLAY_SNIPPET_STORE_MB",
        f"{DEFAULT_SNIPPET_STORE_MB}",
        "Total size (MB) of the stored snippets; when it is reached, Share is refused until old "
        "snippets expire.",
    ),
    Setting(
        "JAXPLAY_VISITOR_SNIPPETS_PER_HOUR",
        f"{DEFAULT_VISITOR_SNIPPETS_PER_HOUR}",
        "One visitor's share of `JAXPLAY_SNIPPETS_PER_HOUR`: new snippets a visitor may store "
        "per hour (counted in the database, like the store's limit), so that one address cannot "
        "use up everyone's.",
    ),
    Setting(
        "JAXPLAY_VISITOR_SNIPPET_MB",
        f"{DEFAULT_VISITOR_SNIPPET_MB}",
        "One visitor's share of `JAXPLAY_SNIPPET_STORE_MB`: the size (MB) of the snippets one "
        "visitor's shares keep stored (counted in the database).",
    ),
    Setting(
        "JAXPLAY_SNIPPET_EXPIRY_DAYS",
        f"{DEFAULT_SNIPPET_EXPIRY_DAYS}",
        "A snippet nobody has opened or shared for this many days is deleted; opening its link "
        "starts the count again.",
    ),
    Setting(
        "JAXPLAY_SNIPPET_DB_POOL",
        f"{DEFAULT_SNIPPET_DB_POOL}",
        "PostgreSQL snippet store only: connections each app instance opens to it at most.",
    ),
    Setting(
        "JAXPLAY_RESULT_DB",
        "unset (results kept per process)",
        "Where measured results are kept for every server process to share (each computed once "
        "per deployment, keyed by its inputs, the JAX version, the device and the host): a "
        "SQLite file for the processes of one machine, or a `postgresql://` URL for several. "
        "Set for you by `python -m jaxplay.hosting.serve` when it starts more than one process.",
    ),
    Setting(
        "JAXPLAY_WARM_UP",
        "auto",
        "Which pages the server opens once in the background when it starts, every tab and "
        "preset of each, so the room's first visits find their results computed (one warm-up "
        "at a time per host for a room's processes): `auto` (in public mode only), `on`, "
        "`off`, or the page addresses to warm, comma-separated (`jit,vmap`). "
        "`python -m pages._warm_up --url URL` runs one by hand.",
    ),
    Setting(
        "JAXPLAY_MEASURE_LOCK",
        "unset (measurements take turns within each process)",
        "A lock file every server process on this machine names (one file per core and one for "
        "the accelerator are made beside it): measurements of processes whose cores overlap, "
        "or that share the accelerator, then take turns, so no two timings share a core; "
        "processes on disjoint cores measure at once. Set for you by "
        "`python -m jaxplay.hosting.serve` when it starts more than one process.",
    ),
    Setting(
        "JAXPLAY_MEASURE_IN",
        MEASURE_IN_MODES[0],
        "Where the pages' timed work runs (the jit page's measurement and size sweep, the "
        "memory page's variants and chains, the vmap, Compose and PRNG timings, the Devices "
        "page's transfers and scaling sweep, the state page's training), and what traces or "
        "compiles for a visitor's new shape (the jit page's check, the vmap convolution, "
        "Compose's per-sample gradients, the PRNG page's streams and training, Pytrees' "
        "parameters, Tracing's presets and recompilation lab): `worker` (the compute worker, "
        "one process of the runner's pool "
        "kept for the server's own jobs, on this process's cores, which the server holds for "
        "it; the server only waits, so the stopwatch loops do not hold its Python for other "
        "visitors' pages) or `server` (the server's own thread). The jit page says which.",
    ),
    Setting(
        "JAXPLAY_MEASURE_SCALE",
        f"{DEFAULT_MEASURE_SCALE:g}",
        "Multiplies how long every timed measurement samples (up to "
        f"{MAX_MEASURE_SCALE:g}): below 1 for quicker, noisier figures (a busy laptop; the test "
        "suite's servers use 0.05), above 1 for steadier ones. Each measurement still takes its "
        "minimum samples and reports their median and spread, and the pages say how many.",
    ),
    Setting(
        "JAXPLAY_CPUS",
        "unset (every core this process may use)",
        "The cores this server process (its XLA threads, its sandbox workers) runs on, as "
        "`0-3,8`; set before JAX starts. `python -m jaxplay.hosting.serve` gives each process "
        "its own share of the cores, so their measurements run at once on disjoint cores.",
    ),
    Setting(
        "JAXPLAY_CPU_DEVICES",
        f"{DEFAULT_CPU_DEVICES}",
        "Simulated CPU devices for the sharding demos (1 to "
        f"{MAX_CPU_DEVICES}); set before JAX starts.",
    ),
    Setting(
        "XLA_PYTHON_CLIENT_PREALLOCATE",
        "false",
        "`false` for the server unless given, always for the sandbox and compute workers: "
        "they share one GPU, so no process grabs most of its memory up front.",
    ),
    Setting(
        "XLA_CLIENT_MEM_FRACTION",
        "unset (JAX's 0.75)",
        "Largest share of GPU memory one process may take; passed on to every sandbox worker, "
        "so one run cannot take the memory other visitors' runs need.",
    ),
    Setting(
        "XLA_PYTHON_CLIENT_MEM_FRACTION",
        "unset",
        "The deprecated name of `XLA_CLIENT_MEM_FRACTION`, still read by JAX and passed on the "
        "same way; never set both (JAX refuses to start a GPU backend with both).",
    ),
    Setting(
        "JAX_PLATFORMS",
        "unset (all)",
        "JAX's backend choice (e.g. `cpu`); passed on to the sandbox workers.",
    ),
    Setting(
        "CUDA_VISIBLE_DEVICES",
        "unset (all)",
        "The GPUs JAX may use; passed on to the sandbox workers.",
    ),
    Setting(
        "JAX_ENABLE_X64",
        "unset (false)",
        "JAX's 64-bit mode; passed on to the sandbox workers (the pages assume float32).",
    ),
)


def names() -> tuple[str, ...]:
    """The names of every setting, in table order."""
    return tuple(s.name for s in SETTINGS)


def markdown_table() -> str:
    """The settings as a Markdown table (what the README shows between its settings markers)."""
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for s in SETTINGS:
        default = s.default if s.default.startswith("`") else f"`{s.default}`"
        if s.default.startswith(("unset", "CPU cores")):
            default = s.default
        rows.append(f"| `{s.name}` | {default} | {s.meaning} |")
    return "\n".join(rows)


# --- parsing -------------------------------------------------------------------------------------


def _raw(name: str, environ: Mapping[str, str] | None) -> str:
    return (os.environ if environ is None else environ).get(name, "").strip()


def flag(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """A yes/no setting: ``1``, ``true``, ``yes`` or ``on`` (any case) mean yes."""
    return _raw(name, environ).lower() in ("1", "true", "yes", "on")


def positive_int(name: str, default: int, environ: Mapping[str, str] | None = None) -> int:
    """A whole number above zero; a missing, malformed or non-positive value gives ``default``."""
    try:
        value = int(_raw(name, environ) or default)
    except ValueError:
        return default
    return value if value > 0 else default


def clamped_int(
    name: str,
    default: int,
    low: int,
    high: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """A whole number moved into ``low..high``; a missing or malformed value gives ``default``."""
    try:
        value = int(_raw(name, environ) or default)
    except ValueError:
        return default
    value = max(low, value)
    return value if high is None else min(high, value)


def positive_float(name: str, default: float, environ: Mapping[str, str] | None = None) -> float:
    """A number above zero; a missing, malformed or non-positive value gives ``default``."""
    try:
        value = float(_raw(name, environ) or default)
    except ValueError:
        return default
    return value if value > 0 else default


def choice(name: str, options: tuple[str, ...], environ: Mapping[str, str] | None = None) -> str:
    """One of ``options`` (the first is the default; anything else falls back to it)."""
    value = _raw(name, environ).lower()
    return value if value in options else options[0]


# --- one reader per setting -----------------------------------------------------------------------


def public_mode(environ: Mapping[str, str] | None = None) -> bool:
    """``JAXPLAY_PUBLIC``: whether this server is one that others reach."""
    return flag("JAXPLAY_PUBLIC", environ)


def sandbox_mode(environ: Mapping[str, str] | None = None) -> str:
    """``JAXPLAY_SANDBOX``: ``auto``, ``bwrap`` or ``process``."""
    return choice("JAXPLAY_SANDBOX", SANDBOX_MODES, environ)


def forkserver_mode(environ: Mapping[str, str] | None = None) -> str:
    """``JAXPLAY_FORKSERVER``: ``auto``, ``on`` or ``off``."""
    return choice("JAXPLAY_FORKSERVER", FORKSERVER_MODES, environ)


def runner_spares(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_RUNNER_SPARES``: workers kept warm (0 or more)."""
    return clamped_int("JAXPLAY_RUNNER_SPARES", DEFAULT_SPARES, 0, environ=environ)


def runner_concurrency(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_RUNNER_CONCURRENCY``: runs at once (at least 1; default: the cores this process
    may run on, its share of a room's)."""
    cores = len(usable_cores())
    return clamped_int("JAXPLAY_RUNNER_CONCURRENCY", cores, 1, environ=environ)


def run_queue(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_RUN_QUEUE``: runs that may wait for a worker, server-wide (at least 1)."""
    return clamped_int("JAXPLAY_RUN_QUEUE", DEFAULT_RUN_QUEUE, 1, environ=environ)


def run_timeout_s(environ: Mapping[str, str] | None = None) -> float:
    """``JAXPLAY_RUN_TIMEOUT_S``: wall-clock seconds of one run."""
    return positive_float("JAXPLAY_RUN_TIMEOUT_S", DEFAULT_RUN_TIMEOUT_S, environ)


def run_cpu_s(environ: Mapping[str, str] | None = None) -> float:
    """``JAXPLAY_RUN_CPU_S``: CPU seconds of one run."""
    return positive_float("JAXPLAY_RUN_CPU_S", DEFAULT_RUN_CPU_S, environ)


def run_memory_mb(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_RUN_MEMORY_MB``: memory one run may add (at least :data:`MIN_RUN_MEMORY_MB`)."""
    return clamped_int(
        "JAXPLAY_RUN_MEMORY_MB", DEFAULT_RUN_MEMORY_MB, MIN_RUN_MEMORY_MB, environ=environ
    )


def runs_per_minute(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_RUNS_PER_MINUTE``: Code Lab runs a visitor may start a minute (public mode)."""
    return positive_int("JAXPLAY_RUNS_PER_MINUTE", DEFAULT_RUNS_PER_MINUTE, environ)


def server_benchmarks_per_minute(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_SERVER_BENCHMARKS_PER_MINUTE``: measurements the server starts a minute."""
    return positive_int(
        "JAXPLAY_SERVER_BENCHMARKS_PER_MINUTE", DEFAULT_SERVER_BENCHMARKS_PER_MINUTE, environ
    )


def benchmarks_per_minute(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_BENCHMARKS_PER_MINUTE``: measurements a visitor may start a minute (public)."""
    return positive_int("JAXPLAY_BENCHMARKS_PER_MINUTE", DEFAULT_BENCHMARKS_PER_MINUTE, environ)


def visitor_key(environ: Mapping[str, str] | None = None) -> str:
    """``JAXPLAY_VISITOR_KEY``: ``address`` or ``session``."""
    return choice("JAXPLAY_VISITOR_KEY", VISITOR_KEYS, environ)


def trusted_proxy(environ: Mapping[str, str] | None = None) -> bool:
    """``JAXPLAY_TRUSTED_PROXY``: whether ``X-Forwarded-For`` comes from our own proxy."""
    return flag("JAXPLAY_TRUSTED_PROXY", environ)


def check_claims(environ: Mapping[str, str] | None = None) -> bool:
    """``JAXPLAY_CHECK_CLAIMS``: check the pages' claims at start-up (on unless set off)."""
    raw = _raw("JAXPLAY_CHECK_CLAIMS", environ).lower()
    return raw not in ("0", "false", "no", "off")


def cpu_devices(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_CPU_DEVICES``: simulated CPU devices, moved into 1..:data:`MAX_CPU_DEVICES`."""
    return clamped_int(
        "JAXPLAY_CPU_DEVICES", DEFAULT_CPU_DEVICES, 1, MAX_CPU_DEVICES, environ=environ
    )


def passed_to_workers(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The :data:`PASSED_TO_WORKERS` variables the server has, to hand on to every worker."""
    env = os.environ if environ is None else environ
    return {name: env[name] for name in PASSED_TO_WORKERS if name in env}


def snippet_db(environ: Mapping[str, str] | None = None) -> str:
    """``JAXPLAY_SNIPPET_DB``: a SQLite file or a ``postgresql://`` URL (empty: the default)."""
    return _raw("JAXPLAY_SNIPPET_DB", environ)


def measure_lock(environ: Mapping[str, str] | None = None) -> str:
    """``JAXPLAY_MEASURE_LOCK``: the host-wide measurement lock file (empty: none)."""
    return _raw("JAXPLAY_MEASURE_LOCK", environ)


def measure_in(environ: Mapping[str, str] | None = None) -> str:
    """``JAXPLAY_MEASURE_IN``: ``worker`` or ``server``."""
    return choice("JAXPLAY_MEASURE_IN", MEASURE_IN_MODES, environ)


def measure_scale(environ: Mapping[str, str] | None = None) -> float:
    """``JAXPLAY_MEASURE_SCALE``: the sampling budgets' multiplier, at most
    :data:`MAX_MEASURE_SCALE` (a missing, malformed or non-positive value gives 1)."""
    scale = positive_float("JAXPLAY_MEASURE_SCALE", DEFAULT_MEASURE_SCALE, environ)
    return min(scale, MAX_MEASURE_SCALE)


def cpus(environ: Mapping[str, str] | None = None) -> frozenset[int] | None:
    """``JAXPLAY_CPUS``: the cores to run on (``0-3,8``), or ``None`` when unset or malformed
    (every core the process may use)."""
    raw = _raw("JAXPLAY_CPUS", environ)
    found: set[int] = set()
    try:
        for part in filter(None, (p.strip() for p in raw.split(","))):
            low, _, high = part.partition("-")
            first, last = int(low), int(high or low)
            if not 0 <= first <= last < 4096:
                return None
            found.update(range(first, last + 1))
    except ValueError:
        return None
    return frozenset(found) or None


def cpu_list(cores: Iterable[int]) -> str:
    """Cores as ``JAXPLAY_CPUS`` and the kernel write them: ``0-3,8``."""
    ordered = sorted(set(cores))
    runs: list[list[int]] = []
    for n in ordered:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def default_measure_lock() -> str:
    """Where a room's processes share their measurement locks unless told: one set per user on
    this machine (every room of the user takes turns on the cores they share)."""
    return str(Path.home() / ".local" / "share" / "jaxplay" / "measure.lock")


def warm_up(environ: Mapping[str, str] | None = None) -> str:
    """``JAXPLAY_WARM_UP``: ``auto`` (also when unset), ``on``, ``off`` or page addresses
    (read by :func:`jaxplay.hosting.warm_up.pages_to_warm`)."""
    return _raw("JAXPLAY_WARM_UP", environ).lower() or "auto"


def result_db(environ: Mapping[str, str] | None = None) -> str:
    """``JAXPLAY_RESULT_DB``: a SQLite file or a ``postgresql://`` URL (empty: the default)."""
    return _raw("JAXPLAY_RESULT_DB", environ)


def shares_per_minute(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_SHARES_PER_MINUTE``: shares one visitor may make a minute, per instance."""
    return positive_int("JAXPLAY_SHARES_PER_MINUTE", DEFAULT_SHARES_PER_MINUTE, environ)


def snippets_per_hour(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_SNIPPETS_PER_HOUR``: new snippets the whole store accepts an hour."""
    return positive_int("JAXPLAY_SNIPPETS_PER_HOUR", DEFAULT_SNIPPETS_PER_HOUR, environ)


def snippet_store_mb(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_SNIPPET_STORE_MB``: the total size of stored snippets, in MB."""
    return positive_int("JAXPLAY_SNIPPET_STORE_MB", DEFAULT_SNIPPET_STORE_MB, environ)


def visitor_snippets_per_hour(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_VISITOR_SNIPPETS_PER_HOUR``: new snippets one visitor may store an hour."""
    return positive_int(
        "JAXPLAY_VISITOR_SNIPPETS_PER_HOUR", DEFAULT_VISITOR_SNIPPETS_PER_HOUR, environ
    )


def visitor_snippet_mb(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_VISITOR_SNIPPET_MB``: the size of one visitor's stored snippets, in MB."""
    return positive_int("JAXPLAY_VISITOR_SNIPPET_MB", DEFAULT_VISITOR_SNIPPET_MB, environ)


def snippet_expiry_days(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_SNIPPET_EXPIRY_DAYS``: days after which an unopened snippet is deleted."""
    return positive_int("JAXPLAY_SNIPPET_EXPIRY_DAYS", DEFAULT_SNIPPET_EXPIRY_DAYS, environ)


def snippet_db_pool(environ: Mapping[str, str] | None = None) -> int:
    """``JAXPLAY_SNIPPET_DB_POOL``: PostgreSQL connections one instance opens at most."""
    return positive_int("JAXPLAY_SNIPPET_DB_POOL", DEFAULT_SNIPPET_DB_POOL, environ)
