"""The slips a reader makes in one edge's local gradient, said alike wherever a local gradient is asked for.

The backward chapter's drill of a local gradient (``chainrule_course.drills.graph_kinds``) asks for
∂child/∂parent; the backward widget's "Predict, then reveal" mode (:mod:`.values`) asks for the
product that has it as a factor. Both take the slips from :func:`local_slips` and name the one a
guess fits with :func:`chainrule_course.exercises.mistakes.named_slip`, so a product's factors
swapped, say, get the same name and the same words in both.
"""

#: A guess is right this close to the answer, or this share of it when that is more: the widget's
#: closeEnough (explorable.js) and the drills' close (``chainrule_course.drills.reading``) agree with it.
ABSOLUTE, RELATIVE = 0.01, 0.005


def close(guess, answer):
    """Whether ``guess`` is ``answer`` within the tolerance the widget checks a guess with."""
    return abs(guess - answer) <= max(ABSOLUTE, RELATIVE * abs(answer))


def partial(top, bottom):
    """``∂top/∂bottom``."""
    return f"\u2202{top}/\u2202{bottom}"


def local_slips(child, index, rule, name, root):
    """What each slip a reader makes gives for the local gradient ∂child/∂(its input ``index``), by its
    words, with its name: ``{words: (name, value)}``.

    ``child`` is a :class:`~chainrule.value.Value` whose graph's ``backward()`` has run; ``rule`` is the
    local gradient as a formula in the nodes' names (``"b"`` for ``p = a · b``), or its number;
    ``name(node)`` gives a node's name and ``root`` the output's. The slips: the sign flipped, the
    parent's global gradient, the child's value, and the local gradient of each other edge into the
    child (for a product, its factors swapped).
    """
    parent = child.parents[index]
    c, p = name(child), name(parent)
    slips = {
        f"The sign is wrong: {partial(c, p)} = {rule}.": ("the sign", -child.local_grads[index]),
        f"That is the global gradient {partial(root, p)}. The local gradient looks at {c} alone, with its "
        "other inputs held fixed.": ("global for local", parent.grad),
        f"That is the value of {c}, not its local gradient.": ("the value", child.data),
    }
    for i, other in enumerate(child.parents):
        if other is not parent:
            words = f"That is {partial(c, name(other))}, the local gradient of the other edge into {c}."
            slips[words] = ("the other edge's local gradient", child.local_grads[i])
    return slips
