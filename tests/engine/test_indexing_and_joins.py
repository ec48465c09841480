"""The ops a reader reaches for first: indexing, where, abs, clamp, maximum and minimum, cat and
stack, max_pool2d's padding and conv2d's bias, each against PyTorch where the op table's fixed
case cannot reach (ties, bounds, every form of key), and each refusal's message."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from chainrule import Tensor, no_grad
from chainrule.functional import cat, conv2d, max_pool2d, maximum, minimum, stack, where
from chainrule.nn import SGD

RNG = np.random.default_rng(7)
A = RNG.normal(size=(3, 4))


def matches_torch(ours, theirs, *arrays):
    """Values and every input's gradient, for a random upstream gradient, as float64 torch."""
    leaves = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    references = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = ours(*leaves), theirs(*references)
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-12)
    upstream = np.random.default_rng(0).normal(size=out.shape)
    out.backward(gradient=upstream)
    expected.backward(torch.tensor(upstream))
    for leaf, reference in zip(leaves, references, strict=True):
        np.testing.assert_allclose(leaf.grad, reference.grad.numpy(), rtol=1e-12, atol=1e-15)


KEYS = {
    "int": 1,
    "a 0-d integer array": np.array(1),
    "a mask, a new axis, an int": (A[:, 0] > 0, None, 1),
    "an int for every axis": (1, 2),
    "an int next to an array": (1, [0, 3, 3]),
    "an array, then a new axis": ([0, 2], slice(None), None),
    "negative int": (-1, 2),
    "slice with a step": (slice(None, None, 2), slice(1, 3)),
    "None and ...": (None, Ellipsis, 2),
    "a repeated row": [0, 0, 2],
    "two arrays with repeats": (np.array([0, 0, 2]), np.array([1, 1, 3])),
    "an array and a slice": (slice(None), [3, 3]),
    "a boolean mask": A > 0,
    "a boolean row mask": np.array([True, False, True]),
    "an empty list": [],
}


@pytest.mark.parametrize("key", list(KEYS))
def test_indexing_matches_torch_for_every_form_of_key(key):
    index = KEYS[key]
    parts = index if isinstance(index, tuple) else (index,)
    torch_index = tuple(torch.tensor(part) if isinstance(part, np.ndarray) else part for part in parts)
    matches_torch(lambda a: a[index], lambda a: a[torch_index], A)


def test_a_negative_step_reverses_as_torch_flip_does():  # torch's indexing takes no negative step
    matches_torch(lambda a: a[::-1, 1::-1], lambda a: a.flip(0)[:, :2].flip(1), A)


def test_an_int_for_every_axis_is_a_view_that_shares_the_version_counter():
    """As in torch, x[1] of a 1-D x is a 0-d view: a change through it reaches x, and an optimizer's step
    on W between two backward passes that read W[1] is refused."""
    x = Tensor(np.arange(4.0))
    with no_grad():
        entry = x[1]
        entry *= 10.0
    np.testing.assert_array_equal(x.data, [0.0, 10.0, 2.0, 3.0])
    w = Tensor(A.copy(), requires_grad=True)
    e = w[1, 2]
    loss = e * e
    loss.backward(retain_graph=True)
    SGD([w], lr=0.5).step()
    with pytest.raises(RuntimeError, match="changed in place"):
        loss.backward()


