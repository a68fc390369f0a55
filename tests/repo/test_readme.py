"""The README stays true: its two commands are the ones CI runs, and it lists every page."""

from __future__ import annotations

import re

from jaxplay.hosting import catalog

README = (catalog.ROOT / "README.md").read_text(encoding="utf-8")
CI = (catalog.ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_ci_runs_exactly_the_readme_test_command() -> None:
    blocks = re.findall(r"```bash\n(.*?)\n```", README, flags=re.S)
    test_commands = [b for b in blocks if "pytest" in b and "\n" not in b.strip()]
    assert test_commands, "README has no one-line test command"
    assert test_commands[0].strip() in CI.splitlines()


def test_readme_starts_the_app_with_streamlit_run() -> None:
    assert "streamlit run app.py" in README
    assert "pip install -r requirements.txt" in README


def test_readme_lists_every_page() -> None:
    for spec in catalog.TOPICS:
        assert f"`/{spec.url_path}`" in README, spec.url_path
        assert f"**{spec.title}**" in README, spec.title
