"""Less for a reader's browser to download: the themes' stylesheets and icon fonts cut to what the book uses.

The themes' stylesheets hold all of Bootstrap, sphinx-design and Font Awesome's class list
(``pydata-sphinx-theme.css`` alone is 397 KB). After an HTML build PurgeCSS (npm, pinned
in package-lock.json) writes each of ``PURGED`` again with only the rules whose classes,
ids and attribute values occur in a page or in a script of ``_static`` (the classes
Bootstrap's and the themes' scripts add, such as ``show``, are named in them; the tooltips'
placement classes, which Bootstrap composes, are kept by name: ``SAFELIST``).
``tests/browser/test_weight.py`` compares every element's computed style on pages, light and dark,
wide and narrow, with the themes' whole stylesheets and with the cut ones.

The theme also draws its icons (menu, search, download, colour mode, GitHub...) from Font
Awesome's web fonts: ``fa-solid-900.woff2`` (156 KB) and ``fa-brands-400.woff2`` (118 KB)
hold about 2,000 icons, and the book shows about twenty. After an HTML build each font
in ``_static/vendor/fontawesome/webfonts`` is written again with only the glyphs the
book can draw (fontTools' subsetter; brotli compresses the WOFF2):

* the icons of every ``fa-*`` class named in a page or in a script of ``_static``, looked
  up in the stylesheets' ``.fa-name:before{content:"\\f0c9"}`` rules;
* every other glyph beyond ASCII a stylesheet writes, escaped or not (admonition,
  dropdown and link icons).

``tests/browser/test_weight.py`` opens every page and checks that each icon it draws is in the
font it loads. The search index (``searchindex.js``, 92 KB, with ``searchtools.js`` and
``language_data.js``) is left off every page but the search page by the ``layout.html``
override in ``_ext/templates``: the theme loads it for search-as-you-type, which is off,
so the search box sends its query to the search page.

Registered in ``_config.yml`` under ``sphinx: extra_extensions``.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: The build's copy of the theme's Font Awesome web fonts.
FONTS = Path("_static") / "vendor" / "fontawesome" / "webfonts"
RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
ICON_SELECTOR = re.compile(r"\.(fa-[a-z0-9-]+)::?(?:before|after)")
ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?")
CLASS = re.compile(r"\bfa-[a-z0-9-]+")
#: The themes' stylesheets PurgeCSS cuts (paths under the build); the book's own are small and kept whole.
PURGED = [
    "_static/styles/pydata-sphinx-theme.css",
    "_static/styles/sphinx-book-theme.css",
    "_static/sphinx-design.min.css",
    "_static/basic.css",
    "_static/mystnb.*.css",
]
PURGECSS = Path("node_modules") / "purgecss" / "bin" / "purgecss.js"
#: Classes that Bootstrap's script composes (``bs-${name}-auto``), so that no file names them whole.
SAFELIST = [
    f"bs-{widget}-{side}" for widget in ("tooltip", "popover") for side in ("auto", "top", "end", "bottom", "start")
]


def string_glyphs(string: str) -> set[int]:
    """The characters beyond ASCII of a CSS string, escaped (``\\f0c9``) or not."""
    escaped = {int(code, 16) for code in ESCAPE.findall(string)}
    return escaped | {ord(character) for character in ESCAPE.sub("", string) if ord(character) > 0x7F}


def css_glyphs(css: str) -> tuple[dict[str, set[int]], set[int]]:
    """(the icon of each ``fa-*`` class, every other glyph a rule writes) in a stylesheet."""
    icons: dict[str, set[int]] = {}
    others: set[int] = set()
    for selectors, body in RULE.findall(css):
        glyphs = {glyph for string in re.findall(r'"([^"]*)"', body) for glyph in string_glyphs(string)}
        if not glyphs:
            continue
        selectors = [selector.strip() for selector in selectors.split(",")]
        classes = [ICON_SELECTOR.fullmatch(selector) for selector in selectors]
        if all(classes):
            for match in filter(None, classes):  # all matched: the filter only tells mypy so
                icons.setdefault(match.group(1), set()).update(glyphs)
        else:
            others |= glyphs
    return icons, others


def used_glyphs(outdir: Path) -> set[int]:
    """The code points of every icon the built site can show."""
    icons: dict[str, set[int]] = {}
    glyphs: set[int] = set()
    for stylesheet in (outdir / "_static").rglob("*.css"):
        found, others = css_glyphs(stylesheet.read_text(encoding="utf-8", errors="replace"))
        for name, codes in found.items():
            icons.setdefault(name, set()).update(codes)
        glyphs |= others
    sources = [*outdir.rglob("*.html"), *(outdir / "_static").rglob("*.js")]
    names = {name for path in sources for name in CLASS.findall(path.read_text(encoding="utf-8", errors="replace"))}
    for name in names:
        glyphs |= icons.get(name, set())
    return glyphs


def subset_font(source: Path, target: Path, glyphs: set[int]) -> None:
    """Write ``source`` to ``target`` with only the glyphs of ``glyphs`` it has."""
    from fontTools import subset  # a dependency of matplotlib; brotli (requirements.txt) writes WOFF2
    from fontTools.ttLib import TTFont

    font = TTFont(io.BytesIO(source.read_bytes()))  # read whole: the target may be the source
    options = subset.Options()
    options.flavor = "woff2" if source.suffix == ".woff2" else None
    options.layout_features = ["*"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=glyphs & set(font.getBestCmap()))
    subsetter.subset(font)
    font.flavor = options.flavor
    font.save(target)


def subset_icon_fonts(app: Sphinx, exception: Exception | None) -> None:
    """After an HTML build, cut the theme's icon fonts to the icons the site shows.

    Sphinx copies the theme's fonts into the build at every build, so each is cut from the whole.
    """
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    glyphs = used_glyphs(outdir)
    for font in sorted((outdir / FONTS).glob("fa-*")):
        subset_font(font, font, glyphs)
    logger.info("page_weight: the icon fonts cut to %d glyphs", len(glyphs))


def whole_stylesheets(outdir: Path) -> Path:
    """Where the themes' stylesheets are kept whole, beside the build (``_build/html-whole-css``)."""
    return outdir.parent / f"{outdir.name}-whole-css"


