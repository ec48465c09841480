"""What several tiers' tests share: the seed's graph, the backward chapter's example, the recursive search
handed in where a stack is asked for, and right answers to the softplus row and the whole network's
backward pass (the course's checks and the grader's replay of them start from these), and generic
differentiators beside derivations (:data:`GENERIC`)."""

from chainrule import Value
from chainrule_course.exercises.scalar_checks import EXAMPLE_GRAPH

# The graph of seed 001 (Chapter 2's, which exercise 2.2's check uses) and the lines its
# recursive search printed for root "f": "v [...]" after each visit, "t [...]" after each
# finish, in this order.
SEED_PARENTS = EXAMPLE_GRAPH
SEED_PRINTED = [
    ("v", ["f"]),
    ("v", ["f", "d"]),
    ("v", ["f", "d", "x"]),
    ("t", ["x"]),
    ("v", ["f", "d", "x", "c"]),
    ("v", ["f", "d", "x", "c", "a"]),
    ("t", ["x", "a"]),
    ("v", ["f", "d", "x", "c", "a", "b"]),
    ("t", ["x", "a", "b"]),
    ("t", ["x", "a", "b", "c"]),
    ("t", ["x", "a", "b", "c", "d"]),
    ("t", ["x", "a", "b", "c", "d", "f"]),
]


#: The graph chapter's recursive depth-first search, handed in as the answer that asks for an explicit
#: stack: a chain deeper than Python's recursion limit stops it, in the notebook's check and the grade.
RECURSIVE_ORDER = """def dfs_order_with_stack(root, parents):
    order, seen = [], set()

    def visit(node):
        seen.add(node)
        for parent in parents[node]:
            if parent not in seen:
                visit(parent)
        order.append(node)

    visit(root)
    return order
"""


#: Three routes from inside an answer to the runner's globals, where the recursion rule's verdict was: an
#: instructor's trial replaced it through each and recursed 2/2 (tests/course and the graded set use them).
UNLOCKS = {
    "stdout": "type(sys.stdout).write.__globals__",
    "trace": "sys.gettrace().__func__.__globals__",
    "setter": "type(sys.setrecursionlimit).__call__.__globals__",
}
#: Put before a recursive answer, with ``unlock()`` called first in it: the setter saved at the top of
#: the cell, the verdict replaced, the trace function removed, and what else holds the real setter or a
#: limit of its own tried (sys's first dictionary through _imp or the garbage collector, a subinterpreter).
UNLOCK = """import sys
saved = sys.setrecursionlimit


def unlock():
    runner = {route}
    runner["_limit_changed"] = lambda entry, kept, depth: entry
    sys.settrace(None)
    for setter in (saved, runner["sys"].setrecursionlimit):
        setter(10**6)
    for attempt in (
        lambda: __import__("_imp").create_builtin(type(sys.__spec__)("sys", None)),
        lambda: [o for o in __import__("gc").get_objects() if isinstance(o, dict) and "setrecursionlimit" in o][0],
        lambda: __import__("_xxsubinterpreters"),
    ):
        try:
            found = attempt()
            found = found if isinstance(found, dict) else vars(found)
            found["setrecursionlimit"](10**6)
        except Exception:
            pass


"""


def seed_as_values():
    """The seed's dict graph built from Values, parents in the same order."""
    a, b, x = Value(1.0, "a"), Value(2.0, "b"), Value(3.0, "x")
    c = a * b
    c.label = "c"
    d = x + c
    d.label = "d"
    e = c.exp()  # uses c, but f does not depend on e
    e.label = "e"
    f = d.relu()
    f.label = "f"
    return f


def worked_example(fan_out=False):
    """The backward chapter's L = tanh(ab + c) at a = 2, b = -0.5, c = 0.5, with its labels;
    with ``fan_out``, its fan-out example L = tanh(ab + a)."""
    a, b, c = Value(2.0, label="a"), Value(-0.5, label="b"), Value(0.5, label="c")
    p = a * b
    p.label = "p"
    n = p + (a if fan_out else c)
    n.label = "n"
    L = n.tanh()
    L.label = "L"
    return L


