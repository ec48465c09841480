"""Reading the DOT text and the SVG of a figure, for the tests of the engine's figures and the course's."""

import re

NODE_LINE = re.compile(r"^\s*(n\d+(?:_op)?) \[label=(<.*>|\"[^\"]*\")(.*)\]$")
EDGE_LINE = re.compile(r"^\s*(n\d+(?:_op)?) -> (n\d+(?:_op)?)(?: \[(.*)\])?$")
ATTRIBUTE = re.compile(r"(\w+)=(<.*?>(?= \w+=|$)|\"[^\"]*\"|\S+)")


def attributes(text):
    """Parse ``key=value`` pairs of a DOT attribute list (quotes removed)."""
    return {key: value.strip('"') for key, value in ATTRIBUTE.findall(text or "")}


def dot_nodes(source):
    """Map node id -> (label, attributes) for every node statement in DOT text."""
    nodes = {}
    for line in source.splitlines():
        match = NODE_LINE.match(line)
        if match:
            node_id, label, rest = match.groups()
            nodes[node_id] = (label, attributes(rest))
    return nodes


def dot_edges(source):
    """List (tail, head, attributes) for every edge statement, in order."""
    edges = []
    for line in source.splitlines():
        match = EDGE_LINE.match(line)
        if match:
            tail, head, rest = match.groups()
            edges.append((tail, head, attributes(rest)))
    return edges


def plain_text(label):
    """The visible text of a label: tags dropped, <BR/> as a newline, table rows joined by |."""
    text = label[1:-1] if label.startswith("<") else label.strip('"')
    text = re.sub(r"<BR/>", "\n", text)
    text = text.replace("</TR>", "|")
    return re.sub(r"<[^>]*>", "", text).strip("|")


def node_by_name(source, name):
    """The (id, attributes) of the DFS-figure node whose first label line is ``name``."""
    found = [
        (node_id, attrs)
        for node_id, (label, attrs) in dot_nodes(source).items()
        if plain_text(label).split("\n")[0] == name
    ]
    assert len(found) == 1, f"expected one node named {name!r}, found {found}"
    return found[0]


def smallest_text_px(figure):
    """The size in CSS pixels of the figure's smallest text when drawn at its min-width."""
    svg = figure.svg()
    tag = svg[: svg.index(">") + 1]
    min_width = float(re.search(r"min-width:(\d+)px", tag).group(1))
    view_box_width = float(re.search(r'viewBox="\S+ \S+ (\S+) \S+"', tag).group(1))
    smallest = min(float(size) for size in re.findall(r'font-size="([\d.]+)"', svg))
    return smallest * min_width / view_box_width