def test_in_place_on_a_view_of_a_live_tensor_is_refused_while_recording():
    """torch would write through the view into y; chainrule says so rather than make a new Tensor silently."""
    x = Tensor(np.zeros(4), requires_grad=True)
    y = x * 1.0
    head = y[0:2]
    with pytest.raises(RuntimeError, match=r"\+=: a Tensor of shape \(2,\) is a view of another Tensor"):
        head += 1.0
    z = x * 1.0
    z += 1.0  # not a view: computed out of place, recorded
    np.testing.assert_array_equal(z.data, np.ones(4))
    h = (x * 1.0).reshape(2, 2)  # a view of a Tensor nobody holds: nothing else would change
    h += 1.0
    image = conv2d(Tensor(np.ones((1, 2, 4, 4)), requires_grad=True), Tensor(np.ones((3, 2, 3, 3))))
    image += 1.0  # conv2d's result is a transpose of its matmul's, which is gone
    acc = Tensor(np.zeros(8).reshape(2, 4))  # a numpy view, but no Tensor's
    acc += x.reshape(2, 2).broadcast_to(2, 2, 2).reshape(2, 4)
    assert h.grad_fn.op == image.grad_fn.op == acc.grad_fn.op == "+"


A3 = RNG.normal(size=(3, 4, 5))


@pytest.mark.parametrize(
    "key",
    [(1, slice(None), [0, 4]), (1, None, [0, 1]), (np.array(1), slice(None), [0, 4]), (1, Ellipsis, [0, 1])],
    ids=["int, slice, array", "int, new axis, array", "0-d array, slice, array", "int, ..., array"],
)
def test_a_key_numpy_and_torch_read_differently_is_refused(key):
    torch_key = tuple(torch.tensor(part) if isinstance(part, list | np.ndarray) else part for part in key)
    numpy_shape, torch_shape = A3[key].shape, tuple(torch.tensor(A3)[torch_key].shape)
    assert numpy_shape != torch_shape  # why it is refused
    with pytest.raises(IndexError, match=r"index: numpy and torch order the result of this key differently"):
        Tensor(A3)[key]


@pytest.mark.parametrize("key", [([0, 1], slice(None), 1), (1, [0, 2], 3), ([0, 2], 1, [1, 1]), (1, [[0, 1], [2, 3]])])
def test_a_key_of_ints_and_arrays_that_both_read_alike_is_taken(key):
    torch_key = tuple(torch.tensor(part) if isinstance(part, list) else part for part in key)
    matches_torch(lambda a: a[key], lambda a: a[torch_key], A3)


def test_a_key_changed_after_forward_does_not_move_the_gradient():
    x, rows = Tensor(A.copy(), requires_grad=True), np.array([0, 1])
    y = x[rows]
    rows[:] = 2  # the node kept its own copy of the key
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.sum(axis=1), [4.0, 4.0, 0.0])


def test_a_slice_shares_its_tensors_version_counter():
    """A slice is a view: an optimizer's step on W between two backward passes is refused, as in torch."""
    w = Tensor(A.copy(), requires_grad=True, label="W")
    row = w[0]
    loss = (row * row).sum()
    loss.backward(retain_graph=True)
    assert row.version == w.version == 0
    SGD([w], lr=0.1).step()
    assert row.version == w.version == 1
    with pytest.raises(RuntimeError, match="changed in place"):
        loss.backward()


def test_entries_are_not_assigned_and_a_0d_tensor_does_not_iterate():
    x = Tensor(A.copy())
    with pytest.raises(TypeError, match=r"entries are not assigned.*x\.data\[key\] = value"):
        x[0] = 1.0
    assert [row.shape for row in x] == [(4,)] * 3
    with pytest.raises(TypeError, match="iteration over a 0-d Tensor"):
        list(Tensor(1.0))


@pytest.mark.parametrize(
    ("key", "error", "message"),
    [
        (5, IndexError, r"index: index 5 is out of bounds for axis 0 with size 3 \(the Tensor has shape \(3, 4\)\)"),
        (0.5, TypeError, "index: cannot index with a float 0.5; use an int, a slice"),
        (slice(0.5, 2), TypeError, "index: a slice's start, stop and step must be ints or None"),
        (slice(None, None, 0), ValueError, "index: a slice's step must not be 0"),
        ([0.5, 1.0], TypeError, "index: an index array must hold ints or bools, got dtype float64"),
        (Tensor(np.array([0.0])), TypeError, r"index: a chainrule Tensor cannot be an index \(it holds floats\)"),
        (torch.tensor([0]), TypeError, r"index: cannot index with a torch Tensor tensor\(\[0\]\); use an int"),
        (True, TypeError, "index: cannot index with a bool True"),
        ([[0, 1], [0]], ValueError, r"index: an index list must be rectangular, got \[\[0, 1\], \[0\]\]"),
    ],
)
def test_a_bad_key_is_refused_naming_the_op(key, error, message):
    with pytest.raises(error, match=message):
        Tensor(A.copy())[key]


