"""The visitor's language: English or Simplified Chinese, chosen per visitor, never per process.

Why a module: one server process serves a whole room, and two visitors may read two languages
at once, so nothing here is global to the process (no ``gettext.install``). ``app.py`` sets the
visitor's language at the start of every script run (:func:`use`); every sentence the app shows,
in ``pages/`` or built by ``jaxplay`` from a run, goes through :func:`_` or :func:`ngettext`,
which read it from the running script's context (Streamlit runs each script run in a thread of
its own, so a value never reaches another visitor).

The catalogs are gettext ``.po`` files managed with Babel (``jaxplay/locales``): English is the
source text, ``zh`` its translation. They are compiled in memory the first time a language is
used (no build step; a missing or broken catalog falls back to English, never to an error in
front of a visitor). Messages use named placeholders (``"{kernels} kernels"``) so a translation
may reorder them; ``python -m jaxplay.core.i18n`` re-extracts the messages and updates the
catalogs (see ``docs/glossary.md`` for the terms).

Example:
    >>> with speaking("zh"):
    ...     _("Present mode")
    '演示模式'
    >>> _("Present mode")
    'Present mode'
"""

from __future__ import annotations

import contextlib
import functools
import gettext
import io
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

#: The languages the app speaks, with their own names (the switch shows them so).
LANGUAGES: dict[str, str] = {"en": "English", "zh": "中文"}
DEFAULT = "en"
#: Where the catalogs live: ``<lang>/LC_MESSAGES/jaxplay.po`` and the template ``jaxplay.pot``.
LOCALES = Path(__file__).resolve().parent.parent / "locales"
DOMAIN = "jaxplay"

_language: ContextVar[str] = ContextVar("jaxplay_language", default=DEFAULT)


def use(language: str) -> None:
    """Speak ``language`` for the rest of this script run (``app.py`` calls it first thing)."""
    _language.set(language if language in LANGUAGES else DEFAULT)


def current() -> str:
    """The language of the running script: the visitor's."""
    return _language.get()


@contextlib.contextmanager
def speaking(language: str) -> Iterator[None]:
    """``language`` inside the block only (tests, and work done for a visitor in another thread)."""
    token = _language.set(language if language in LANGUAGES else DEFAULT)
    try:
        yield
    finally:
        _language.reset(token)


def negotiate(*preferences: str | None) -> str:
    """The first language of ours among the browser's preferences, else English.

    Each preference is a locale (``"zh-CN"``, as ``st.context.locale`` gives it) or an
    ``Accept-Language`` header (``"zh-TW,zh;q=0.9,en;q=0.8"``); any Chinese reads Chinese (the
    app has Simplified Chinese only, still closer to a reader of Traditional than English is).

    Example:
        >>> negotiate("zh-CN"), negotiate(None, "fr-FR,zh;q=0.8,en;q=0.5"), negotiate("de")
        ('zh', 'zh', 'en')
    """
    for preference in preferences:
        if not preference:
            continue
        for part in preference[:512].split(",")[:20]:
            tag = part.split(";")[0].strip().lower().replace("_", "-")
            base = tag.split("-")[0]
            if base in LANGUAGES:
                return base
    return DEFAULT


@functools.cache
def translations(language: str) -> gettext.NullTranslations:
    """``language``'s catalog compiled for lookup (English: the source text itself)."""
    if language == DEFAULT or language not in LANGUAGES:
        return gettext.NullTranslations()
    from babel.messages import mofile, pofile  # only where a catalog is read

    path = LOCALES / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    try:
        with path.open("rb") as po:
            catalog = pofile.read_po(po, locale=language)
    except OSError:
        return gettext.NullTranslations()
    compiled = io.BytesIO()
    mofile.write_mo(compiled, catalog, use_fuzzy=False)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def _(message: str) -> str:
    """``message`` in the visitor's language (a literal, so the extractor finds it)."""
    return translations(_language.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of a sentence that agrees with ``n``, in the visitor's language.

    Format the count in afterwards with a named placeholder: Chinese has one form for every
    ``n``, English two.

    Example:
        >>> ngettext("{n} device", "{n} devices", 1).format(n=1)
        '1 device'
    """
    return translations(_language.get()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Marks ``message`` for the catalog without translating it now: a constant defined at
    import time (a page's title in the registry) is translated where it is shown, with :func:`_`.
    """
    return message


if __name__ == "__main__":  # pragma: no cover - the maintainer's command, exercised by a test
    from jaxplay.core import _catalogs

    _catalogs.main()
