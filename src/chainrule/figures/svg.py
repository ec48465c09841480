"""SVG for web pages: an accessible ``<svg>`` for each figure (:mod:`chainrule.figures.draw`), legible on a phone."""

import html
import math
import re

__all__ = ["MIN_TEXT_PX", "SVG_HEADER", "accessible_svg", "scrolling_figure"]

SVG_HEADER = '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'

#: The smallest text, in CSS pixels, a figure may show: legible on a 390 px phone.
MIN_TEXT_PX = 9


def accessible_svg(rendered, alt, text_size=None):
    """Turn an SVG document into an ``<svg>`` element for a web page, described by ``alt``.

    Everything before ``<svg`` (XML header, doctype, comments) is dropped.  The tag gets
    ``role="img"``, an ``aria-label`` and a first ``<title>`` child with the alt text, and
    a style that scales it down (never up) to the width of the page, but never so far
    that its smallest text is below :data:`MIN_TEXT_PX` (see :func:`smallest_width`).
    ``text_size`` is the smallest font size, in the SVG's units, for an SVG whose text
    is drawn as paths (matplotlib's), which carries no ``font-size`` to read.
    """
    svg = rendered[rendered.index("<svg") :]
    end_of_tag = svg.index(">") + 1
    floor = smallest_width(svg, text_size)
    min_width = f";min-width:{floor}px" if floor else ""
    accessibility = (
        f' role="img" aria-label="{html.escape(alt, quote=True)}" style="max-width:100%;height:auto{min_width}"'
    )
    title = f"\n<title>{html.escape(alt, quote=False)}</title>"
    return svg[:4] + accessibility + svg[4:end_of_tag] + title + svg[end_of_tag:]


def smallest_width(svg, text_size=None):
    """The width in CSS px below which the SVG's smallest text would be under MIN_TEXT_PX.

    Text of ``font-size`` f (in the viewBox's units) in a viewBox w units wide is
    f * width / w px when the figure is drawn ``width`` px wide; it is at least
    MIN_TEXT_PX from width = MIN_TEXT_PX * w / f on, for the smallest f: that of the
    SVG's ``font-size`` attributes, else ``text_size``.  Returns None when there is
    neither.
    """
    tag = svg[: svg.index(">") + 1]
    view_box = re.search(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+) [\d.]+"', tag)
    sizes = [float(size) for size in re.findall(r'font-size="([\d.]+)"', svg)] or (
        [float(text_size)] if text_size else []
    )
    if not view_box or not sizes:
        return None
    return math.ceil(MIN_TEXT_PX * float(view_box.group(1)) / min(sizes))


def scrolling_figure(svg):
    """``svg`` in a box that scrolls sideways when the SVG's minimum width exceeds the page's.

    A large graph on a phone keeps its text legible, and the reader scrolls it, instead of
    shrinking to unreadable text.
    """
    return f'<div class="chainrule-figure" style="overflow-x:auto">{svg}</div>'