def test_add_at_refuses_a_tensor_that_does_not_fit_the_key():
    with pytest.raises(ValueError, match=r"add_at: the shape must have sizes >= 0, got \(-1,\)"):
        Tensor(np.ones(2)).add_at(0, (-1,))
    with pytest.raises(ValueError, match=r"add_at: the key picks shape \(2, 4\) of \(3, 4\), but the Tensor has"):
        Tensor(np.ones((2, 3))).add_at([0, 1], (3, 4))


def test_maximum_and_minimum_split_a_tie_as_torch_does():
    a, b = np.array([1.0, 2.0, 3.0, -1.0, np.nan, 1.0]), np.array([1.0, 5.0, 3.0, -2.0, 0.0, np.nan])
    matches_torch(maximum, torch.maximum, a, b)
    matches_torch(minimum, torch.minimum, a, b)
    x = Tensor(a[:4], requires_grad=True)
    maximum(x, x).sum().backward()  # both sides the same Tensor: ½ + ½
    np.testing.assert_array_equal(x.grad, np.ones(4))


def test_maximum_takes_a_number_on_either_side():
    ties = np.array([[0.0, 0.5, -1.0], [0.5, 2.0, 0.0]])  # entries equal to the numbers: half the gradient
    zero, half = torch.tensor(0.0, dtype=torch.float64), torch.tensor(0.5, dtype=torch.float64)
    matches_torch(
        lambda a: maximum(a, 0.0) + minimum(0.5, a), lambda a: torch.maximum(a, zero) + torch.minimum(half, a), ties
    )
    with pytest.raises(TypeError, match="maximum: a or b must be a Tensor, got float and int"):
        maximum(1.0, 2)
    with pytest.raises(
        TypeError, match="maximum: expected a Tensor, a number or a float32/float64 numpy array, got an"
    ):
        maximum(Tensor(A), A.astype(np.float16))


@pytest.mark.parametrize(("low", "high"), [(-0.5, 0.5), (0.0, None), (None, 0.0), (1.0, -1.0)])
def test_clamp_passes_the_gradient_at_its_bounds_as_torch_does(low, high):
    a = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0])
    matches_torch(lambda x: x.clamp(low, high), lambda x: x.clamp(low, high), a)


def test_clamp_and_abs_refuse_or_take_what_torch_does():
    matches_torch(lambda x: x.abs(), lambda x: x.abs(), np.array([-2.0, 0.0, 3.0]))  # 0 at the kink
    with pytest.raises(ValueError, match="clamp: give min, max or both"):
        Tensor(A).clamp()
    with pytest.raises(ValueError, match="clamp: max is nan; give a number or None"):
        Tensor(A).clamp(0.0, np.float32("nan"))
    np.testing.assert_array_equal(Tensor(A).clamp(np.float32(0.25)).data, np.maximum(A, 0.25))  # numpy's numbers
    with pytest.raises(TypeError, match=r"clamp: min must be a number or None, got a ndarray of shape \(3, 4\)"):
        Tensor(A).clamp(A)
    x = Tensor(np.array([np.nan, 0.5]), requires_grad=True)
    with pytest.raises(FloatingPointError, match="backward of abs produced nan/inf"):  # torch returns 0 there
        x.abs().sum().backward()