def purge_stylesheets(app: Sphinx, exception: Exception | None) -> None:
    """After an HTML build, cut the themes' stylesheets (``PURGED``) to the rules the site uses.

    Sphinx copies the themes' files into the build at every build, so each is cut from the whole.
    """
    if exception is not None or app.builder.format != "html":
        return
    root = Path(getattr(app.config, "live_code_root", None) or app.confdir).resolve()  # the student site's too
    if not (root / PURGECSS).is_file():
        raise ExtensionError(f"page_weight: {root / PURGECSS} is missing; run `make setup` (npm ci)")
    outdir = Path(app.outdir)
    stylesheets = [path for pattern in PURGED for path in sorted(outdir.glob(pattern))]
    whole = whole_stylesheets(outdir)
    for path in stylesheets:  # as Sphinx copied them, for tests/browser/test_weight.py's comparison
        (whole / path.relative_to(outdir)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, whole / path.relative_to(outdir))
    content = [str(outdir / "**" / "*.html"), str(outdir / "_static" / "**" / "*.js")]
    for folder in sorted({path.parent for path in stylesheets}):
        css = [str(path) for path in stylesheets if path.parent == folder]
        command = ["node", str(root / PURGECSS), "--css", *css, "--content", *content, "--output", str(folder)]
        command += ["--safelist", *SAFELIST]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise ExtensionError(f"page_weight: PurgeCSS failed on {css}:\n{result.stderr}")
    logger.info("page_weight: %d stylesheets cut to the rules the pages use", len(stylesheets))


def setup(app: Sphinx) -> dict:
    app.connect("build-finished", purge_stylesheets)
    app.connect("build-finished", subset_icon_fonts)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
