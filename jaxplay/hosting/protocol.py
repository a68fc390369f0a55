"""Which of Streamlit's client messages a public server refuses, and why.

Every browser tab talks to the server through ``BackMsg`` protocol messages, and any client can
send any of them, whatever its page shows (``client.toolbarMode = "viewer"`` only hides the
menu). Streamlit 1.67 accepts these (``AppSession.handle_backmsg`` and the websocket handler):

============================== ==========================================================
``rerun_script``               run this session's script again (every widget change)
``stop_script``                stop this session's run
``app_heartbeat``              keep this session's connection alive
``file_urls_request``          upload addresses for this session's file uploader
``backend_operation_request``  ``deferred_file`` and ``dataframe_chunk`` (this session's own
                               media and tables); ``install_skills`` and
                               ``dismiss_skills_nudge`` (write files on the server; Streamlit
                               refuses them when headless or not on loopback)
``clear_cache``                empty **every** ``st.cache_data`` and ``st.cache_resource``
                               of the server, for all visitors
``set_run_on_save``            rerun this session when a source file changes
``load_git_info``              run git on the server's checkout and send back its branch and
                               the names of its untracked and uncommitted files
``debug_disconnect_websocket`` refused by Streamlit unless ``global.developmentMode`` or
``debug_shutdown_runtime``     ``global.e2eTest`` is set (the second stops the server)
============================== ==========================================================

In public mode the ones that reach past the visitor's own session, or that a visitor of a
deployed app has no use for, are no-ops (:data:`REFUSED`); the rest only touch the sender's own
session. In every mode ``file_urls_request`` is a no-op (no page uploads a file:
:data:`REFUSED_ALWAYS`), a rerun's widget values are checked before Streamlit decodes them
(:func:`drop_refused`): Streamlit parses a component's JSON whatever its size and keeps a
choice's repeated labels, and a browser sends neither, so only a scripted client is refused;
and a rerun's other fields are kept to what a browser sends (:func:`trim_rerun`).
``pages._protocol`` installs the guard over Streamlit; this module holds the rules, so that they
are tested without a server.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from jaxplay.core import untrusted
from jaxplay.hosting import settings
from jaxplay.hosting.ratelimit import RateLimiter

#: Message types a public server ignores, with the reason (written to the log).
REFUSED: Mapping[str, str] = {
    "clear_cache": "would empty every visitor's caches and the shared measurements",
    "set_run_on_save": "a deployed app's files do not change; nothing for a visitor to switch",
    "load_git_info": "would run git on the server and reveal its checkout's file names",
    "debug_disconnect_websocket": "a developer's test message",
    "debug_shutdown_runtime": "would stop the server for everyone",
}
#: Message types every server ignores (public or not), with the reason: what no page uses.
REFUSED_ALWAYS: Mapping[str, str] = {
    "file_urls_request": "no page takes a file upload; Streamlit makes an upload URL for every "
    "name asked (2.4 million names in one message held the server 16 s and 1.1 GB)",
}
#: Operations of ``backend_operation_request`` every server ignores: what no page uses. Each
#: request's id comes back in its answer and in Streamlit's log whole (150 requests of 7.9 MB
#: ids held 1.2 GB and wrote as much to the log), and 20,000 chunk requests for made-up tables
#: held the server 20 s.
REFUSED_OPERATIONS_ALWAYS: Mapping[str, str] = {
    "dataframe_chunk": "no page shows a table lazily (Streamlit does above 150,000 rows)",
    "deferred_file": "no page offers a download made on request (each is bytes made at once)",
}
#: Operations of ``backend_operation_request`` a public server ignores, with the reason.
REFUSED_OPERATIONS: Mapping[str, str] = {
    "install_skills": "would write files into the server's checkout",
    "dismiss_skills_nudge": "would write a marker file on the server",
}


def refusal(
    msg_type: str | None,
    operation: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """Why the server ignores this client message, or ``None`` where it is handled: what
    :data:`REFUSED_ALWAYS` names in every mode, the rest of the lists in public mode only.

    Arguments:
        msg_type: the ``BackMsg``'s ``type`` (``msg.WhichOneof("type")``).
        operation: for a ``backend_operation_request``, its payload's type.
        environ: the settings (default: the process environment).
    """
    always = REFUSED_ALWAYS.get(msg_type or "")
    if msg_type == "backend_operation_request":
        always = REFUSED_OPERATIONS_ALWAYS.get(operation or "")
    if always is not None:
        return always
    if not settings.public_mode(environ):
        return None
    if msg_type == "backend_operation_request":
        return REFUSED_OPERATIONS.get(operation or "")
    return REFUSED.get(msg_type or "")


#: The most labels a multi-choice widget's value may hold (multiselect, multi pills): no widget of
#: the app offers as many options.
MAX_CHOICES = 256
#: The most numbers an array value may hold (a range slider sends two).
MAX_NUMBERS = 256
#: The most characters a text value may hold: the longest a widget of the app takes is the code
#: editor's plain text box (``sandbox.MAX_SOURCE_CHARS``, 100,000). A data editor's edits come as
#: text too, which Streamlit decodes as JSON whatever its size: 8 MB of empty rows held 200 MB.
MAX_TEXT_CHARS = 200_000


#: The most widget values one rerun may carry: no page has a hundred widgets. 500,000 made-up ones
#: in one message cost Streamlit 5 s of the server's interpreter and 315 MB to store and sweep.
MAX_WIDGETS = 1_000
#: The most characters and parameters of a rerun's address (``query_string``). The longest a
#: page writes is a few bound text boxes of at most 1,000 characters each, percent-encoded; a
#: page binds fewer than twenty widgets. Streamlit re-encodes the whole address for every
#: parameter the app drops: a 1.6 MB address of 998 unknown names cost 43 s of CPU and 2.3 GB.
MAX_QUERY_CHARS = 32_768
MAX_QUERY_PARAMS = 100

#: Value fields a widget may be sent in interchangeably: a number box registers a double and
#: the browser sends an integer box's value as an int.
_FAMILIES = {"int_value": "double_value", "int_array_value": "double_array_value"}


def _family(kind: str) -> str:
    return _FAMILIES.get(kind, kind)


#: How every widget id Streamlit makes begins (a made-up one raised in the page's own code): an
#: element's, and a component's event trigger's (``$$STREAMLIT_INTERNAL_KEY_<id>__<event>``).
WIDGET_ID_PREFIXES = ("$$ID-", "$$STREAMLIT_INTERNAL_KEY_")


def query_refusal(query_string: str) -> str | None:
    """Why a rerun's address is refused (the rerun goes on without it), or ``None``."""
    if len(query_string) > MAX_QUERY_CHARS:
        return f"an address of {len(query_string):,} characters (at most {MAX_QUERY_CHARS:,})"
    params = query_string.count("&") + 1 if query_string else 0
    if params > MAX_QUERY_PARAMS:
        return f"an address of {params:,} parameters (at most {MAX_QUERY_PARAMS})"
    return None


