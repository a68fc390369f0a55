"""A visitor that speaks Streamlit's own websocket protocol: no browser, one socket.

What a browser tab does, at the level the server sees it: it loads the page (here: ``GET /``, for
the proxy's stickiness cookie), opens ``/_stcore/stream`` with the subprotocol ``streamlit``, and
for every run sends a ``BackMsg`` whose ``rerun_script`` is a ``ClientState`` (the page's name,
its query string, the widget values); the server answers with ``ForwardMsg``\\ s until
``script_finished``. A widget change is a rerun carrying that widget's value under the id the
page's delta gave it; a button press is a ``trigger_value``; a fragment with ``run_every``
announces itself with ``auto_rerun`` and the browser then asks for it on that interval
(``fragment_id``, ``is_auto_rerun``). A full run's first message clears those timers, as the
browser's does.

Used by the room's warm-up (``pages/_warm_up.py``: it opens every page's views before a
workshop), ``benchmarks/room_load.py`` (Locust drives many of these) and the tests of a room. It
lives beside the pages because it imports ``streamlit.proto``: ``jaxplay`` never imports
Streamlit. The client is synchronous (``websocket-client``); under Locust, gevent makes it
cooperative.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import websocket
from google.protobuf.message import DecodeError
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

FINISHED = ForwardMsg.ScriptFinishedStatus
#: Element types whose ``alert`` format means the page reported a failure.
_ALERT_ERROR = 1  # Alert.Format.ERROR


#: The largest message read from the server: twice the app's own cap on what it sends
#: (``server.maxMessageSize``, 8 MB); a larger one is a protocol error, not parsed.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: The most messages one run may send, and the most entries each of a run's lists keeps.
MAX_MESSAGES = 100_000
MAX_ITEMS = 10_000

#: Element type -> the field holding its text, for :attr:`Run.texts`.
_TEXT_FIELDS = {"markdown": "body", "code": "code_text", "alert": "body", "toast": "body"}


class ProtocolError(RuntimeError):
    """The server closed the socket, timed out, or answered something a page never should."""


@dataclass(frozen=True)
class Widget:
    """A widget as the page's delta described it: its id, its element type and the element."""

    id: str
    kind: str
    element: Any
    #: The fragment the widget was drawn in (``""``: the page's body): a change of it reruns
    #: that fragment alone, as the browser asks.
    fragment_id: str = ""

    @property
    def key(self) -> str:
        """The widget's ``key=`` (Streamlit's ids end ``-<key>``)."""
        return self.id.rsplit("-", 1)[-1]


@dataclass
class TabBar:
    """A tab bar bound to the address, as the page's deltas described it."""

    labels: list[str] = field(default_factory=list)
    default_index: int = 0
    default_label: str = ""

    @property
    def default(self) -> str:
        """The label of the tab open when the address names none."""
        if self.default_label or not self.labels:
            return self.default_label
        return self.labels[min(self.default_index, len(self.labels) - 1)]


@dataclass
class Run:
    """What one script run sent back."""

    seconds: float = 0.0
    status: str = ""
    widgets: dict[str, Widget] = field(default_factory=dict)
    #: ``fragment_id -> interval`` of the fragments that asked to be rerun on a timer.
    auto_reruns: dict[str, float] = field(default_factory=dict)
    #: Failures: exception boxes, a page not found, a script that did not compile, a status box
    #: that ended in "error".
    errors: list[str] = field(default_factory=list)
    #: Error alerts: how pages show a refusal, or the error the article's code raises as
    #: written (the Devices page's placement code on a machine without a GPU): the lesson, not a
    #: failure.
    alerts: list[str] = field(default_factory=list)
    #: Labels of the status boxes and expanders (a Code Lab run says how it went there).
    labels: list[str] = field(default_factory=list)
    #: The tab bars bound to the address: their query parameter -> their tabs' labels.
    tabs: dict[str, TabBar] = field(default_factory=dict)
    #: The bar the next tab belongs to (``None``: a bar not bound to the address).
    _bar: str | None = field(default=None, repr=False)
    #: The text of the markdown, code, alert and toast elements, in order.
    texts: list[str] = field(default_factory=list)
    query_string: str | None = None
    messages: int = 0


