"""The catalogs: extraction up to date, every message translated (none fuzzy, the same named
placeholders), the glossary's rejected variants nowhere, and no process-wide language."""

from __future__ import annotations

import ast
import re

import pytest

from jaxplay.core import _catalogs, i18n
from jaxplay.hosting import catalog

GLOSSARY = catalog.ROOT / "docs" / "glossary.md"
CALLS = {"_", "ngettext", "N_"}


def test_the_template_holds_exactly_the_messages_the_code_marks():
    """Fails when a message was added, changed or removed without ``python -m
    jaxplay.core.i18n`` (which updates the template and the catalogs)."""
    in_code = _catalogs.ids(_catalogs.extract())
    in_template = _catalogs.ids(_catalogs.read(_catalogs.TEMPLATE))
    assert sorted(map(repr, in_code - in_template)) == [], "run: python -m jaxplay.core.i18n"
    assert sorted(map(repr, in_template - in_code)) == [], "run: python -m jaxplay.core.i18n"


@pytest.mark.parametrize("language", sorted(set(i18n.LANGUAGES) - {i18n.DEFAULT}))
def test_every_message_is_translated_with_its_placeholders(language):
    assert _catalogs.problems(language) == []


def test_the_placeholder_check_catches_a_dropped_or_renamed_field():
    assert _catalogs.placeholders("{n} of {total}") == {"n", "total"}
    assert _catalogs.placeholders("{{literal}} {n:,}") == {"n"}


def _glossary_rows() -> list[tuple[str, str, list[str]]]:
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in {"English", ""} or set(cells[0]) <= {"-"}:
            continue
        rejected = [v.strip() for v in re.split(r"[,，]", cells[3]) if v.strip()]
        rows.append((cells[0], cells[1], rejected))
    return rows


def test_the_glossary_is_a_table_of_the_articles_terms():
    rows = _glossary_rows()
    chinese = {zh for _en, zh, _rejected in rows}
    assert len(rows) >= 30
    assert {
        "即时编译",
        "自动微分",
        "向量化映射",
        "追踪",
        "中间表示",
        "静态参数",
        "纯函数",
    } <= chinese
    assert {
        "副作用",
        "前向模式",
        "反向模式",
        "密钥",
        "设备",
        "分片",
        "梯度检查点",
        "融合",
    } <= chinese


ARTICLE = catalog.ROOT.parent / "shared" / "seed" / "jax-core-api-article.zh.txt"


@pytest.mark.skipif(not ARTICLE.exists(), reason=f"the article is not at {ARTICLE}")
def test_the_terms_said_to_come_from_the_article_are_in_it():
    """A row whose source is the article names a term the article uses (two did not: the
    article has no 数组, and writes 海森矩阵向量乘积)."""
    text = ARTICLE.read_text(encoding="utf-8")
    sources = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4:
            sources[cells[1]] = cells[2]
    from_article = [zh for zh, source in sources.items() if source.startswith("article")]
    assert len(from_article) >= 20
    missing = [
        zh
        for zh in from_article
        if not any(term.strip() in text for term in re.split(r"[，,/]", zh) if term.strip())
    ]
    assert not missing, missing


@pytest.mark.parametrize("language", sorted(set(i18n.LANGUAGES) - {i18n.DEFAULT}))
def test_no_translation_uses_a_rejected_variant(language):
    rejected = {v: en for en, _zh, variants in _glossary_rows() for v in variants}
    found = []
    for message in _catalogs.read(_catalogs.po_path(language), language):
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        for text in strings:
            found += [(v, rejected[v], text) for v in rejected if v in (text or "")]
    assert found == []


def _marked_calls():
    for root in _catalogs.SOURCES:
        path = catalog.ROOT / root
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            tree = ast.parse(file.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                called = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                if called and node.func.id in CALLS and node.args:
                    yield file.relative_to(catalog.ROOT), node


def test_messages_are_literals_with_named_placeholders():
    """An f-string or ``%`` inside ``_()`` is never in the catalog (the extractor reads literals),
    and ``{}`` placeholders cannot be reordered by a translator (``{}`` in a code span is code:
    a claim's statement naming the empty dict, shown as it is)."""
    bad = []
    for file, node in _marked_calls():
        for arg in node.args[: 2 if node.func.id == "ngettext" else 1]:
            if isinstance(arg, ast.JoinedStr | ast.BinOp):
                bad.append(f"{file}:{node.lineno} builds its message")
            elif isinstance(arg, ast.Constant) and re.search(
                r"\{(:[^}]*)?\}", re.sub(r"`[^`]*`", "", str(arg.value))
            ):  # a literal {} in a code span is code, in a message never formatted
                bad.append(f"{file}:{node.lineno} has an unnamed placeholder")
    assert bad == []


def test_no_language_is_process_wide():
    """Two visitors, two languages, one process: no ``gettext.install``, no global catalog."""
    for root in _catalogs.SOURCES:
        path = catalog.ROOT / root
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            text = file.read_text(encoding="utf-8")
            assert not re.search(r"gettext\.install\(|builtins\._\b", text), file


@pytest.mark.parametrize("language", sorted(set(i18n.LANGUAGES) - {i18n.DEFAULT}))
def test_bold_closes_in_every_translation(language):
    """CommonMark does not close ``**`` after Chinese punctuation when text follows at once
    (``**原因：**{why}`` shows its asterisks): each message, filled, renders its bold as the
    English does."""
    from markdown_it import MarkdownIt

    render = MarkdownIt("commonmark").render
    broken = []
    for message in _catalogs.read(_catalogs.po_path(language), language):
        for source, text in zip(
            _catalogs.texts(message.id), _catalogs.texts(message.string), strict=False
        ):
            if "**" not in text:
                continue
            fill = {name: "甲" for name in _catalogs.placeholders(text)}
            shown = re.sub(r"<code>.*?</code>", "", render(text.format(**fill)))
            english = re.sub(r"<code>.*?</code>", "", render(source.format(**fill)))
            if "**" in shown and "**" not in english:
                broken.append(text)
    assert broken == []
