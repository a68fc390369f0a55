"""The worker-result codec: dataclasses and arrays as JSON, strictly decoded."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from jaxplay.core import codec


@dataclass(frozen=True)
class Point:
    x: float
    label: str


@dataclass(frozen=True)
class Curve:
    xs: np.ndarray
    points: tuple[Point, ...]
    total: int


def test_round_trip_through_json_text() -> None:
    curve = Curve(np.array([0.0, np.nan, 2.5]), (Point(1.0, "a"), Point(2.0, "b")), 2)
    back = codec.decode(json.loads(json.dumps(codec.encode(curve))), (Curve, Point))
    assert isinstance(back, Curve) and back.points == curve.points and back.total == 2
    np.testing.assert_array_equal(back.xs, curve.xs)
    ints = codec.decode(codec.encode(np.arange(6, dtype=np.int32).reshape(2, 3)), ())
    assert ints.dtype == np.int32 and ints.shape == (2, 3)


def test_only_the_named_dataclasses_are_accepted() -> None:
    data = codec.encode(Point(1.0, "a"))
    with pytest.raises(ValueError, match="not a result"):
        codec.decode(data, (Curve,))
    with pytest.raises(ValueError, match="fields do not match"):
        codec.decode({**data, "extra": 1}, (Point,))


def test_malformed_arrays_are_refused() -> None:
    with pytest.raises(ValueError, match="not accepted"):
        codec.decode({"__ndarray__": [1], "dtype": "object", "shape": [1]}, ())
    with pytest.raises(ValueError, match="match its shape"):
        codec.decode({"__ndarray__": [1, 2, 3], "dtype": "float64", "shape": [2]}, ())


@dataclass(frozen=True)
class Typed:
    name: str
    lines: tuple[int | None, ...]
    scale: float
    inner: Point | None = None


def test_every_field_must_hold_its_declared_type() -> None:
    good = Typed("a", (1, None), 2, Point(1.0, "b"))
    assert codec.decode(json.loads(json.dumps(codec.encode(good))), (Typed, Point)) == good
    for field, value in [
        ("name", 3),
        ("lines", {"__tuple__": ["one"]}),
        ("lines", [1, 2]),
        ("scale", True),
        ("inner", {**codec.encode(Typed("x", (), 1.0)), "__dataclass__": "Typed"}),
    ]:
        with pytest.raises(ValueError, match=field):
            codec.decode({**codec.encode(good), field: value}, (Typed, Point))


def test_a_float_field_refuses_an_integer_too_large_for_a_float() -> None:
    """JSON integers have no size limit; a forged 400-digit one raised OverflowError later."""
    with pytest.raises(ValueError, match="Point.x is not a float"):
        codec.decode({"__dataclass__": "Point", "x": 10**400, "label": "a"}, (Point,))


def test_a_timings_samples_are_bounded_before_they_are_decoded() -> None:
    """A measurement takes at most 200 samples; a forged million cost seconds to decode."""
    from jaxplay.core import timing

    def timing_of(n: int) -> dict:
        return codec.encode(timing.Timing(tuple(1e-3 for _ in range(n)), 1, 1))

    assert len(codec.decode(timing_of(200), (timing.Timing,)).samples) == 200
    with pytest.raises(ValueError, match=r"Timing.samples holds 10,001 items \(at most 10,000\)"):
        codec.decode(timing_of(timing.MAX_SAMPLES + 1), (timing.Timing,))


def test_a_fields_json_kind_is_checked_before_it_is_decoded() -> None:
    """390,000 ``[[]]`` where a string belongs cost a second to decode before its type was
    checked; now refused on sight."""
    data = codec.encode(Point(1.0, "a"))
    data["label"] = [[[]]] * 390_000
    called = []
    original = codec._decode

    def counting(*args: object) -> object:
        called.append(1)
        return original(*args)  # type: ignore[arg-type]

    codec._decode = counting  # type: ignore[assignment]
    try:
        with pytest.raises(ValueError, match="Point.label is not a str"):
            codec.decode(data, (Point,))
    finally:
        codec._decode = original  # type: ignore[assignment]
    assert len(called) == 1  # the dataclass itself, none of its fields
    assert codec.decode(codec.encode(Curve(np.zeros(3), (Point(1.0, "a"),), 2)), (Curve, Point))


def test_a_decode_is_held_to_its_most_values() -> None:
    many = codec.encode([[1.0, 2.0]] * 1_000)
    assert len(codec.decode(many, (), most_values=5_000)) == 1_000
    with pytest.raises(ValueError, match="more than 1,000 values"):
        codec.decode(many, (), most_values=1_000)
    # An array counts once, whatever its size.
    assert codec.decode(codec.encode(np.zeros(100_000)), (), most_values=2).shape == (100_000,)
