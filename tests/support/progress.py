"""A measurement progress that keeps what it is told (a `jaxplay.core.measure_lock.Progress`)."""

from __future__ import annotations


class Told:
    """Who measures (``visitor``) and everything the measurement told them, in order."""

    def __init__(self, visitor: str | None = None) -> None:
        self.visitor = visitor
        self.told: list[tuple[str, object]] = []

    def stage(self, stage: str, fraction: float | None) -> None:
        self.told.append(("stage", stage))

    def queued(self, ahead: int) -> None:
        self.told.append(("queued", ahead))

    def throttled(self, wait_s: float) -> None:
        self.told.append(("throttled", wait_s))

    def of(self, kind: str) -> list[object]:
        """What it was told of one kind (``"queued"``, ``"throttled"``, ``"stage"``)."""
        return [value for told, value in self.told if told == kind]