def test_where_broadcasts_its_condition_and_refuses_a_float_one():
    condition = np.array([True, False, True, False])
    matches_torch(
        lambda a, b: where(condition, a, b), lambda a, b: torch.where(torch.tensor(condition), a, b), A, A[:1] * 2
    )
    matches_torch(lambda a: where(A > 0, a, 0.0), lambda a: torch.where(torch.tensor(A > 0), a, 0.0), A)
    with pytest.raises(TypeError, match="where: the condition must be a boolean array, got dtype float64.*x.data > 0"):
        where(A, Tensor(A), 0.0)
    with pytest.raises(ValueError, match=r"where: the condition of shape \(3, 4\), a of shape \(3, 4\) and b of"):
        where(A > 0, Tensor(A), Tensor(np.ones((2, 4))))


def test_cat_and_stack_give_each_input_its_slice_in_float32_too():
    a, b = A.astype(np.float32), RNG.normal(size=(3, 2)).astype(np.float32)
    x, y, c = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True), Tensor(b)  # c needs no gradient
    out = cat([x, c, y, x], axis=-1)
    assert out.shape == (3, 12) and out.dtype == np.float32
    upstream = np.arange(36, dtype=np.float32).reshape(3, 12)
    out.backward(gradient=upstream)
    np.testing.assert_array_equal(x.grad, upstream[:, :4] + upstream[:, 8:])
    np.testing.assert_array_equal(y.grad, upstream[:, 6:8])
    assert c.grad is None and x.grad.dtype == np.float32
    matches_torch(lambda p, q: stack([p, q, p]), lambda p, q: torch.stack([p, q, p]), A, A * 3)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: cat([Tensor(A), Tensor(A[0])]),
            ValueError,
            r"cat: the tensors must have the same shape except "
            r"along axis 0, but tensor 0 has shape \(3, 4\) and tensor 1 has \(4,\)",
        ),
        (lambda: cat([Tensor(A), Tensor(A[:, :2])]), ValueError, "tensor 1 has \\(3, 2\\)"),
        (lambda: stack([Tensor(A), Tensor(A[:2])]), ValueError, "stack: the tensors must have the same shape, but"),
        (lambda: cat([Tensor(A)], axis=2), ValueError, r"cat: axis 2 is not valid: .* in \[-2, 2\)"),
        (lambda: cat([Tensor(1.0)]), ValueError, "cat: 0-d tensors have no axis to join along; use stack"),
        (lambda: cat(Tensor(A)), TypeError, "cat: expected a list or tuple of Tensors, got Tensor"),
        (lambda: stack([]), ValueError, "stack: expected at least one Tensor, got an empty list"),
        (lambda: stack([Tensor(A), A]), TypeError, r"stack: tensors\[1\] is a ndarray, not a Tensor"),
    ],
)
def test_cat_and_stack_refuse_naming_the_tensor_that_does_not_fit(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(("kernel", "stride", "padding"), [(3, 2, 1), (2, 2, 1), (3, 1, 1), (4, 3, 2)])
def test_max_pool2d_pads_with_minus_inf_as_torch_does(kernel, stride, padding):
    x = RNG.normal(size=(2, 2, 5, 6)) - 5  # all negative: a 0 padding would win the border windows
    matches_torch(
        lambda t: max_pool2d(t, kernel, stride, padding),
        lambda t: TF.max_pool2d(t, kernel, stride, padding),
        x,
    )


@pytest.mark.parametrize(
    "image",
    [
        np.array([[[[np.nan, 1.0], [np.nan, 0.0]]]]),  # torch routes to the last NaN of a window
        np.array([[[[1.0, np.nan, 0.0], [2.0, 0.0, 1.0], [0.0, 1.0, np.nan]]]]),
        np.array([[[[-np.inf, 1.0], [2.0, 3.0]]]]),  # padding ties with A's own -inf: A's entry wins
        np.full((1, 1, 3, 3), -np.inf),
        np.array([[[[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [0.0, 2.0, 2.0]]]]),  # ties: the first in the window
    ],
)
def test_max_pool2d_routes_ties_and_minus_inf_as_torch_does(image):
    for kernel, stride, padding in [(2, 1, 1), (3, 1, 1), (2, 2, 1), ((2, 1), 1, 0)]:
        if min(image.shape[2:]) + 2 * padding >= max(np.atleast_1d(kernel)):
            matches_torch(
                lambda t, k=kernel, s=stride, p=padding: max_pool2d(t, k, s, p),
                lambda t, k=kernel, s=stride, p=padding: TF.max_pool2d(t, k, s, p),
                image,
            )


def test_max_pool2d_and_conv2d_take_one_image_and_torchs_pairs():
    image, w = RNG.normal(size=(3, 5, 6)), RNG.normal(size=(2, 3, 3, 3))
    matches_torch(lambda t: max_pool2d(t, (3, 2), 1, (1, 1)), lambda t: TF.max_pool2d(t, (3, 2), 1, (1, 1)), image)
    matches_torch(
        lambda t, k: conv2d(t, k, stride=(1, 1), padding="same"),
        lambda t, k: TF.conv2d(t, k, stride=(1, 1), padding="same"),
        image,
        w,
    )


def test_conv2d_adds_its_bias_to_each_filters_map_as_torch_does():
    x, w, b = RNG.normal(size=(2, 3, 5, 6)), RNG.normal(size=(4, 3, 3, 3)), RNG.normal(size=4)
    matches_torch(lambda *t: conv2d(*t, stride=2, padding=1), lambda *t: TF.conv2d(*t, stride=2, padding=1), x, w, b)
    with pytest.raises(ValueError, match=r"conv2d: bias must have shape \(4,\), one per filter of w, got \(3,\)"):
        conv2d(Tensor(x), Tensor(w), Tensor(np.ones(3)))
    with pytest.raises(ValueError, match=r"conv2d: w of shape \(0, 3, 3, 3\) has no filters or no channels"):
        conv2d(Tensor(x), Tensor(np.ones((0, 3, 3, 3))))
    with pytest.raises(ValueError, match=r"conv2d: x has 3 channels \(shape \(3, 5, 6\)\) but w expects 2"):
        conv2d(Tensor(x[0]), Tensor(np.ones((4, 2, 3, 3))))  # one image: its own shape in the message
    with pytest.raises(TypeError, match="conv2d: expected a Tensor or a float32/float64 array, got an array of dtype"):
        conv2d(x.astype(int), Tensor(w))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x, w: conv2d(x, w, dilation=2), r"conv2d: dilation=2 is not supported \(only dilation=1\)"),
        (lambda x, w: conv2d(x, w, groups=3), r"conv2d: groups=3 is not supported"),
        (lambda x, w: max_pool2d(x, 2, dilation=2), "max_pool2d: dilation=2 is not supported"),
        (lambda x, w: max_pool2d(x, 2, ceil_mode=True), "max_pool2d: ceil_mode=True is not supported"),
        (lambda x, w: max_pool2d(x, 2, return_indices=True), "max_pool2d: return_indices=True is not supported"),
    ],
)
def test_unsupported_arguments_are_refused_never_ignored(call, message):
    x, w = Tensor(RNG.normal(size=(1, 3, 6, 6))), Tensor(RNG.normal(size=(2, 3, 3, 3)))
    with pytest.raises(NotImplementedError, match=message):
        call(x, w)
    with pytest.raises(ValueError, match="max_pool2d: padding 2 is more than half the kernel"):
        max_pool2d(x, 3, padding=2)


def test_in_place_through_a_slice_counts_for_the_whole_tensor():
    x = Tensor(A.copy(), requires_grad=True)
    y = (x * x).sum()
    with no_grad():
        view = x[1:]
        view *= 2.0  # writes into x's memory
    np.testing.assert_array_equal(x.data[1:], 2 * A[1:])
    with pytest.raises(RuntimeError, match="changed in place"):
        y.backward()
