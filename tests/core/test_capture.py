"""The one capture of printed output: each capture keeps only its own prints, debug prints too."""

from __future__ import annotations

import _thread
import threading
import time
import warnings

import jax
import jax.numpy as jnp

from jaxplay.core import capture


def test_run_records_the_value_the_output_and_the_warnings() -> None:
    def noisy(x):
        print("hello", x)
        warnings.warn("careful", UserWarning, stacklevel=1)
        return x + 1

    out = capture.run(noisy, 1)
    assert out.ok and out.value == "2" and out.stdout == "hello 1\n"
    assert out.warnings == ("UserWarning: careful",)
    assert "def noisy" in out.code and out.headline == "ran without an error"


def test_run_records_the_real_exception_and_the_line_it_came_from() -> None:
    def broken():
        return 1 / 0

    out = capture.run(broken, code="1 / 0")
    assert not out.ok and out.error_type == "ZeroDivisionError"
    assert out.message == "division by zero" and out.code == "1 / 0"
    assert out.raised_at == "return 1 / 0"
    assert out.detail == "division by zero (at `return 1 / 0`)"
    assert out.headline == "ZeroDivisionError: division by zero"


def test_run_waits_for_debug_prints_and_late_errors() -> None:
    f = jax.jit(lambda x: (jax.debug.print("x is {}", x), x * 2)[1])
    out = capture.run(f, jnp.float32(3.0))
    assert out.stdout == "x is 3.0\n" and out.value.startswith("Array(6.")


def _busy_debug_printer(tag: str):
    """A jitted function big enough that XLA may run it, and its debug print, on its own thread."""

    def f(x):
        y = jax.lax.fori_loop(0, 3, lambda i, y: jnp.tanh(y @ x), x)
        jax.debug.print(tag + " debug {}", y[0, 0])
        return y

    return jax.jit(f)


def test_concurrent_captures_keep_their_own_prints_and_leave_others_alone() -> None:
    """Two threads capture at once (plain and debug prints); a third prints all along.

    Each capture holds exactly its own lines, and none of the third thread's: with
    ``redirect_stdout`` (one global stdout) the captures would swap or swallow lines.
    """
    x = jnp.eye(1024) * 0.5  # large enough that XLA runs it (and its prints) on its threads
    start = threading.Barrier(3)
    stop = threading.Event()
    results: dict[str, capture.Outcome] = {}

    def visitor(tag: str) -> None:
        f = _busy_debug_printer(tag)
        f(x).block_until_ready()  # compiled outside the capture
        start.wait()

        def work() -> None:
            for i in range(3):
                print(f"{tag} plain {i}")
                f(x)

        results[tag] = capture.run(work)

    def bystander() -> None:
        start.wait()
        while not stop.is_set():
            print("bystander")
            time.sleep(0.001)

    threads = [threading.Thread(target=visitor, args=(t,)) for t in ("A", "B")]
    other = threading.Thread(target=bystander)
    for t in (*threads, other):
        t.start()
    for t in threads:
        t.join(120)
    stop.set()
    other.join(10)
    for tag, out in results.items():
        lines = out.stdout.splitlines()
        assert [line for line in lines if "plain" in line] == [f"{tag} plain {i}" for i in range(3)]
        assert sum(line.startswith(f"{tag} debug") for line in lines) == 3
        assert all(line.startswith(tag) for line in lines), lines
    assert set(results) == {"A", "B"}


def test_a_thread_python_did_not_start_writes_to_the_capture_that_owns_callbacks() -> None:
    """XLA runs large computations' callbacks on threads of its own: their prints are captured."""
    done = threading.Event()

    def xla_like_thread() -> None:
        print("from a callback thread")
        done.set()

    with capture.printed() as out:
        print("from the capturing thread")
        _thread.start_new_thread(xla_like_thread, ())
        assert done.wait(10)
    assert out.text == "from the capturing thread\nfrom a callback thread\n"


def test_prints_outside_any_capture_reach_the_real_stdout(capsys) -> None:
    with capture.printed() as out:
        thread = threading.Thread(target=print, args=("another visitor",))
        thread.start()
        thread.join()
    assert out.text == ""
    assert "another visitor" in capsys.readouterr().out
