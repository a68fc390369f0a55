"""The guard over Streamlit's client messages: a public server ignores the ones that change
shared state (the rule and the list of messages are in :mod:`jaxplay.hosting.protocol`).

Streamlit dispatches every ``BackMsg`` a browser sends in ``AppSession.handle_backmsg``, with no
check of who may send which: any client can send ``clear_cache`` and empty every visitor's
caches. :func:`install` wraps that one method, once per process (``app.py`` calls it on every
run; the second call finds the wrapper and returns). The wrapper asks the rule at each message,
so the guard follows ``JAXPLAY_PUBLIC`` as the rest of public mode does. A rerun's widget
values are checked in every mode, and a refused value is dropped from the rerun
(:func:`jaxplay.hosting.protocol.drop_refused`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from jaxplay.hosting import protocol
from jaxplay.hosting.ratelimit import RateLimiter

log = logging.getLogger(__name__)
_lock = threading.Lock()
#: Widget key -> the most labels its choice takes (``max_selections``), as the pages declare it
#: (:func:`most_chosen`): the guard keeps a client's longer choice to it.
_MOST_CHOSEN: dict[str, int] = {}


def most_chosen(key: str, most: int) -> int:
    """Record that the choice widget ``key`` takes at most ``most`` labels; returns ``most`` (for
    the widget's ``max_selections``). Streamlit raises on a longer choice sent as a widget value
    (one sent in a link it cuts), so the guard cuts it first."""
    _MOST_CHOSEN[key] = most
    return most


def _operation(msg: Any) -> str | None:
    if msg.WhichOneof("type") != "backend_operation_request":
        return None
    return msg.backend_operation_request.WhichOneof("payload")


def _decoders() -> dict[type, str]:
    """Streamlit's decoders of a widget's JSON text -> the kind of text
    (:data:`jaxplay.hosting.protocol.DECODED_TEXTS`)."""
    from streamlit.elements.plotly_chart import PlotlyChartSelectionSerde
    from streamlit.elements.widgets.data_editor import DataEditorSerde

    return {DataEditorSerde: "data editor's edits", PlotlyChartSelectionSerde: "chart selection"}


def _registered(session: Any) -> tuple[dict[str, str], dict[str, str], dict[str, frozenset[str]]]:
    """The session's widgets, by id: the value field each was registered with, the kind of JSON
    text of those whose text Streamlit decodes (Streamlit's own record; empty where this
    Streamlit keeps it elsewhere: pinned below 1.68), and the labels each choice widget offers
    (its decoder's ``formatted_options``: a selectbox, radio, multiselect, pills or segmented
    control; no page lets a visitor add an option, ``accept_new_options``)."""
    decoders = _decoders()
    try:
        metadata = session._session_state._new_widget_state.widget_metadata
        kinds = {wid: meta.value_type for wid, meta in metadata.items()}
        serdes = {
            wid: getattr(meta.deserializer, "__self__", None) for wid, meta in metadata.items()
        }
        decoded = {wid: decoders[type(s)] for wid, s in serdes.items() if type(s) in decoders}
        offered = {
            wid: frozenset(labels)
            for wid, s in serdes.items()
            if isinstance(labels := getattr(s, "formatted_options", None), list)
        }
    except AttributeError:
        return {}, {}, {}
    return kinds, decoded, offered


def _integer_box_overflow_is_invalid() -> None:
    """Make an integer number box's ``inf`` from a link an invalid value, as its ``nan`` is.

    Streamlit reads a bound box's link value with ``float()``, then ``int()``, and ignores the
    link's value where that raises ``ValueError``; ``int(inf)`` raises ``OverflowError``, so
    ``?jit_rows=inf`` (or ``1e309``, or five thousand nines) was an error page for everyone who
    opened the link. As a ``ValueError`` Streamlit shows the page with the default, and the
    app's note says that part of the link was ignored.
    """
    from streamlit.elements.widgets.number_input import NumberInputSerde

    original = NumberInputSerde.deserialize
    if getattr(original, "_jaxplay_guard", False):
        return

    def deserialize(self: NumberInputSerde, ui_value: Any) -> Any:
        try:
            return original(self, ui_value)
        except OverflowError as err:
            raise ValueError(f"no integer box holds {ui_value!r}") from err

    deserialize._jaxplay_guard = True  # type: ignore[attr-defined]
    NumberInputSerde.deserialize = deserialize  # type: ignore[method-assign]


#: The guard's warnings, per session: a few, then none for a while (150,000 refused messages
#: wrote 15 MB of the same line).
_WARNINGS = RateLimiter(5, 60.0)


def _warn(session: str, message: str, *args: Any) -> None:
    if _WARNINGS.try_acquire(session) == 0:
        log.warning(message, *args)


def _uploads_are_dropped() -> None:
    """Drop a file PUT to Streamlit's upload route instead of keeping it: no page takes a file,
    and the route takes one for any session that asks (three of 150 MB held 452 MB after the
    socket closed; ``server.maxUploadSize`` now bounds each at 1 MB, and nothing is kept)."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    if getattr(MemoryUploadedFileManager.add_file, "_jaxplay_guard", False):
        return

    def add_file(self: MemoryUploadedFileManager, session_id: str, file: Any) -> None:
        return None

    add_file._jaxplay_guard = True  # type: ignore[attr-defined]
    MemoryUploadedFileManager.add_file = add_file  # type: ignore[method-assign]


def install() -> None:
    """Wrap ``AppSession.handle_backmsg`` with the public-mode refusal (a no-op after once), make
    an integer box's infinite link value an invalid one, and drop uploaded files."""
    from streamlit.runtime.app_session import AppSession

    with _lock:
        _integer_box_overflow_is_invalid()
        _uploads_are_dropped()
        original = AppSession.handle_backmsg
        if getattr(original, "_jaxplay_guard", False):
            return

        reruns, messages = protocol.session_budgets()

        def handle_backmsg(self: AppSession, msg: Any) -> None:
            try:
                msg_type, operation = msg.WhichOneof("type"), _operation(msg)
            except Exception:
                return original(self, msg)
            session = str(getattr(self, "id", ""))
            over = messages.try_acquire(session) > 0 or (
                msg_type == "rerun_script" and reruns.try_acquire(session) > 0
            )
            reason = (
                f"more than its session's budget ({protocol.MESSAGES_PER_SECOND} messages, "
                f"{protocol.RERUNS_PER_SECOND} reruns a second)"
                if over
                else protocol.refusal(msg_type, operation)
            )
            if reason is None and operation is not None:
                reason = protocol.operation_refusal(msg.backend_operation_request)
            if reason is not None:
                _warn(session, "ignored a client's %s message: %s", msg_type, reason)
                return None
            if msg_type == "rerun_script":
                rerun = msg.rerun_script
                why_not = protocol.query_refusal(rerun.query_string)
                if why_not is not None:
                    _warn(session, "dropped the address of a client's rerun: %s", why_not)
                    rerun.query_string = ""
                for why in protocol.trim_rerun(rerun):
                    _warn(session, "dropped a field of a client's rerun: %s", why)
                kinds, decoded, offered = _registered(self)
                for why in protocol.drop_refused(
                    rerun.widget_states.widgets, _MOST_CHOSEN, kinds, decoded, offered
                ):
                    _warn(session, "dropped a widget value of a client's rerun: %s", why)
            return original(self, msg)

        handle_backmsg._jaxplay_guard = True  # type: ignore[attr-defined]
        handle_backmsg._jaxplay_original = original  # type: ignore[attr-defined]
        AppSession.handle_backmsg = handle_backmsg  # type: ignore[method-assign]
