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
session. ``pages._protocol`` installs the guard over Streamlit; this module holds the rule, so
that it is tested without a server.
"""

from __future__ import annotations

from collections.abc import Mapping

from jaxplay.hosting import settings

#: Message types a public server ignores, with the reason (written to the log).
REFUSED: Mapping[str, str] = {
    "clear_cache": "would empty every visitor's caches and the shared measurements",
    "set_run_on_save": "a deployed app's files do not change; nothing for a visitor to switch",
    "load_git_info": "would run git on the server and reveal its checkout's file names",
    "debug_disconnect_websocket": "a developer's test message",
    "debug_shutdown_runtime": "would stop the server for everyone",
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
    """Why a public server ignores this client message, or ``None`` where it is handled.

    Arguments:
        msg_type: the ``BackMsg``'s ``type`` (``msg.WhichOneof("type")``).
        operation: for a ``backend_operation_request``, its payload's type.
        environ: the settings (default: the process environment).
    """
    if not settings.public_mode(environ):
        return None
    if msg_type == "backend_operation_request":
        return REFUSED_OPERATIONS.get(operation or "")
    return REFUSED.get(msg_type or "")