#: The most message hashes a rerun may say its browser holds. A browser lists the large
#: messages it kept from the last reruns, a few dozen; Streamlit keeps the list as a set for the
#: whole run, so a million short ones held 150 MB a message, and ten, 1.1 GB after the socket
#: closed. Past it the list is emptied: the server then sends every message whole.
MAX_CACHED_HASHES = 4_096
#: The most characters of a rerun's page name, page hash or fragment id (a page's address, a
#: hex digest, a fragment's id: tens of characters), and of each string the browser reports
#: about itself (time zone, locale, address, colour scheme).
MAX_NAME_CHARS = 1_024
MAX_CONTEXT_CHARS = 4_096


#: How many reruns one session may ask for: a burst, then a steady rate per second. A browser
#: asks once per widget change (a few a second at most; a fragment's timed reruns are fewer and
#: Streamlit merges them); 5,000 full reruns sent at once held the server 8.6 s, every
#: visitor's page with it. Past it a rerun is ignored.
RERUN_BURST, RERUNS_PER_SECOND = 30, 10
#: How many messages of any kind one session may send: a burst, then a steady rate per second
#: (150,000 heartbeats held the server 5.4 s). Past it a message is ignored.
MESSAGE_BURST, MESSAGES_PER_SECOND = 300, 100
#: The most characters of a backend operation's request and session ids (a browser's are
#: UUIDs); a longer one is ignored.
MAX_ID_CHARS = 64


def session_budgets() -> tuple[RateLimiter, RateLimiter]:
    """A server process's budgets per session id: for reruns, and for messages of any kind."""
    return (
        RateLimiter(RERUN_BURST, RERUN_BURST / RERUNS_PER_SECOND),
        RateLimiter(MESSAGE_BURST, MESSAGE_BURST / MESSAGES_PER_SECOND),
    )


def operation_refusal(request: Any) -> str | None:
    """Why a ``backend_operation_request`` the server handles is ignored (ids past
    :data:`MAX_ID_CHARS`: Streamlit echoes and logs them whole), or ``None``."""
    for name in ("request_id", "session_id"):
        length = len(getattr(request, name))
        if length > MAX_ID_CHARS:
            return f"a {name} of {length:,} characters (at most {MAX_ID_CHARS})"
    return None