def _value(state: WidgetState, widget: Widget, value: object) -> None:
    """Put ``value`` into ``state`` the way the browser sends it for this widget."""
    kind, element = widget.kind, widget.element
    if kind == "number_input":
        if element.data_type == element.INT:
            state.int_value = int(value)  # type: ignore[call-overload]
        else:
            state.double_value = float(value)  # type: ignore[arg-type]
    elif kind == "checkbox":
        state.bool_value = bool(value)
    elif kind in ("text_input", "text_area", "selectbox", "radio"):  # a choice by its label
        state.string_value = str(value)
    elif kind == "slider":  # one value or a range's two, as a list
        items = list(value) if isinstance(value, list | tuple) else [value]
        if element.type == element.SELECT_SLIDER:  # the options' labels
            state.string_array_value.data.extend(str(item) for item in items)
        elif element.data_type in (element.INT, element.FLOAT):
            state.double_array_value.data.extend(float(item) for item in items)
        else:
            raise ValueError("no encoding for a date or time slider here")
    elif kind in ("multiselect", "button_group"):  # the chosen options' labels (pills too)
        items = list(value) if isinstance(value, list | tuple) else [value]
        state.string_array_value.data.extend(str(item) for item in items)
    elif kind == "button":
        state.trigger_value = True
    elif kind == "bidi_component":  # a custom component (the Code Lab's editor): its JSON state
        state.json_value = json.dumps(value)
    else:
        raise ValueError(f"no encoding for a {kind} widget here")


def _keep(items: list[str], item: str) -> None:
    """Append ``item`` unless ``items`` holds :data:`MAX_ITEMS` already (a run's lists are
    bounded whatever the server sends)."""
    if len(items) < MAX_ITEMS:
        items.append(item)


