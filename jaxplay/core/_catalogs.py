"""The catalogs' upkeep: extract every message from the code, update the template and each
language's ``.po`` (the maintainer's command ``python -m jaxplay.core.i18n``; a test runs
:func:`extract` and compares, so a message added without updating the catalogs fails CI).

Why Babel: it extracts from Python (``_``, ``N_``, ``ngettext``), reads and writes ``.po`` files
that every translation tool opens, knows each language's plural rule, and compiles catalogs in
memory at start-up, so the repository holds text only.
"""

from __future__ import annotations

import string
import sys
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir, extract_from_file
from babel.messages.pofile import read_po, write_po

from jaxplay.core import i18n

ROOT = i18n.LOCALES.parent.parent
#: What the extractor reads: the router, the pages and the logic package.
SOURCES = ("app.py", "pages", "jaxplay")
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2)}
TEMPLATE = i18n.LOCALES / f"{i18n.DOMAIN}.pot"


def po_path(language: str) -> Path:
    return i18n.LOCALES / language / "LC_MESSAGES" / f"{i18n.DOMAIN}.po"


def extract(root: Path = ROOT) -> Catalog:
    """Every message the code marks, with where it is used (``path:line``)."""
    catalog = Catalog(project="jaxplay", domain=i18n.DOMAIN, charset="utf-8")
    for source in SOURCES:
        path = root / source
        if path.is_file():
            found = (
                (source, *item)
                for item in extract_from_file(
                    "python", str(path), keywords=KEYWORDS, comment_tags=("Translators:",)
                )
            )
        else:
            found = (
                (f"{source}/{name}", lineno, message, comments, context)
                for name, lineno, message, comments, context in extract_from_dir(
                    str(path),
                    method_map=[("**.py", "python")],
                    keywords=KEYWORDS,
                    comment_tags=("Translators:",),
                )
            )
        for name, lineno, message, comments, context in found:
            catalog.add(
                message, locations=[(name, lineno)], auto_comments=comments, context=context
            )
    return catalog


def read(path: Path, language: str | None = None) -> Catalog:
    with path.open("rb") as file:
        return read_po(file, locale=language)


def write(catalog: Catalog, path: Path) -> None:
    """Sorted, without line numbers: an edit elsewhere in a file does not touch the catalogs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        write_po(file, catalog, width=100, sort_output=True, include_lineno=False)


def placeholders(text: str) -> set[str]:
    """The named fields of a ``str.format`` text (``"{n} of {total}"`` → ``{"n", "total"}``)."""
    return {field for _, field, _, _ in string.Formatter().parse(text) if field}


def texts(value: object) -> tuple[str, ...]:
    """A message's id or translation as its texts: one, or one per plural form (Babel keeps a
    plural's as a tuple or list); an empty text where there is none."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    return tuple(item if isinstance(item, str) else "" for item in items)


def ids(catalog: Catalog) -> set[tuple[str, ...]]:
    return {texts(message.id) for message in catalog if message.id}


def problems(language: str) -> list[str]:
    """What keeps ``language``'s catalog from being complete: each untranslated, fuzzy or
    placeholder-changing message, and each message of the template it lacks."""
    template, catalog = read(TEMPLATE), read(po_path(language), language)
    found: list[str] = []
    for message in template:
        if not message.id:
            continue
        translation: Message | None = catalog.get(message.id)
        if translation is None:
            found.append(f"missing: {message.id!r}")
            continue
        if translation.fuzzy:
            found.append(f"fuzzy: {message.id!r}")
        strings = texts(translation.string)
        if not all(strings):
            found.append(f"untranslated: {message.id!r}")
            continue
        wanted = set().union(*(placeholders(s) for s in texts(message.id)))
        for text in strings:
            if placeholders(text) != wanted:
                found.append(
                    f"placeholders {sorted(placeholders(text))} ≠ {sorted(wanted)}: {message.id!r}"
                )
    return found


def main(argv: list[str] | None = None) -> None:
    """Re-extract, then update every language's catalog: new messages come in untranslated,
    removed ones go (no fuzzy guesses: a guessed translation would be shown as if checked).
    A file whose messages did not change is left as it is (no new header dates)."""
    template = extract()
    template.project, template.copyright_holder = "jaxplay", "jaxplay's authors"
    if not TEMPLATE.exists() or _content(read(TEMPLATE)) != _content(template):
        write(template, TEMPLATE)
    for language in i18n.LANGUAGES:
        if language == i18n.DEFAULT:
            continue
        path = po_path(language)
        if path.exists():
            catalog = read(path, language)
        else:
            catalog = Catalog(locale=language, domain=i18n.DOMAIN, project="jaxplay")
        before = _content(catalog)
        catalog.update(template, no_fuzzy_matching=True)
        catalog.obsolete.clear()
        catalog.fuzzy = False  # the header: a fuzzy header would drop the plural rule
        if _content(catalog) != before or not path.exists():
            write(catalog, path)
        left = problems(language)
        print(f"{language}: {len(template)} messages, {len(left)} to translate", file=sys.stderr)


def _content(catalog: Catalog) -> list[tuple[object, object, tuple[str, ...]]]:
    return sorted(((m.id, m.string, tuple(sorted(m.flags))) for m in catalog if m.id), key=repr)
