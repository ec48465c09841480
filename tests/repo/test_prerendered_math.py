"""The maths typeset in Node when the book is built (_ext/prerendered_math.py and .js).

tests/built/test_build.py builds a book with a TeX error (the build fails); tests/built/test_book.py and
tests/browser/test_browser.py check the built pages. Here: the node script's answers themselves.
"""

from __future__ import annotations

from _ext import prerendered_math


def test_inline_and_display_maths_get_mathml_and_one_stylesheet_per_page():
    first, second = prerendered_math.typeset(
        [
            [
                (r"\bar u = \sum_e \bar v\, \partial v / \partial u", False),
                (r"\begin{equation*}x^2\end{equation*}", True),
            ],
            [(r"\mathbb{R}^{n}", False)],
        ]
    )
    assert len(first["html"]) == 2 and len(second["html"]) == 1
    assert all("<mjx-assistive-mml" in html and "<math" in html for html in first["html"] + second["html"])
    assert 'display="true"' in first["html"][1] and 'display="true"' not in first["html"][0]
    assert first["errors"] == [] and second["errors"] == []
    # each page's stylesheet holds its own characters: the double-struck R is on the second page only
    assert "mjx-c211D" in second["html"][0], second["html"][0]
    assert "mjx-c211D" in second["css"] and "mjx-c211D" not in first["css"], "a stylesheet holds another page's"
    assert prerendered_math.FONT_URL in first["css"] and "font-size: calc(1ex / 0.442)" in first["css"]


def test_tex_errors_are_reported_with_their_formula():
    (page,) = prerendered_math.typeset([[("x + y", False), (r"\notamacro x", False), (r"\frac{1}{", True)]])
    assert [index for index, _ in page["errors"]] == [1, 2], page["errors"]
    assert "notamacro" in page["errors"][0][1] and "brace" in page["errors"][1][1].lower()


def test_the_placeholders_are_filled_in_order_and_the_fonts_found_from_the_page():
    text = (
        "<html><head><title>t</title></head><body>"
        '<span class="math"><mjx-tex display="false">a &lt; b</mjx-tex></span>'
        '<div class="math"><mjx-tex display="true">c</mjx-tex></div></body></html>'
    )
    typeset_page = {"html": ["<i>first</i>", "<i>second</i>"], "css": f'url("{prerendered_math.FONT_URL}/x.woff")'}
    filled = prerendered_math.fill_page(text, typeset_page, "../_static/mathjax/woff-v2")
    assert filled.index("first") < filled.index("second") and "<mjx-tex" not in filled
    assert '<style id="MJX-CHTML-styles">' in filled.split("</head>")[0]
    assert 'url("../_static/mathjax/woff-v2/x.woff")' in filled


def test_a_formula_keeps_the_punctuation_that_touches_it_on_its_line():
    formula = '<span class="math notranslate nohighlight"><mjx-tex display="false">(c, \\tau)</mjx-tex></span>'
    text = f"pairs {formula}. Then ({formula}), {formula} and {formula}"
    together = prerendered_math.keep_together(text)
    assert together == (
        f'pairs <span class="cr-together">{formula}.</span> Then <span class="cr-together">({formula}),</span> '
        f"{formula} and {formula}"
    ), together
    display = '<div class="math"><mjx-tex display="true">x</mjx-tex></div>.'
    assert prerendered_math.keep_together(display) == display


def test_a_page_whose_formulas_are_unchanged_is_not_typeset_again(tmp_path, monkeypatch):
    sent = []
    real = prerendered_math.typeset

    def counted(pages):
        sent.extend(pages)
        return real(pages)

    monkeypatch.setattr(prerendered_math, "typeset", counted)
    first = [[("x^2", False)], [(r"\notamacro", False)], [("y", True)]]
    names = ["a.html", "chapters/b.html", "c.html"]
    fresh = prerendered_math.typeset_cached(first, names, tmp_path)
    assert len(sent) == 3 and fresh[1]["errors"]
    sent.clear()
    again = prerendered_math.typeset_cached([first[0], first[1], [("z", True)]], names, tmp_path)
    # a.html is kept; b.html's TeX error is not (its warning must come again); c.html changed
    assert sent == [first[1], [("z", True)]]
    assert again[0] == fresh[0] and again[1]["errors"] and again[2]["html"] != fresh[2]["html"]
