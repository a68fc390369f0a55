"""Pitfalls of randomness in JAX: reused keys, the article's layer under ``@jit @vmap``, lost keys.

Why: a key used twice repeats its numbers (JAX's key-reuse checker catches it, run here in the
sandbox), the article's ``stochastic_layer`` maps its parameters too, and a training loop that
drops the returned key draws the same dropout mask at every step. Each is run for real.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import jax.random as jrandom
import numpy as np
from jax import jit, vmap

from jaxplay import sandbox
from jaxplay.article import stochastic_layer


@dataclass(frozen=True)
class ReuseDemo:
    """Two draws with one key (identical) and a draw with each half of a split (different)."""

    first: np.ndarray
    again: np.ndarray
    split_a: np.ndarray
    split_b: np.ndarray

    @property
    def identical(self) -> bool:
        return bool(np.array_equal(self.first, self.again))


def reuse_demo(seed: int, n: int = 5) -> ReuseDemo:
    """``normal(key)`` twice vs ``normal`` on each key of ``split(key)``."""
    key = jrandom.key(seed)
    first = jrandom.normal(key, (n,))
    again = jrandom.normal(key, (n,))  # the same key again: the same numbers
    a, b = jrandom.split(key)
    return ReuseDemo(
        np.asarray(first),
        np.asarray(again),
        np.asarray(jrandom.normal(a, (n,))),
        np.asarray(jrandom.normal(b, (n,))),
    )


def key_reuse_source(seed: int) -> str:
    """A program that reuses a key with JAX's key-reuse checker on (run it in the sandbox)."""
    return (
        "import jax\n"
        'jax.config.update("jax_debug_key_reuse", True)\n'
        "\n"
        f"key = jax.random.key({int(seed)})\n"
        "a = jax.random.normal(key, (3,))\n"
        'print("first draw:", a)\n'
        "b = jax.random.normal(key, (3,))  # the same key again\n"
        'print("second draw:", b)\n'
    )


#: The line of :func:`key_reuse_source` the checker stops at (the second draw).
KEY_REUSE_LINE = 7


@dataclass(frozen=True)
class CheckerOutcome:
    """What the key-reuse checker did with :func:`key_reuse_source`.

    Attributes:
        raised: whether the program stopped with an error.
        exc_type: the exception's type name (``KeyReuseError``), if it raised.
        message: the first line of its message.
        line: the program's line that raised, when known.
        stdout: what the program printed before it stopped.
        where: ``"sandbox"`` or ``"in-process"``.
    """

    raised: bool
    exc_type: str | None
    message: str | None
    line: int | None
    stdout: str
    where: str


def check_key_reuse_in_process(seed: int) -> CheckerOutcome:
    """The checker on the same program as :func:`key_reuse_source`, run in this process.

    Uses the thread-local ``jax.debug_key_reuse(True)`` context, so no other thread's setting
    changes. Tests use it to prove the checker fires without a sandbox.
    """
    printed = []
    with jax.debug_key_reuse(True):
        key = jrandom.key(seed)
        printed.append(f"first draw: {jrandom.normal(key, (3,))}")
        try:
            jrandom.normal(key, (3,))
        except Exception as err:  # KeyReuseError lives in jax.errors; report any type honestly
            msg = str(err).splitlines()[0]
            return CheckerOutcome(
                True, type(err).__name__, msg, KEY_REUSE_LINE, "\n".join(printed), "in-process"
            )
    return CheckerOutcome(False, None, None, None, "\n".join(printed), "in-process")


