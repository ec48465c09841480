"""Maths typeset when the book is built, so a reader's browser loads no MathJax.

MathJax 3 (``tex-mml-chtml.js``, 1.17 MB) used to be sent with every page and typeset the
maths in the reader's browser. Now MathJax runs once, in Node, when the book is built
(``_ext/prerendered_math.js``), and each page carries its maths as MathJax's CommonHTML,
with the MathML beside it for screen readers, and a stylesheet of only the characters it
uses. The reader's browser loads only the MathJax fonts a page draws (from
``_static/mathjax/woff-v2``): the same maths, the same fonts, nothing to wait for.

How:

1. The math renderer ``prerendered`` writes each formula as Sphinx's MathJax renderer
   does (the same numbering and ``split``/``align`` wrapping), but between
   ``<mjx-tex display="...">`` tags instead of ``\\(``/``\\[`` delimiters.
2. When the build has finished, every HTML page holding such tags (all of them: every
   build writes every page) is sent to one Node process, unless its formulas are those of
   its last build, typeset then (kept beside the doctrees). The tags are replaced by
   MathJax's output and the page's stylesheet goes into its ``<head>``.
3. A TeX error, an undefined macro included, is a warning naming the page and the TeX,
   so ``jupyter-book build -W`` fails.

MathJax's files come from the ``django-static-mathjax`` wheel (MathJax 3.2.2; importable as
``mathjax``, Django is not needed); Node is a Debian package that ``make book`` installs.
Registered in ``_config.yml`` under ``sphinx: extra_extensions``.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ExtensionError
from sphinx.ext import mathjax as sphinx_mathjax
from sphinx.util import logging

logger = logging.getLogger(__name__)

RENDERER = "prerendered"
SCRIPT = Path(__file__).with_suffix(".js")
#: Where the fonts go, under the build's ``_static``; MathJax's stylesheet names them.
FONTS = "mathjax/woff-v2"
#: The placeholder the node script gives the stylesheet's font URLs.
FONT_URL = "MJX-FONT-URL"
INLINE = ('<mjx-tex display="false">', "</mjx-tex>")
DISPLAY = ('<mjx-tex display="true">', "</mjx-tex>")
PLACEHOLDER = re.compile(r'<mjx-tex display="(true|false)">(.*?)</mjx-tex>', re.DOTALL)
#: An inline formula with the brackets and punctuation that touch it. A formula is an inline
#: block, and a browser may break a line between it and the comma after it, which then starts
#: the next line; :func:`keep_together` keeps them on one line.
TOUCHING = re.compile(
    r"([(\[]?)(<span [^>]*\bclass=\"math\b[^>]*>"
    + re.escape(INLINE[0])
    + r"(?:(?!</mjx-tex>).)*"
    + re.escape(INLINE[1])
    + r"</span>)([.,;:!?)\]]*)",
    re.DOTALL,
)
NODE_TIMEOUT_S = 600
STATIC_LINK = re.compile(r'<(?:script|link)\b[^>]*\b(?:src|href)="((?:\.\./)*)_static/')


def mathjax_folder() -> Path:
    """MathJax 3's ``es5`` folder in the django-static-mathjax wheel (``node-main.js``, the fonts)."""
    try:
        import mathjax  # the django-static-mathjax wheel
    except ImportError as error:
        raise ExtensionError(
            "prerendered_math: cannot import 'mathjax'; install the django-static-mathjax "
            "package (it is in requirements.txt: run `make book`, which installs it)"
        ) from error
    folder = Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"
    if not (folder / "node-main.js").is_file():
        raise ExtensionError(
            f"prerendered_math: {folder / 'node-main.js'} does not exist; the installed "
            "django-static-mathjax does not contain MathJax 3 (expected version 3.2.x)"
        )
    return folder


def use_placeholders(app: Sphinx, config: Config) -> None:
    """Make ``prerendered`` the HTML math renderer, writing placeholders for Node."""
    mathjax_folder()  # fail early, before any page is read
    if not shutil.which("node"):
        raise ExtensionError("prerendered_math: `node` is not on PATH (make book installs the nodejs package)")
    config.html_math_renderer = RENDERER
    config.mathjax_inline = list(INLINE)
    config.mathjax_display = list(DISPLAY)


def visit_displaymath(self, node: nodes.math_block) -> None:
    """Sphinx's MathJax visitor, but with the placeholder around ``nowrap`` maths too
    (myst's amsmath environments, which MathJax in the browser found by themselves)."""
    if node["nowrap"]:
        self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
        self.body.append(DISPLAY[0] + self.encode(node.astext()) + DISPLAY[1] + "</div>\n")
        raise nodes.SkipNode
    sphinx_mathjax.html_visit_displaymath(self, node)


