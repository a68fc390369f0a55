"""The guard over Streamlit's client messages: a public server ignores the ones that change
shared state (the rule and the list of messages are in :mod:`jaxplay.hosting.protocol`).

Streamlit dispatches every ``BackMsg`` a browser sends in ``AppSession.handle_backmsg``, with no
check of who may send which: any client can send ``clear_cache`` and empty every visitor's
caches. :func:`install` wraps that one method, once per process (``app.py`` calls it on every
run; the second call finds the wrapper and returns). The wrapper asks the rule at each message,
so the guard follows ``JAXPLAY_PUBLIC`` as the rest of public mode does.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from jaxplay.hosting import protocol

log = logging.getLogger(__name__)
_lock = threading.Lock()


def _operation(msg: Any) -> str | None:
    if msg.WhichOneof("type") != "backend_operation_request":
        return None
    return msg.backend_operation_request.WhichOneof("payload")


def install() -> None:
    """Wrap ``AppSession.handle_backmsg`` with the public-mode refusal (a no-op after once)."""
    from streamlit.runtime.app_session import AppSession

    with _lock:
        original = AppSession.handle_backmsg
        if getattr(original, "_jaxplay_guard", False):
            return

        def handle_backmsg(self: AppSession, msg: Any) -> None:
            try:
                msg_type, operation = msg.WhichOneof("type"), _operation(msg)
            except Exception:
                return original(self, msg)
            reason = protocol.refusal(msg_type, operation)
            if reason is not None:
                log.warning("ignored a client's %s message (public mode: %s)", msg_type, reason)
                return None
            return original(self, msg)

        handle_backmsg._jaxplay_guard = True  # type: ignore[attr-defined]
        handle_backmsg._jaxplay_original = original  # type: ignore[attr-defined]
        AppSession.handle_backmsg = handle_backmsg  # type: ignore[method-assign]