class Visitor:
    """One browser session: ``open`` a page, ``change`` a widget, ``click`` a button.

    Arguments:
        base_url: the room's address (``http://127.0.0.1:8501``).
        timeout_s: how long one run may take, from its message sent to its end (reruns the app
            asked for included), before it counts as failed; also the limit for connecting.
    """

    def __init__(self, base_url: str, timeout_s: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.cookie = ""
        self.session_id = ""
        self.page = ""
        self.query_string = ""
        #: The widgets of the page shown now, by key, and the values this visitor set.
        self.widgets: dict[str, Widget] = {}
        self.values: dict[str, object] = {}
        #: ``fragment_id -> (interval, next due time)`` of the timers a browser would hold.
        self.timers: dict[str, tuple[float, float]] = {}
        self._socket: websocket.WebSocket | None = None

    # --- the connection ----------------------------------------------------------------------

    def connect(self) -> None:
        """Load the page (for the proxy's cookie, once) and open the websocket.

        A reconnect sends the session id the server gave, as the browser does, so the session
        (its widget values, its caches) carries on where the server still holds it.
        """
        if not self.cookie:
            try:
                with urllib.request.urlopen(
                    self.base_url + "/", timeout=self.timeout_s
                ) as response:
                    cookies = response.headers.get_all("Set-Cookie") or []
            except OSError as error:  # refused, timed out, an HTTP error (a proxy's 503)
                raise ProtocolError(f"could not load {self.base_url}/: {error}") from error
            self.cookie = "; ".join(c.split(";", 1)[0] for c in cookies)
        # The subprotocol header carries [protocol, XSRF token, existing session id]; without
        # an Origin header the server checks no XSRF token (a placeholder keeps the positions).
        protocols = ["streamlit", "none"] + ([self.session_id] if self.session_id else [])
        headers = [f"Cookie: {self.cookie}"] if self.cookie else []
        ws_url = "ws" + self.base_url.removeprefix("http") + "/_stcore/stream"
        try:
            self._socket = websocket.create_connection(
                ws_url, subprotocols=protocols, header=headers, timeout=self.timeout_s
            )
        except (OSError, websocket.WebSocketException) as error:
            raise ProtocolError(f"could not open {ws_url}: {error}") from error

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def reconnect(self) -> None:
        self.close()
        self.connect()

    def send(self, message: BackMsg) -> None:
        """Send ``message`` as it is, waiting for nothing (a hostile client's message)."""
        if self._socket is None:
            self.connect()
        assert self._socket is not None
        try:
            self._socket.send_binary(message.SerializeToString())
        except (OSError, websocket.WebSocketException) as error:
            self.close()
            raise ProtocolError(f"the socket failed: {error}") from error

    # --- runs --------------------------------------------------------------------------------

    def open(self, page: str, query_string: str = "") -> Run:
        """Open ``page`` (its address, ``jit``) as the navigation does: no widget values."""
        self.page, self.query_string = page, query_string
        self.values = {}
        return self._rerun()

    def change(self, key: str, value: object, whole: bool = False) -> Run:
        """Set the widget ``key`` of the page shown now to ``value`` and rerun the page (or, for
        a widget in a fragment, that fragment, as the browser does; ``whole``: the page anyway,
        as before fragments, for a benchmark to compare)."""
        if key not in self.widgets:
            raise ProtocolError(f"no widget {key!r} on {self.page!r}")
        self.values[key] = value
        fragment = None if whole else self.widgets[key].fragment_id or None
        return self._rerun(fragment_id=fragment, auto=False)

    def click(self, key: str) -> Run:
        """Press the button ``key`` (a trigger: it is true for this one run only)."""
        if key not in self.widgets:
            raise ProtocolError(f"no button {key!r} on {self.page!r}")
        fragment = self.widgets[key].fragment_id or None
        return self._rerun(trigger=key, fragment_id=fragment, auto=False)

    def due(self, now: float | None = None) -> str | None:
        """A fragment whose timer is due now, or ``None``."""
        now = time.monotonic() if now is None else now
        for fragment_id, (_, at) in self.timers.items():
            if at <= now:
                return fragment_id
        return None

    def next_timer(self) -> float | None:
        """When the next fragment timer is due (``time.monotonic()`` time), or ``None``."""
        return min((at for _, at in self.timers.values()), default=None)

    def auto_rerun(self, fragment_id: str) -> Run:
        """Answer a fragment's timer as the browser does, and set it again."""
        interval, _ = self.timers[fragment_id]
        self.timers[fragment_id] = (interval, time.monotonic() + interval)
        return self._rerun(fragment_id=fragment_id)

    def _rerun(
        self, trigger: str | None = None, fragment_id: str | None = None, auto: bool = True
    ) -> Run:
        if self._socket is None:
            self.connect()
        message = BackMsg()
        client = message.rerun_script
        client.page_name = self.page
        client.query_string = self.query_string
        if fragment_id:
            client.fragment_id = fragment_id
            client.is_auto_rerun = auto
        for key, value in self.values.items():
            state = client.widget_states.widgets.add()
            state.id = self.widgets[key].id
            _value(state, self.widgets[key], value)
        if trigger is not None:
            state = client.widget_states.widgets.add()
            state.id = self.widgets[trigger].id
            state.trigger_value = True
        started = time.monotonic()
        try:
            assert self._socket is not None
            self._socket.send_binary(message.SerializeToString())
            run = self._read_run()
        except (OSError, websocket.WebSocketException) as error:
            self.close()
            raise ProtocolError(f"the socket failed: {error}") from error
        run.seconds = time.monotonic() - started
        if fragment_id is None:
            self.widgets = run.widgets
        else:
            self.widgets.update(run.widgets)
        if run.query_string is not None:
            self.query_string = run.query_string
        return run

    def _read_run(self) -> Run:
        """The messages of one run, until its ``script_finished`` (after any rerun the app asked
        for), within ``timeout_s``, :data:`MAX_MESSAGES` and :data:`MAX_MESSAGE_BYTES` each."""
        assert self._socket is not None
        run = Run()
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or run.messages >= MAX_MESSAGES:
                self.close()
                raise ProtocolError(
                    f"the run did not finish within {self.timeout_s:g} s"
                    if left <= 0
                    else f"the run sent more than {MAX_MESSAGES} messages"
                )
            self._socket.settimeout(left)
            payload = self._socket.recv()
            if not isinstance(payload, bytes):
                raise ProtocolError("a text frame on the stream")
            if len(payload) > MAX_MESSAGE_BYTES:
                self.close()
                raise ProtocolError(f"a message of {len(payload)} bytes")
            message = ForwardMsg()
            try:
                message.ParseFromString(payload)
            except DecodeError as error:
                self.close()
                raise ProtocolError(f"a message that is not a ForwardMsg: {error}") from error
            run.messages += 1
            kind = message.WhichOneof("type")
            if kind == "new_session":
                self.session_id = message.new_session.initialize.session_id or self.session_id
                if not message.metadata.run.fragment_ids:
                    self.timers = {}  # a full run: the browser clears every timer
            elif kind == "delta":
                self._delta(message, run)
            elif kind == "auto_rerun" and len(self.timers) < MAX_ITEMS:
                interval = float(message.auto_rerun.interval)
                run.auto_reruns[message.auto_rerun.fragment_id] = interval
                if message.auto_rerun.fragment_id not in self.timers:
                    self.timers[message.auto_rerun.fragment_id] = (
                        interval,
                        time.monotonic() + interval,
                    )
            elif kind == "stop_auto_rerun":
                for fragment_id in message.stop_auto_rerun.fragment_ids:
                    self.timers.pop(fragment_id, None)
            elif kind == "page_info_changed":
                run.query_string = message.page_info_changed.query_string
            elif kind == "page_not_found":
                _keep(run.errors, f"page not found: {message.page_not_found.page_name}")
            elif kind == "script_finished":
                status = message.script_finished
                run.status = FINISHED.Name(status)
                if status == FINISHED.FINISHED_WITH_COMPILE_ERROR:
                    _keep(run.errors, "the script did not compile")
                # A run cut short for a rerun the app asked for (st.rerun, a link fix-up) is
                # followed by that rerun: the visitor waits for it too.
                if status != FINISHED.FINISHED_EARLY_FOR_RERUN:
                    return run

    @staticmethod
    def _delta(message: ForwardMsg, run: Run) -> None:
        delta = message.delta
        which = delta.WhichOneof("type")
        if which == "add_block":
            block = delta.add_block
            kind = block.WhichOneof("type")
            if kind == "tab_container":
                # st.tabs adds its bar, then each of its tabs, one after the other.
                bar = block.tab_container
                run._bar = bar.query_param_key or None
                if run._bar and (len(run.tabs) < MAX_ITEMS or run._bar in run.tabs):
                    run.tabs[run._bar] = TabBar([], bar.default_tab_index, bar.default_tab_label)
            elif kind == "tab" and run._bar in run.tabs:
                _keep(run.tabs[run._bar].labels, block.tab.label)
            if kind == "expandable":
                _keep(run.labels, block.expandable.label)
                if block.expandable.icon == ":material/error:":
                    _keep(run.errors, f"status: {block.expandable.label}"[:300])
            return
        if which != "new_element":
            return
        element = delta.new_element
        kind = element.WhichOneof("type")
        if kind is None:
            return
        body = getattr(element, kind)
        if kind == "exception":
            _keep(run.errors, f"exception: {body.type}: {body.message}"[:300])
        elif kind == "alert" and body.format == _ALERT_ERROR:
            _keep(run.alerts, f"error box: {body.body}"[:300])
        text = _TEXT_FIELDS.get(kind)
        if text is not None:
            _keep(run.texts, getattr(body, text))
        widget_id = getattr(body, "id", "")
        if (
            isinstance(widget_id, str)
            and widget_id.startswith("$$ID-")
            and (len(run.widgets) < MAX_ITEMS or widget_id in run.widgets)
        ):
            widget = Widget(widget_id, kind, body, message.delta.fragment_id)
            run.widgets[widget.key] = widget
