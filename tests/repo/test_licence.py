"""The course's licences: CC BY-SA 4.0 for the text and figures, MIT for the code, said wherever a reader looks.

The wheel's metadata is checked in tests/built/test_package.py and the PDF's first page in
tests/built/test_pdf.py, the site's footers in tests/built/test_book.py; this file checks the
repository.
"""

from __future__ import annotations

import tomllib
from common import ROOT

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