def trim_rerun(rerun: Any) -> list[str]:
    """Empty, in place, each field of a rerun's ``ClientState`` past what a browser sends
    (:data:`MAX_CACHED_HASHES`, :data:`MAX_NAME_CHARS`, :data:`MAX_CONTEXT_CHARS`); returns
    why, one reason a field. The rerun goes on without them: no cached messages (every message
    sent whole), the main page for a page name no page has, a full rerun for a fragment id no
    fragment has, and Streamlit's defaults for the browser's context."""
    reasons: list[str] = []
    count = len(rerun.cached_message_hashes)
    if count > MAX_CACHED_HASHES:
        del rerun.cached_message_hashes[:]
        reasons.append(f"{count:,} cached message hashes (at most {MAX_CACHED_HASHES:,})")
    for owner, names, most in (
        (rerun, ("page_name", "page_script_hash", "fragment_id"), MAX_NAME_CHARS),
        (rerun.context_info, ("timezone", "locale", "url", "color_scheme"), MAX_CONTEXT_CHARS),
    ):
        for name in names:
            length = len(getattr(owner, name))
            if length > most:
                setattr(owner, name, "")
                reasons.append(f"a {name} of {length:,} characters (at most {most:,})")
    return reasons


def drop_refused(
    widgets: Any,
    most_chosen: Mapping[str, int] | None = None,
    kinds: Mapping[str, str] | None = None,
    decoded: Mapping[str, str] | None = None,
    offered: Mapping[str, Collection[str]] | None = None,
) -> list[str]:
    """Remove from a rerun's ``widgets`` (its repeated ``WidgetState`` field, in place) each
    value :func:`widget_refusal` refuses; returns why, one reason a value.

    The rest of the rerun goes on: Streamlit keeps a widget's last value where the message has
    none, so the page answers (a dropped rerun left the browser waiting, "Running…" for ever,
    had a browser's value ever been refused) and runs with the values it already had.
    """
    if len(widgets) > MAX_WIDGETS:
        count = len(widgets)
        del widgets[:]
        return [f"{count:,} widget values (at most {MAX_WIDGETS:,})"]
    reasons: list[str] = []
    for at in reversed(range(len(widgets))):
        reason = widget_refusal([widgets[at]], most_chosen, kinds, decoded, offered)
        if reason is not None:
            del widgets[at]
            reasons.append(reason)
    return reasons[::-1]


def widget_refusal(
    widgets: Iterable[Any],
    most_chosen: Mapping[str, int] | None = None,
    kinds: Mapping[str, str] | None = None,
    decoded: Mapping[str, str] | None = None,
    offered: Mapping[str, Collection[str]] | None = None,
) -> str | None:
    """Why a rerun's widget values are refused before Streamlit decodes them, or ``None``.

    ``widgets`` are the rerun's ``WidgetState`` messages. A multi-choice value with a label
    repeated loses the repeats here, in place: a browser never repeats one, and a page that
    loops over the chosen items (a Compose sweep, the Memory page's variants) looped once per
    copy, 200,000 copies for minutes of the server's interpreter. A choice longer than its
    widget's ``max_selections`` (``most_chosen``: widget key -> the most) keeps its first ones,
    as Streamlit keeps a link's (from a message it raised instead). Refused: a multi-choice value
    of more than :data:`MAX_CHOICES` labels, an array of more than :data:`MAX_NUMBERS` numbers,
    a text of more than :data:`MAX_TEXT_CHARS` characters (a data editor's JSON among them), and
    a JSON value :func:`jaxplay.core.untrusted.json_text_refusal` refuses (Streamlit parses a
    component's JSON before the page sees it: 8 MB of small objects held 200 MB). Refused too:
    an id Streamlit would not make, and a value of another kind than its widget's (``kinds``:
    widget id -> the value field it was registered with), which raised in Streamlit's own
    code (an error page; the sidebar's language switch broke every page of the session); a
    number that is not finite (``int(inf)`` raised in an integer box's decoding); and the JSON
    text of a widget Streamlit decodes as such (``decoded``: widget id -> its kind, a key of
    :data:`DECODED_TEXTS`) of another shape than a browser sends, which raised while Streamlit
    decoded it or in the page's own callback (an error page). And a choice of a label its
    widget does not offer (``offered``: widget id -> the labels of its options): Streamlit hands
    an unknown label to the page's callback as it came (an error page), or fails to encode it
    back (an error page), and an empty language choice broke the session's every page.
    """
    for state in widgets:
        kind = state.WhichOneof("value")
        if not state.id.startswith(WIDGET_ID_PREFIXES):
            return f"a widget id Streamlit does not make ({len(state.id):,} characters)"
        expected = (kinds or {}).get(state.id)
        if expected is not None and kind is not None and _family(kind) != _family(expected):
            return f"a {kind} for a widget of {expected}"
        if kind == "string_array_value":
            labels = state.string_array_value.data
            if len(labels) > MAX_CHOICES:
                return f"a choice of {len(labels):,} labels (at most {MAX_CHOICES})"
            most = next(
                (n for key, n in (most_chosen or {}).items() if state.id.endswith("-" + key)),
                None,
            )
            labels_offered = (offered or {}).get(state.id)
            if labels_offered is not None and not all(x in labels_offered for x in labels):
                return "a choice of a label its widget does not offer"
            unique = list(dict.fromkeys(labels))[:most]
            if len(unique) < len(labels):
                del labels[:]
                labels.extend(unique)
        elif kind == "string_value":
            if len(state.string_value) > MAX_TEXT_CHARS:
                return (
                    f"a text of {len(state.string_value):,} characters (at most {MAX_TEXT_CHARS:,})"
                )
            labels_offered = (offered or {}).get(state.id)
            if labels_offered is not None and state.string_value not in labels_offered:
                return "a choice of a label its widget does not offer"
            decoded_as = (decoded or {}).get(state.id)
            if decoded_as is not None:
                why = DECODED_TEXTS[decoded_as](state.string_value)
                if why is not None:
                    return f"a {decoded_as} of {why}"
        elif kind == "double_value" and not math.isfinite(state.double_value):
            return f"a number that is not finite ({state.double_value})"
        elif kind in ("double_array_value", "int_array_value"):
            count = len(getattr(state, kind).data)
            if count > MAX_NUMBERS:
                return f"an array of {count:,} numbers (at most {MAX_NUMBERS})"
            if not all(map(math.isfinite, getattr(state, kind).data)):
                return "an array of numbers not all finite"
        elif kind in ("json_value", "json_trigger_value"):
            why = untrusted.json_text_refusal(getattr(state, kind))
            if why is not None:
                return f"a JSON value of {why}"
    return None


