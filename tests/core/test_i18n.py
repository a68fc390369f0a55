"""The visitor's language: negotiated from the browser, held per script run (per thread), never
process-wide; catalogs compiled from the repository's ``.po`` files."""

from __future__ import annotations

import threading

import pytest

from jaxplay.core import i18n
from jaxplay.core.i18n import _, ngettext


@pytest.mark.parametrize(
    ("preferences", "expected"),
    [
        (("zh-CN",), "zh"),
        (("zh_TW",), "zh"),
        (("en-GB",), "en"),
        ((None, "fr-FR,zh-Hans;q=0.8,en;q=0.5"), "zh"),
        ((None, "de-DE,fr;q=0.9"), "en"),
        (("", None), "en"),
        (("de", "zh"), "zh"),
        (("x" * 10_000,), "en"),
    ],
)
def test_the_browser_preferences_choose_the_first_language_of_ours(preferences, expected):
    assert i18n.negotiate(*preferences) == expected


def test_english_is_the_source_text_and_chinese_its_translation():
    assert _("Present mode") == "Present mode"
    with i18n.speaking("zh"):
        assert _("Present mode") == "演示模式"
        assert _("a message no catalog has") == "a message no catalog has"
    assert i18n.current() == "en"


def test_plurals_follow_each_language_rule():
    assert ngettext("{n} device", "{n} devices", 1).format(n=1) == "1 device"
    assert ngettext("{n} device", "{n} devices", 8).format(n=8) == "8 devices"
    with i18n.speaking("zh"):
        assert [ngettext("{n} device", "{n} devices", n).format(n=n) for n in (1, 8)] == [
            "1 个设备",
            "8 个设备",
        ]


def test_an_unknown_language_speaks_english():
    i18n.use("xx")
    try:
        assert i18n.current() == "en"
    finally:
        i18n.use("en")


def test_two_threads_speak_two_languages_at_once():
    """As two visitors' script runs do: each thread's language is its own."""
    barrier = threading.Barrier(2)
    seen: dict[str, list[str]] = {}

    def visitor(language: str) -> None:
        i18n.use(language)
        barrier.wait()
        seen[language] = [_("Present mode") for _round in range(200)]

    threads = [threading.Thread(target=visitor, args=(lang,)) for lang in ("en", "zh")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(seen["en"]) == {"Present mode"}
    assert set(seen["zh"]) == {"演示模式"}
    assert i18n.current() == "en"
