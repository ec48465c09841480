"""The course's licences: CC BY-SA 4.0 for the text and figures, MIT for the code, said wherever a reader looks.

The wheel's metadata is checked in tests/test_package.py and the PDF's first page in
tests/test_pdf.py; this file checks the repository and the site.
"""

from __future__ import annotations

import pytest
import tomllib
from conftest import ROOT

TEXT = "CC BY-SA 4.0"
CODE = "MIT"


def test_both_licence_files_hold_their_legal_text():
    code = (ROOT / "LICENSE").read_text()
    assert code.startswith("MIT License") and "Permission is hereby granted, free of charge" in code
    assert "see LICENSE-TEXT" in code
    text = (ROOT / "LICENSE-TEXT").read_text()
    assert "Creative Commons Attribution-ShareAlike 4.0 International Public License" in text
    assert "Section 3 – License Conditions." in text


def test_the_package_the_readme_and_the_first_page_name_both():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == CODE and project["license-files"] == ["LICENSE"]
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"licensed under {TEXT} ([`LICENSE-TEXT`](LICENSE-TEXT))" in readme
    assert f"under the {CODE} licence ([`LICENSE`](LICENSE))" in readme
    index = " ".join((ROOT / "chapters" / "index.md").read_text().split())
    assert f"licensed under {TEXT} and the code under the {CODE} licence" in index


@pytest.mark.full
def test_every_page_of_the_site_says_the_licences_in_its_footer():
    from bs4 import BeautifulSoup

    pages = sorted((ROOT / "_build" / "html" / "chapters").glob("*.html"))
    assert len(pages) > 10
    for page in pages:
        footer = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").find("p", class_="licence")
        assert footer is not None and footer.get_text() == f"Text and figures: {TEXT}. Code: {CODE}.", page.name
