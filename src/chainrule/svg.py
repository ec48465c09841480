"""SVG for web pages: the figures (:mod:`chainrule.draw`) and the charts (:mod:`chainrule.plots`)."""

import html

__all__ = ["SVG_HEADER", "accessible_svg"]

SVG_HEADER = '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'


def accessible_svg(rendered, alt):
    """Turn an SVG document into an ``<svg>`` element for a web page, described by ``alt``.

    Everything before ``<svg`` (XML header, doctype, comments) is dropped.  The tag gets
    ``role="img"``, an ``aria-label`` and a first ``<title>`` child with the alt text, and
    a style that scales it down (never up) to the width of the page.
    """
    svg = rendered[rendered.index("<svg"):]
    end_of_tag = svg.index(">") + 1
    accessibility = (
        f' role="img" aria-label="{html.escape(alt, quote=True)}"'
        ' style="max-width:100%;height:auto"'
    )
    title = f"\n<title>{html.escape(alt, quote=False)}</title>"
    return svg[:4] + accessibility + svg[4:end_of_tag] + title + svg[end_of_tag:]