#: A right answer to ex-layers-softplus-row: softplus as a row of the engine's rule table, its rule reading A.
SOFTPLUS_RIGHT = """import numpy as np
from chainrule.rules import Rule


def softplus_forward(a):
    return np.logaddexp(0.0, a)


def softplus_vjp(g, node, saved):
    a = saved[0]
    return (g * a.sigmoid(),)


def softplus_row():
    return Rule(softplus_forward, softplus_vjp, (("A",),), "softplus")
"""
#: A right answer to ex-capstone-network-backward: the whole network's backward pass in numpy.
NETWORK_ANSWER = """import numpy as np


def network_backward(E, W1, b1, gamma, beta, W2, b2, tokens, y):
    n = len(y)
    X = E[tokens].reshape(n, -1)
    Z = X @ W1.T + b1
    s = np.sqrt(Z.var(axis=0) + 1e-5)
    Z_hat = (Z - Z.mean(axis=0)) / s
    H = np.tanh(gamma * Z_hat + beta)
    O = H @ W2.T + b2
    P = np.exp(O - O.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    O_bar = (P - np.eye(len(b2))[y]) / n
    U_bar = (O_bar @ W2) * (1 - H * H)
    g = gamma * U_bar
    Z_bar = (g - g.mean(0) - Z_hat * (g * Z_hat).mean(0)) / s
    E_bar = np.zeros_like(E)
    np.add.at(E_bar, tokens, (Z_bar @ W1).reshape(*tokens.shape, -1))
    return (E_bar, Z_bar.T @ X, Z_bar.sum(0), (U_bar * Z_hat).sum(0),
            U_bar.sum(0), O_bar.T @ H, O_bar.sum(0))
"""


#: Generic ways to differentiate, none of them spelled as the review's scan looks for: what each is seen doing.
GENERIC = {
    "ridders": (
        "import math\ndef f(x, w, b):\n    return math.tanh(w * x + b)\n"
        "def grads(x, w, b):\n    def d(g, v, h=0.1):\n        table = []\n        for i in range(6):\n"
        "            table.append((g(v + h) - g(v - h)) / (2 * h))\n            h /= 1.4\n        return table[-1]\n"
        "    return d(lambda t: f(t, w, b), x), d(lambda t: f(x, t, b), w), d(lambda t: f(x, w, t), b)\n",
        ["nearby"],
    ),
    "richardson-inline": (
        "import math\ndef grads(x, w, b):\n    d = [(math.tanh(w * (x + h) + b) - math.tanh(w * (x - h) + b)) / (2 * h)"
        " for h in (1e-3, 5e-4)]\n    return (4 * d[1] - d[0]) / 3, 0.0, 0.0\n",
        ["nearby"],
    ),
    "complex-helper": (
        "import math\ndef th(z):\n    return (math.e ** (2 * z) - 1) / (math.e ** (2 * z) + 1)\n"
        "def grads(x, w, b):\n    i = 1e-20 * (-1) ** 0.5\n"
        "    d = [th((w + v) * (x + u) + b + c) for u, v, c in ((i, 0, 0), (0, i, 0), (0, 0, i))]\n"
        "    return tuple(getattr(z, 'im' + 'ag') / 1e-20 for z in d)\n",
        ["complex"],
    ),
    "dual-numbers": (
        "import math\nclass D:\n    def __init__(s, a, b):\n        s.a, s.b = a, b\n"
        "    def __mul__(s, o):\n        o = o if isinstance(o, D) else D(o, 0)\n"
        "        return D(s.a * o.a, s.a * o.b + s.b * o.a)\n    __rmul__ = __mul__\n"
        "    def __add__(s, o):\n        o = o if isinstance(o, D) else D(o, 0)\n"
        "        return D(s.a + o.a, s.b + o.b)\n    __radd__ = __add__\n"
        "def grads(x, w, b):\n    out = []\n    for k in range(3):\n"
        "        z = D(w, k == 1) * D(x, k == 0) + D(b, k == 2)\n        t = math.tanh(z.a)\n"
        "        out.append((1 - t * t) * z.b)\n    return tuple(out)\n",
        ["numbers"],
    ),
    "renamed-operators": (
        "import math\nclass N:\n    def __init__(s, a, b):\n        s.a, s.b = a, b\n"
        "def times(s, o):\n    return N(s.a * o.a, s.a * o.b + s.b * o.a)\n"
        "def plus(s, o):\n    return N(s.a + o.a, s.b + o.b)\nN.__mul__, N.__add__ = times, plus\n"
        "def grads(x, w, b):\n    out = []\n    for k in range(3):\n"
        "        z = N(w, k == 1) * N(x, k == 0) + N(b, k == 2)\n        t = math.tanh(z.a)\n"
        "        out.append((1 - t * t) * z.b)\n    return tuple(out)\n",
        ["numbers"],
    ),
    # Derivations, however written: a helper called at several points (z and -z among them), a recursion
    # 999 calls deep that calls math at the bottom (the observer's frames do not count against it).
    "honest": (
        "import math\ndef sig(v):\n    return 1 / (1 + math.exp(-v))\ndef grads(x, w, b):\n"
        "    z = w * x + b\n    t = 2 * sig(2 * z) - 1\n    s = 1 - t * t + 0 * (sig(z) - sig(-z) - sig(x) - sig(w))\n"
        "    return s * w, s * x, s\n",
        [],
    ),
    "honest-deep": (
        "import math\ndef grads(x, w, b, n=998):\n    if n:\n        return grads(x, w, b, n - 1)\n"
        "    s = 1 - math.tanh(w * x + b) ** 2\n    return s * w, s * x, math.sqrt(s) ** 2\n",
        [],
    ),
}