def check_key_reuse_sandboxed(
    seed: int,
    timeout_s: float = 30.0,
    visitor: str | None = None,
    on_queue: Callable[[int], None] | None = None,
) -> CheckerOutcome:
    """Run :func:`key_reuse_source` in the sandboxed runner, as a visitor's own code would run.

    The checker is a process-wide flag there (``jax.config.update``) in a single-use worker, so
    nothing leaks into the server. If the runner cannot run it (a public server without
    bubblewrap refuses all code, a timeout on an overloaded machine), the same program runs
    in-process under the thread-local :func:`check_key_reuse_in_process` and ``where`` says why.
    """
    result = sandbox.run_code(
        key_reuse_source(seed), timeout_s=timeout_s, visitor=visitor, on_queue=on_queue
    )
    err = result.error
    if result.ok:
        return CheckerOutcome(False, None, None, None, result.stdout, "sandbox")
    if err is not None and err.kind == "exception":
        message = err.message.splitlines()[0] if err.message else ""
        return CheckerOutcome(True, err.exc_type, message, err.line, result.stdout, "sandbox")
    fallback = check_key_reuse_in_process(seed)
    why = f"{err.kind}: {err.message}" if err is not None else "no result"
    return CheckerOutcome(
        fallback.raised,
        fallback.exc_type,
        fallback.message,
        fallback.line,
        fallback.stdout,
        f"in-process, because the sandbox did not run it ({why})",
    )


def _sample4(key: jax.Array) -> jax.Array:
    return jrandom.normal(key, (4,))


@dataclass(frozen=True)
class TransformAgreement:
    """``normal(key, (4,))`` for a few keys computed eagerly, under jit, vmap and jit(vmap)."""

    results: dict[str, np.ndarray]

    @property
    def max_abs_difference(self) -> float:
        base = self.results["eager"]
        return float(max(np.max(np.abs(v - base)) for v in self.results.values()))


def transform_agreement(seed: int, n_keys: int = 3) -> TransformAgreement:
    """The same keys give the same numbers whatever transform wraps the sampler."""
    keys = jrandom.split(jrandom.key(seed), n_keys)
    jitted = jit(_sample4)
    results = {
        "eager": np.stack([np.asarray(_sample4(k)) for k in keys]),
        "jit": np.stack([np.asarray(jitted(k)) for k in keys]),
        "vmap": np.asarray(vmap(_sample4)(keys)),
        "jit(vmap)": np.asarray(jit(vmap(_sample4))(keys)),
    }
    return TransformAgreement(results)


@jit
@partial(vmap, in_axes=(None, 0, 0))
def stochastic_layer_fixed(params, x, key):
    """Per-sample noise and inputs; the parameters are shared (not mapped)."""
    W, b = params
    noise = jrandom.normal(key, b.shape) * 0.1
    return jnp.dot(W, x) + b + noise


@dataclass(frozen=True)
class LayerRun:
    """One call of a stochastic layer: the output shape, or the error it raised."""

    name: str
    shape: tuple[int, ...] | None
    error_type: str | None
    error: str | None
    output: np.ndarray | None


def stochastic_layer_runs(
    batch: int, n_in: int = 3, n_out: int = 4, seed: int = 0
) -> tuple[LayerRun, LayerRun]:
    """Call the article's ``stochastic_layer`` and the fixed one on a batch.

    The article's ``@vmap`` maps every argument over axis 0, the parameters too: with
    ``batch != n_out`` it fails (inconsistent mapped sizes); with ``batch == n_out`` it silently
    pairs example i with row i of W and gives shape (batch,) instead of (batch, n_out).
    """
    if not 1 <= batch <= 64 or not 1 <= n_in <= 64 or not 1 <= n_out <= 64:
        raise ValueError("batch, n_in and n_out must lie in 1..64")
    kw, kb, kx, kn = jrandom.split(jrandom.PRNGKey(seed), 4)
    params = (jrandom.normal(kw, (n_out, n_in)), jrandom.normal(kb, (n_out,)))
    xs = jrandom.normal(kx, (batch, n_in))
    keys = jrandom.split(kn, batch)
    runs = []
    for name, layer in (
        ("as written", stochastic_layer),
        ("in_axes=(None, 0, 0)", stochastic_layer_fixed),
    ):
        try:
            out = np.asarray(layer(params, xs, keys))
        except (ValueError, TypeError) as err:
            runs.append(LayerRun(name, None, type(err).__name__, str(err).strip(), None))
        else:
            runs.append(LayerRun(name, tuple(out.shape), None, None, out))
    return runs[0], runs[1]


# A tiny regression with dropout on the inputs: enough to show what the key does in training.
_N_EXAMPLES, _N_FEATURES, _KEEP, _LR = 64, 8, 0.5, 0.1