#: The parts of a data editor's edits, as its browser side sends them.
_TABLE_PARTS = {"edited_rows": dict, "added_rows": list, "deleted_rows": list}


def table_edits_refusal(text: str) -> str | None:
    """Why a data editor's edits (its JSON text) are not of the shape a browser sends, or
    ``None``: an object of ``edited_rows`` (row position -> {column: value}), ``added_rows``
    ({column: value} each) and ``deleted_rows`` (row positions). Checked for cost first
    (:func:`jaxplay.core.untrusted.json_text`); Streamlit raised decoding anything else
    (text that is not JSON, a list of edited rows, a row named ``"x"``): an error page.
    """
    edits = _json_object(text)
    if isinstance(edits, str):
        return edits
    for part, value in edits.items():
        if part not in _TABLE_PARTS or not isinstance(value, _TABLE_PARTS[part]):
            return f"a part {part[:40]!r} of another kind"
    edited = edits.get("edited_rows", {})
    if not all(_position(row) and isinstance(cells, dict) for row, cells in edited.items()):
        return "an edited row that is no row position or has no cells"
    if not all(isinstance(row, dict) for row in edits.get("added_rows", [])):
        return "an added row that has no cells"
    if not all(_position(row) for row in edits.get("deleted_rows", [])):
        return "a deleted row that is no row position"
    return None


def _json_object(text: str) -> dict[str, Any] | str:
    """``text`` parsed as a JSON object once it is cheap to (:func:`untrusted.json_text`), or
    why it is refused."""
    try:
        parsed = untrusted.json_text(text)
    except ValueError as refused:
        return str(refused)
    return parsed if isinstance(parsed, dict) else "no object"


def _position(row: object) -> bool:
    if isinstance(row, str):
        return row.isascii() and row.isdigit() and len(row) <= 9
    return type(row) is int and row >= 0


#: The parts of a chart's selection, as its browser side sends them (each a list).
_SELECTION_PARTS = ("points", "point_indices", "box", "lasso")


def chart_selection_refusal(text: str) -> str | None:
    """Why a chart's selection (its JSON text) is not of the shape a browser sends, or ``None``:
    an object whose ``selection`` holds ``points`` (objects), ``point_indices`` (integers),
    ``box`` and ``lasso`` (objects). Checked for cost first; Streamlit raised decoding a number
    (``"selection" in 5``) or a ``selection`` that is no object, and the PRNG page's click
    callback on a point that is no object: an error page, kept by the session's next rerun.
    """
    event = _json_object(text)
    if isinstance(event, str):
        return event
    selection = event.get("selection", {})
    if not isinstance(selection, dict):
        return "a selection that is no object"
    for part in _SELECTION_PARTS:
        items = selection.get(part, [])
        if not isinstance(items, list):
            return f"a {part} that is no list"
        wanted = int if part == "point_indices" else dict
        if not all(type(item) is wanted for item in items):
            return f"a {part} item of another kind"
    return None


#: What a widget's JSON text must look like, by the kind of widget Streamlit decodes it for
#: (``pages/_protocol`` finds each kind from the widget's decoder).
DECODED_TEXTS: dict[str, Callable[[str], str | None]] = {
    "data editor's edits": table_edits_refusal,
    "chart selection": chart_selection_refusal,
}
