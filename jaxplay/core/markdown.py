"""The one way visitor text goes into Markdown: as text, never as links, images or markup.

Streamlit renders Markdown in ``st.markdown`` and also in ``st.error``, ``st.warning``,
``st.info``, ``st.success``, ``st.caption``, ``st.toast``, metric labels and widget help: links,
images (fetched from anywhere by every viewer's browser), GitHub's bare-URL autolinks,
``:material/...:`` icons, ``:red[...]`` colours and ``$...$`` maths. A page that echoes what a
visitor typed or linked — an unknown query parameter, a mesh axis name, a seed, a formula, the
text of an exception raised by visitor code — would let that visitor dress up a message under the
app's name: an attacker's image, a fake "sign in" link. (A side effect of the same bug: the app's
own "-2**63 to 2**63 - 1" rendered as "263".)

:func:`escape` backslash-escapes every ASCII punctuation character, which CommonMark defines as
always literal after a backslash; that breaks every construct above except one. GitHub's bare-URL
autolinks are found by remark-gfm in the *text* after escapes are resolved, so an escaped
``http://x`` is still a link in the browser: a zero-width space goes after the scheme's colon,
before the dot of ``www.`` and after an ``@`` (the text reads the same; its URLs no longer match).
:func:`code` puts text in an inline code span whose backtick fence is longer than any run of
backticks in the text, so it cannot break out. Text that is code (a formula, a traceback) is better
shown with ``st.code``, which renders nothing. Charts have their own rule: Plotly parses its own
HTML subset in titles, names and hover text, so visitor text in a figure goes through
:func:`jaxplay.core.figures.plain` instead.
"""

from __future__ import annotations

import re
import string

_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")
_BACKTICKS = re.compile("`+")
#: Where remark-gfm's literal autolinks start: ``http://``, ``https://``, ``www.``, ``a@b.c``.
_AUTOLINK = re.compile(r"(?i)(https?:)(//)|(www)(\.)|(@)")
_BREAK = "\u200b"  # zero-width space: not a URL or e-mail character


def _break_autolinks(text: str) -> str:
    def broken(m: re.Match[str]) -> str:
        return "@" + _BREAK if m.group(5) else _BREAK.join(filter(None, m.groups()))

    return _AUTOLINK.sub(broken, text)


def escape(text: object) -> str:
    """``text`` as literal Markdown text: no links, images, emphasis, icons, colours or maths.

    Example:
        >>> escape("![px](p.png) 2**63")
        '\\\\!\\\\[px\\\\]\\\\(p\\\\.png\\\\) 2\\\\*\\\\*63'
    """
    return _PUNCTUATION.sub(r"\\\1", _break_autolinks(str(text)))


def code(text: object) -> str:
    """``text`` as an inline code span that its own backticks cannot close.

    Example:
        >>> code("a`b")
        '`` a`b ``'
    """
    text = str(text).replace("\n", " ")
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest or text.startswith(" ") else f"`{text}`"
