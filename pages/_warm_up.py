"""The room's warm-up as a command: open every page's views on a server, as a visitor would.

    python -m pages._warm_up --url http://127.0.0.1:8501 [--pages jit,vmap] [--max-views 300]

Which views, in which order, is :mod:`jaxplay.hosting.warm_up`'s plan; this opens each one with
the protocol client (:mod:`pages._visitor`), in a session of its own (as a room's visitors
arrive), and tells the plan what the page showed: its tab bars and select boxes bound to the
address, and its failures. The server starts it in the background (``JAXPLAY_WARM_UP``, with
``--lock`` so one warm-up runs per host); run it by hand before a workshop to see each view's
time. It prints one line per view and a summary, and exits 1 if a view failed.
"""

from __future__ import annotations

from pages._visitor import ProtocolError, Run, Visitor

import argparse
import sys
from collections.abc import Sequence

from jaxplay.hosting import catalog, warm_up

#: How long one run of a view may take (a cold page measures on a busy machine).
VIEW_TIMEOUT_S = 600.0


def seen(run: Run) -> warm_up.Seen:
    """What the plan needs of a run: its bound tab bars and select boxes, its failures."""
    tabs = {key: warm_up.Choices(bar.default, tuple(bar.labels)) for key, bar in run.tabs.items()}
    boxes = {}
    for widget in run.widgets.values():
        element = widget.element
        if widget.kind == "selectbox" and element.query_param_key and element.options:
            default = element.options[min(element.default, len(element.options) - 1)]
            boxes[element.query_param_key] = warm_up.Choices(default, tuple(element.options))
    return warm_up.Seen(tabs, boxes, tuple(run.errors), run.seconds)


def opener(url: str, timeout_s: float = VIEW_TIMEOUT_S):  # type: ignore[no-untyped-def]
    """``open_view`` for :func:`jaxplay.hosting.warm_up.tour`: each view in a new session.

    A view that chooses a preset is opened as a visitor gets there: the view without it, then
    the choice made in its box. A page applies a preset when the box changes (Compose's fills
    the transform slots in its ``on_change``); an address naming the preset alone would open the
    page's default settings under the preset's name, and warm those.
    """

    def open_view(view: warm_up.View) -> warm_up.Seen:
        visitor = Visitor(url, timeout_s=timeout_s)
        params = dict(view.params)
        presets = [key for key in params if key.endswith(warm_up.PRESET_SUFFIXES)]
        before = warm_up.View(view.page, tuple(p for p in view.params if p[0] not in presets))
        try:
            run = visitor.open(catalog.page_name(view.page), before.query_string)
            opened = run.seconds
            for key in presets:
                run = visitor.change(key, params[key])
                opened += run.seconds
            run.seconds = opened
            return seen(run)
        except ProtocolError as error:
            return warm_up.Seen(errors=(str(error),))
        finally:
            visitor.close()

    return open_view


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pages._warm_up", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--url", default="http://127.0.0.1:8501", help="the server to warm")
    parser.add_argument(
        "--pages",
        default=",".join(spec.url_path for spec in catalog.PAGES),
        help="page addresses, comma-separated (default: every page)",
    )
    parser.add_argument("--max-views", type=int, default=warm_up.DEFAULT_MAX_VIEWS)
    parser.add_argument(
        "--lock",
        default=warm_up.lock_file(),
        help="skip the warm-up while another one holds this file (default: the one beside "
        "JAXPLAY_MEASURE_LOCK's, where that is set)",
    )
    args = parser.parse_args(argv)
    pages = [page.strip() for page in args.pages.split(",") if page.strip()]

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        with warm_up.host_turn(args.lock) as ours:
            if not ours:
                log("warm-up: another process of this host is warming it; skipped")
                return 0
            report = warm_up.tour(opener(args.url), pages, args.max_views, log)
    except OSError as error:  # the lock file's folder is missing or not writable
        log(f"warm-up: cannot open the lock file {args.lock}: {error}; skipped")
        return 1
    log(report.summary())
    for view, failed in report.failed:
        log(f"warm-up: {view} failed: {'; '.join(failed.errors)}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