def typeset(pages: list[list[tuple[str, bool]]]) -> list[dict]:
    """Run the node script on every page's formulas (TeX, display); see prerendered_math.js."""
    request = {"pages": [{"items": [{"tex": tex, "display": display} for tex, display in page]} for page in pages]}
    result = subprocess.run(
        ["node", str(SCRIPT), str(mathjax_folder())],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise ExtensionError(f"prerendered_math: MathJax in Node failed:\n{result.stderr}")
    return json.loads(result.stdout)["pages"]


def typeset_cached(pages: list[list[tuple[str, bool]]], names: list[str], cache: Path) -> list[dict]:
    """:func:`typeset`, but a page whose formulas, script and MathJax are those of its last build
    (a hash of them, kept in ``cache`` under the page's name) takes its typeset maths from there.

    A page with a TeX error is not kept, so its warning comes again at every build.
    """
    salt = SCRIPT.read_bytes() + version("django-static-mathjax").encode()
    keys = [hashlib.sha256(salt + json.dumps(page).encode()).hexdigest() for page in pages]
    paths = [cache / f"{name}.json" for name in names]
    kept = [json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {} for path in paths]
    done = {i: entry["typeset"] for i, entry in enumerate(kept) if entry.get("key") == keys[i]}
    missing = [i for i in range(len(pages)) if i not in done]
    for i, typeset_page in zip(missing, typeset([pages[i] for i in missing]) if missing else [], strict=True):
        done[i] = typeset_page
        if not typeset_page["errors"]:
            paths[i].parent.mkdir(parents=True, exist_ok=True)
            paths[i].write_text(json.dumps({"key": keys[i], "typeset": typeset_page}), encoding="utf-8")
    return [done[i] for i in range(len(pages))]


def keep_together(text: str) -> str:
    """Each inline formula with a bracket before it or punctuation after it, in one span that
    does not wrap (``cr-together``, _static/course.css)."""
    return TOUCHING.sub(
        lambda match: f'<span class="cr-together">{match[0]}</span>' if match[1] or match[3] else match[0], text
    )


def fill_page(text: str, typeset_page: dict, font_url: str) -> str:
    """The page with its placeholders replaced by MathJax's output and its stylesheet in <head>."""
    formulas = iter(typeset_page["html"])
    text = PLACEHOLDER.sub(lambda match: next(formulas), keep_together(text))
    style = '<style id="MJX-CHTML-styles">\n' + typeset_page["css"].replace(FONT_URL, font_url) + "</style>\n"
    return text.replace("</head>", style + "</head>", 1)


def static_prefix(text: str, path: Path, outdir: Path) -> str:
    """The path from ``path`` to the build's ``_static`` folder, as the page's own links write it.

    That is ``../`` per folder, except on the single-page build (make pdf), whose page Sphinx
    writes as ``chapters/index.html`` with every link as if it sat at the root.
    """
    link = STATIC_LINK.search(text)
    if link:
        return link.group(1) + "_static/"
    return os.path.relpath(outdir / "_static", path.parent).replace(os.sep, "/") + "/"


def typeset_pages(app: Sphinx, exception: Exception | None) -> None:
    """After an HTML build, typeset the maths of every page that still holds placeholders."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    fonts = outdir / "_static" / FONTS
    if (fonts.parent / "tex-mml-chtml.js").is_file():
        shutil.rmtree(fonts.parent)  # a build from before the maths were typeset here
    shutil.copytree(mathjax_folder() / "output" / "chtml" / "fonts" / "woff-v2", fonts, dirs_exist_ok=True)
    paths = [path for path in sorted(outdir.rglob("*.html")) if "<mjx-tex " in path.read_text(encoding="utf-8")]
    if not paths:
        return
    texts = [path.read_text(encoding="utf-8") for path in paths]
    formulas = [[(html.unescape(tex), display == "true") for display, tex in PLACEHOLDER.findall(t)] for t in texts]
    names = [path.relative_to(outdir).as_posix() for path in paths]
    cache = Path(app.doctreedir) / "prerendered_math" / app.builder.name
    typeset_all = typeset_cached(formulas, names, cache)
    for path, page_name, text, page, typeset_page in zip(paths, names, texts, formulas, typeset_all, strict=True):
        for index, message in typeset_page["errors"]:
            logger.warning("prerendered_math: %s: TeX error in %r: %s", page_name, page[index][0], message)
        font_url = static_prefix(text, path, outdir) + FONTS
        path.write_text(fill_page(text, typeset_page, font_url), encoding="utf-8")
    logger.info("prerendered_math: typeset %d formulas on %d pages", sum(map(len, formulas)), len(paths))


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx.ext.mathjax")  # its inline visitor, and its displaymath one for wrapped maths
    app.add_html_math_renderer(
        RENDERER,
        inline_renderers=(sphinx_mathjax.html_visit_math, None),
        block_renderers=(visit_displaymath, None),
    )
    app.connect("config-inited", use_placeholders, priority=900)
    app.connect("build-finished", typeset_pages)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
