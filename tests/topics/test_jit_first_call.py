"""What the first call of a fresh executable includes, measured, and the sentence about it."""

from __future__ import annotations

import jax.numpy as jnp

from jaxplay import jit
from jaxplay.jit import _first_call
from jaxplay.jit._first_call import CallSplit


def test_fresh_executables_are_called_twice_and_python_calls_are_counted() -> None:
    x = jnp.ones((8, 4))
    anatomy = _first_call.first_call_anatomy(jit.naive_softmax, x, executables=2)
    assert len(anatomy.first) == len(anatomy.second) == 2
    for call in (*anatomy.first, *anatomy.second):
        assert 0 < call.returned_s <= call.ready_s
    first, second = anatomy.python_calls
    # The first call of an executable goes through JAX's Python dispatch; the second does not.
    assert first > 10 * max(second, 1)
    assert anatomy.python_files and anatomy.python_files[0][0].startswith("jax/")


def _anatomy(first: tuple[float, float], second: tuple[float, float]) -> _first_call.FirstCall:
    return _first_call.FirstCall(
        first=(CallSplit(*first),) * 3,
        second=(CallSplit(*second),) * 3,
        python_calls=(112, 1),
        python_files=(("jax/_src/interpreters/pxla.py", 40),),
    )


def test_the_sentence_states_the_measured_split() -> None:
    host = jit.first_call_sentence(_anatomy((600e-6, 620e-6), (20e-6, 30e-6)), 2e-3, 25e-6)
    assert "first call took 2 ms and a steady call 25 µs (the page's measurement)" in host
    assert "a second measurement: 3 more executables" in host  # each number says where from
    assert "3 more executables" in host and "the first call took 620 µs, 600 µs of it" in host
    assert (
        "most of the fresh executables' first-call extra 590 µs (over their own second call) is "
        "spent on the host" in host
    )
    assert "**112 function calls**" in host and "`jax/_src/interpreters/pxla.py` (40)" in host
    assert "later calls skip JAX's Python dispatch path" in host


def test_the_sentence_follows_the_numbers_when_the_device_part_grows() -> None:
    device = jit.first_call_sentence(_anatomy((100e-6, 900e-6), (20e-6, 300e-6)), 1e-3, 3e-4)
    assert "comes after the call returned." in device
    same = jit.first_call_sentence(_anatomy((20e-6, 300e-6), (20e-6, 300e-6)), 3e-4, 3e-4)
    assert "costs no more than the second" in same


def test_a_result_ready_at_return_is_not_called_host_time() -> None:
    """On the CPU backend a call can run the whole program before returning (``is_ready()``
    true at return): the time before returning then holds the device's work too."""
    ready = _first_call.FirstCall(
        first=(CallSplit(600e-6, 620e-6, True),) * 3,
        second=(CallSplit(20e-6, 30e-6, True),) * 3,
        python_calls=(112, 1),
        python_files=(("jax/_src/interpreters/pxla.py", 40),),
    )
    text = jit.first_call_sentence(ready, 2e-3, 25e-6)
    assert "3 of the 3 first calls returned a result that was already ready" in text
    assert "cannot split host from device" in text and "not in the device" not in text
