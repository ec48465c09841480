"""The messages of an op's shape errors in the forward pass.

numpy's own messages name neither the op nor which dim failed. A rule's ``shape_error``
(:mod:`chainrule.rules`) turns the shapes (and args) of a failed forward into one that
does; :mod:`chainrule.arguments` words a bad axis the same way.
"""

import math


def axis_message(op, axis, shape):
    """An axis that is out of range or repeated, for ``op`` on a tensor of ``shape``."""
    return (
        f"{op}: axis {axis} is not valid for a tensor of shape {shape}: axes must be distinct "
        f"and in [-{len(shape)}, {len(shape)})"
    )


def broadcast_mismatch(left, right):
    """Describe the first pair of sizes, from the right, that cannot be broadcast."""
    for i in range(1, max(len(left), len(right)) + 1):
        m = left[-i] if i <= len(left) else 1
        n = right[-i] if i <= len(right) else 1
        if m != n and m != 1 and n != 1:
            return (
                f"{m} (dim {len(left) - i} of the left) vs {n} (dim {len(right) - i} of the right); "
                "sizes are matched from the last dim and must be equal or 1"
            )
    return "the sizes are matched from the last dim and must be equal or 1"


def elementwise_error(name, shapes, args):
    left, right = shapes
    return f"{name}: shapes {left} and {right} cannot be broadcast together: {broadcast_mismatch(left, right)}"


def matmul_error(name, shapes, args):
    left, right = shapes
    if not left or not right:
        return f"matmul: shapes {left} and {right}: both operands need at least one dim (use * to multiply by a scalar)"
    i = len(left) - 1
    j = len(right) - 2 if len(right) >= 2 else 0
    if left[i] != right[j]:
        return (
            f"matmul: shapes {left} and {right} are not aligned: "
            f"{left[i]} (dim {i} of the left) != {right[j]} (dim {j} of the right)"
        )
    return (
        f"matmul: shapes {left} and {right}: the batch dims {left[:-2]} and {right[:-2]} cannot be "
        f"broadcast together: {broadcast_mismatch(left[:-2], right[:-2])}"
    )


def reshape_error(name, shapes, args):
    ((shape,), (new_shape,)) = shapes, args
    size = math.prod(shape)
    return f"reshape: cannot reshape a tensor of shape {shape} ({size} elements) into shape {new_shape}"


def broadcast_to_error(name, shapes, args):
    ((shape,), (target,)) = shapes, args
    return f"broadcast_to: cannot broadcast shape {shape} to {target}: {broadcast_mismatch(shape, target)}"


def axis_error(name, shapes, args):
    return axis_message(name, args[0], shapes[0])


def max_error(name, shapes, args):
    ((shape,), (axis, _)) = shapes, args
    where = "" if axis is None else f" along axis {axis}"
    return f"max: the tensor of shape {shape} is empty{where}, and an empty set has no largest value"


def transpose_error(name, shapes, args):
    ((shape,), (axes,)) = shapes, args
    return f"transpose: axes {axes} are not a permutation of the {len(shape)} dims of shape {shape}"


def where_error(name, shapes, args):
    (condition,), (a, b) = args, shapes
    return (
        f"where: the condition of shape {condition.shape}, a of shape {a} and b of shape {b} cannot be "
        "broadcast together: sizes are matched from the last dim and must be equal or 1"
    )


def cat_error(name, shapes, args):
    """cat's and stack's: the first input whose shape differs from the first's where it must not."""
    (axis,), first = args, shapes[0]
    for i, shape in enumerate(shapes[1:], start=1):
        if name == "stack" or len(shape) != len(first):
            differs = shape != first
        else:
            differs = any(m != n for d, (m, n) in enumerate(zip(shape, first, strict=True)) if d != axis)
        if differs:
            rule = "the same shape" if name == "stack" else f"the same shape except along axis {axis}"
            return f"{name}: the tensors must have {rule}, but tensor 0 has shape {first} and tensor {i} has {shape}"
    return f"{name}: the shapes {shapes} cannot be joined along axis {axis}"