def dropout_loss(w: jax.Array, batch: tuple[jax.Array, jax.Array], key: jax.Array) -> jax.Array:
    """Squared error with inverted dropout on the inputs, the dropout mask drawn from ``key``."""
    X, y = batch
    mask = jrandom.bernoulli(key, _KEEP, X.shape)
    return jnp.mean((jnp.where(mask, X / _KEEP, 0.0) @ w - y) ** 2)


@jit
def training_step(w, batch, key):
    """The article's pattern: split, use the subkey, return the new key with the parameters."""
    key, subkey = jrandom.split(key)
    grads = jax.grad(dropout_loss)(w, batch, subkey)
    return w - _LR * grads, key, subkey


def train_threading_key(w, batch, key, steps):
    """Correct: the key returned by each step is the one the next step splits."""
    history = []
    for _ in range(steps):
        w, key, subkey = training_step(w, batch, key)
        history.append((w, subkey))
    return history


def train_dropping_key(w, batch, key, steps):
    """The bug: the returned key is thrown away, so every step splits the same key."""
    history = []
    for _ in range(steps):
        w, _, subkey = training_step(w, batch, key)
        history.append((w, subkey))
    return history


@dataclass(frozen=True)
class TrainingRun:
    """One training run: the dropout loss each step optimised, and the randomness it used.

    Attributes:
        name: ``"key threaded"`` or ``"key dropped"``.
        losses: per step, the dropout loss of the weights the step started from, under the
            step's own mask (what the step's gradient descended).
        masks: per step, the dropout mask (steps, examples, features); True keeps an input.
        subkeys: per step, the subkey's words.
    """

    name: str
    losses: np.ndarray
    masks: np.ndarray
    subkeys: np.ndarray

    @property
    def mean_jump(self) -> float:
        """The mean absolute change of the loss from one step to the next."""
        return (
            float(np.mean(np.abs(np.diff(np.asarray(self.losses)))))
            if len(self.losses) > 1
            else 0.0
        )

    @property
    def unique_subkeys(self) -> int:
        return len({tuple(r) for r in self.subkeys})

    @property
    def unique_masks(self) -> int:
        """Distinct masks over all examples (a step's whole mask)."""
        return len({m.tobytes() for m in self.masks})

    @property
    def unique_example_masks(self) -> int:
        """Distinct masks of example 0 alone, what the figure draws (it has fewer possible
        masks than the batch: 2⁸ for 8 inputs)."""
        return len({np.asarray(m)[0].tobytes() for m in self.masks})


def training_runs(seed: int, steps: int = 60) -> tuple[TrainingRun, TrainingRun]:
    """Train the same model from the same key with the key threaded and with the key dropped.

    With the key dropped every step splits the same key, so every step draws the same dropout
    mask: the "random" regulariser is one fixed corruption of the data, and the model fits that
    instead of dropout's average over masks.
    """
    if not 1 <= steps <= 500:
        raise ValueError(f"Train for 1..500 steps, not {steps}.")
    kx, kw, key = jrandom.split(jrandom.key(seed), 3)
    X = jrandom.normal(kx, (_N_EXAMPLES, _N_FEATURES))
    y = X @ jrandom.normal(kw, (_N_FEATURES,))
    runs = []
    for name, loop in (("key threaded", train_threading_key), ("key dropped", train_dropping_key)):
        history = loop(jnp.zeros(_N_FEATURES), (X, y), key, steps)
        starts = jnp.stack([jnp.zeros(_N_FEATURES)] + [w for w, _ in history[:-1]])
        subkeys = jnp.stack([k for _, k in history])
        losses = vmap(dropout_loss, in_axes=(0, None, 0))(starts, (X, y), subkeys)
        masks = vmap(lambda k: jrandom.bernoulli(k, _KEEP, X.shape))(subkeys)
        runs.append(
            TrainingRun(
                name,
                np.asarray(losses),
                np.asarray(masks),
                np.asarray(jrandom.key_data(subkeys)),
            )
        )
    return runs[0], runs[1]
