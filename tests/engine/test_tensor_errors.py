"""Bad input to chainrule.tensor gets a clear error naming the operation and the shapes or values.

Every test checks the message text, not only the exception type.
"""

import re

import numpy as np
import pytest

from chainrule.autograd import grad
from chainrule.functional import log_softmax
from chainrule.rules import RULES
from chainrule.tensor import Tensor, unbroadcast


def raises(exception, text):
    """pytest.raises matching ``text`` literally (no regex escaping needed in the tests)."""
    return pytest.raises(exception, match=re.escape(text))


# --------------------------------------------------------------------------- data types


@pytest.mark.parametrize(
    "data, dtype",
    [
        (np.array([1, 2, 3]), "int64"),
        (np.array([1, 2], dtype=np.int32), "int32"),
        (np.array([1, 2], dtype=np.uint8), "uint8"),
        (np.array([True, False]), "bool"),
        ([True, False], "bool"),
        (np.array([1 + 2j]), "complex128"),
        (1 + 2j, "complex128"),
        (np.array([1.0, None], dtype=object), "object"),
        (np.array([1.0], dtype=np.float16), "float16"),
        (np.int64(3), "int64"),
        ("text", "<U4"),
    ],
)
def test_unsupported_dtypes_are_refused_with_a_fix(data, dtype):
    with raises(TypeError, f"Tensor(): data of dtype {dtype} is not supported; a Tensor holds float32 or float64"):
        Tensor(data)
    with raises(TypeError, ".astype(np.float64)"):
        Tensor(data)


def test_a_tensor_of_a_tensor_suggests_detach():
    with raises(TypeError, "Tensor(): got a Tensor; use tensor.detach()"):
        Tensor(Tensor([1.0]))


def test_ragged_lists_are_refused():
    with raises(ValueError, "Tensor(): data is not a rectangular array of numbers"):
        Tensor([[1.0, 2.0], [3.0]])


def test_integer_array_operands_are_refused_naming_the_operation():
    x = Tensor(np.ones(2))
    with raises(TypeError, "add: data of dtype int64 is not supported"):
        x + np.array([1, 2])
    with raises(TypeError, "multiply: data of dtype int64 is not supported"):
        np.array([1, 2]) * x
    with raises(TypeError, "matmul: data of dtype bool is not supported"):
        x @ np.array([True, False])


@pytest.mark.parametrize("other", ["a", None, True, [1.0, 2.0]])
def test_other_operands_are_refused(other):
    x = Tensor(np.ones(2))
    with raises(TypeError, f"subtract: cannot combine a Tensor with {type(other).__name__}"):
        x - other


def test_power_needs_a_constant_exponent():
    x = Tensor(np.ones(2), requires_grad=True)
    with raises(TypeError, "power: the exponent must be a constant int or float, got Tensor; for a Tensor exponent"):
        x ** Tensor(2.0)
    with raises(TypeError, "power: the exponent must be a constant int or float, got a Tensor (in 2 ** tensor)"):
        2**x
    with raises(TypeError, "got bool"):
        x**True


def test_negative_base_to_a_fractional_power_is_refused():
    x = Tensor(np.array([4.0, -1.0]))
    with raises(
        ValueError,
        "power: a negative base to the non-integer power 0.5 is not a real number (min value of the base -1.0)",
    ):
        x**0.5


def test_log_of_non_positive_values_names_the_min():
    x = Tensor(np.array([1.0, -0.5, 0.0]))
    with raises(ValueError, "log: the input must be positive, but its min value is -0.5 (2 of 3 values are <= 0)"):
        x.log()


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize(
    "name, fn",
    [
        ("add", lambda a, b: a + b),
        ("subtract", lambda a, b: a - b),
        ("multiply", lambda a, b: a * b),
        ("divide", lambda a, b: a / b),
    ],
)
def test_broadcast_failures_name_the_op_and_both_shapes(name, fn):
    a, b = Tensor(np.ones((2, 3))), Tensor(np.ones(2))
    with raises(
        ValueError,
        f"{name}: shapes (2, 3) and (2,) cannot be broadcast together: 3 (dim 1 of the left) vs 2 (dim 0 of the right)",
    ):
        fn(a, b)


def test_broadcast_failure_in_a_middle_dim():
    with raises(
        ValueError,
        "add: shapes (4, 3, 1) and (5, 1) cannot be broadcast together: "
        "3 (dim 1 of the left) vs 5 (dim 0 of the right)",
    ):
        Tensor(np.ones((4, 3, 1))) + Tensor(np.ones((5, 1)))


@pytest.mark.parametrize(
    "left, right, message",
    [
        (
            (3, 4),
            (5, 2),
            "matmul: shapes (3, 4) and (5, 2) are not aligned: 4 (dim 1 of the left) != 5 (dim 0 of the right)",
        ),
        (
            (3,),
            (4, 2),
            "matmul: shapes (3,) and (4, 2) are not aligned: 3 (dim 0 of the left) != 4 (dim 0 of the right)",
        ),
        (
            (2, 3),
            (4,),
            "matmul: shapes (2, 3) and (4,) are not aligned: 3 (dim 1 of the left) != 4 (dim 0 of the right)",
        ),
        ((3,), (4,), "matmul: shapes (3,) and (4,) are not aligned: 3 (dim 0 of the left) != 4 (dim 0 of the right)"),
        (
            (2, 3, 4),
            (3, 4, 5),
            "matmul: shapes (2, 3, 4) and (3, 4, 5): the batch dims (2,) and (3,) cannot be broadcast",
        ),
        ((), (3,), "matmul: shapes () and (3,): both operands need at least one dim (use * to multiply by a scalar)"),
    ],
)
def test_matmul_mismatch_names_the_shapes_and_dims(left, right, message):
    with raises(ValueError, message):
        Tensor(np.ones(left)) @ Tensor(np.ones(right))


def test_reshape_to_the_wrong_size():
    with raises(ValueError, "reshape: cannot reshape a tensor of shape (2, 3) (6 elements) into shape (4,)"):
        Tensor(np.ones((2, 3))).reshape(4)
    with raises(ValueError, "reshape: cannot reshape a tensor of shape (2, 3) (6 elements) into shape (4, -1)"):
        Tensor(np.ones((2, 3))).reshape((4, -1))


def test_transpose_with_bad_axes():
    x = Tensor(np.ones((2, 3)))
    with raises(ValueError, "transpose: axes (0, 0) are not a permutation of the 2 dims of shape (2, 3)"):
        x.transpose(0, 0)
    with raises(ValueError, "transpose: axes (0,) are not a permutation of the 2 dims of shape (2, 3)"):
        x.transpose(0)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_reductions_over_a_missing_axis(reduction):
    x = Tensor(np.ones((2, 3)))
    with raises(
        ValueError,
        f"{reduction}: axis 2 is not valid for a tensor of shape (2, 3): axes must be distinct and in [-2, 2)",
    ):
        getattr(x, reduction)(axis=2)
    with raises(ValueError, f"{reduction}: axis (0, 0) is not valid for a tensor of shape (2, 3)"):
        getattr(x, reduction)(axis=(0, 0))


def test_broadcast_to_an_incompatible_shape():
    with raises(ValueError, "broadcast_to: cannot broadcast shape (3,) to (2, 4): 3 (dim 0 of the left) vs 4"):
        Tensor(np.ones(3)).broadcast_to(2, 4)


def test_unbroadcast_to_a_shape_that_was_not_broadcast():
    with raises(ValueError, "unbroadcast: a gradient of shape (2, 3) cannot come from broadcasting (4,)"):
        unbroadcast(np.ones((2, 3)), (4,))
    with raises(ValueError, "unbroadcast: a gradient of shape (3,) cannot come from broadcasting (2, 3)"):
        unbroadcast(np.ones(3), (2, 3))


# --------------------------------------------------------------------------- backward


def test_backward_of_a_non_scalar_needs_a_gradient():
    y = Tensor(np.ones((2, 3)), requires_grad=True) * 2
    with raises(
        RuntimeError,
        "backward: the output has shape (2, 3), not a single number, so pass gradient= "
        "(an array of the same shape (2, 3): dL/d output), or reduce the output to a "
        "scalar first, e.g. out.sum().backward()",
    ):
        y.backward()


def test_a_gradient_of_the_wrong_shape_names_both_shapes():
    y = Tensor(np.ones((2, 3)), requires_grad=True) * 2
    with raises(ValueError, "backward: gradient has shape (3,) but the output has shape (2, 3); they must be the same"):
        y.backward(gradient=np.ones(3))
    with raises(ValueError, "backward: gradient has shape (3, 2) but the output has shape (2, 3)"):
        y.backward(gradient=Tensor(np.ones((3, 2))))


def test_a_gradient_with_bad_values_or_dtype():
    y = Tensor(np.ones(2), requires_grad=True) * 2
    with raises(ValueError, "backward: gradient contains nan or inf"):
        y.backward(gradient=np.array([1.0, np.nan]))
    with raises(TypeError, "backward: gradient: data of dtype int64 is not supported"):
        y.backward(gradient=np.array([1, 2]))


def test_backward_without_a_graph():
    y = Tensor(np.ones(2)) * 2
    with raises(RuntimeError, "backward: this Tensor does not require grad, so there is no graph to go back through"):
        y.sum().backward()


def test_a_second_backward_through_a_freed_graph_names_the_op():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    with raises(
        RuntimeError,
        "backward through multiply ('*') a second time: its saved tensors were freed by an "
        "earlier backward pass. Pass retain_graph=True to the earlier backward()",
    ):
        loss.backward()
    y = x.tanh().sum()
    y.backward()
    with raises(RuntimeError, "backward through tanh ('tanh') a second time"):
        y.backward()


def test_log_backward_producing_inf_names_the_op():
    x = Tensor(np.array([1e-320, 1.0]), requires_grad=True)  # positive, but 1/x overflows
    with raises(
        FloatingPointError,
        "backward of log produced nan/inf: input has values <= 0 or too close to 0 "
        "(d log(a)/da = 1/a) (in the gradient for its input 0, shape (2,))",
    ):
        x.log().sum().backward()


def test_log_backward_on_float32():
    x = Tensor(np.array([1e-39, 1.0], dtype=np.float32), requires_grad=True)
    with raises(FloatingPointError, "backward of log produced nan/inf: input has values <= 0"):
        x.log().sum().backward()


def test_divide_backward_producing_inf():
    a = Tensor(np.array([1.0]), requires_grad=True)
    b = Tensor(np.array([1e-200]), requires_grad=True)  # b * b underflows to 0
    with raises(
        FloatingPointError,
        "backward of divide produced nan/inf: the divisor has values at or too close "
        "to 0 (in the gradient for its input 1, shape (1,))",
    ):
        (a / b).sum().backward()


def test_power_backward_at_zero():
    x = Tensor(np.array([0.0, 4.0]), requires_grad=True)
    with raises(
        FloatingPointError,
        "backward of power produced nan/inf: the base has values at or too close to 0 and the exponent is below 1",
    ):
        (x**0.5).sum().backward()


def test_overflow_in_the_forward_pass_is_reported_by_backward():
    x = Tensor(np.array([1000.0]), requires_grad=True)
    with np.errstate(over="ignore"):
        y = x.exp()
    with raises(
        FloatingPointError, "backward of exp produced nan/inf: the forward pass of this op already had nan/inf values"
    ):
        y.sum().backward()


def test_overflow_of_a_product_in_backward():
    a = Tensor(np.array([1e300]), requires_grad=True)
    b = Tensor(np.array([1e-300]), requires_grad=True)
    with raises(
        FloatingPointError,
        "backward of multiply produced nan/inf: the incoming gradient times the local "
        "derivative overflowed (in the gradient for its input 1, shape (1,))",
    ):
        (a * b).backward(gradient=np.array([1e10]))


def test_log_softmax_backward_overflow_is_named():
    """dA = G - softmax(A) * sum(G): a finite G can overflow the sum (the exact gradient is 0)."""
    a = Tensor(np.zeros((1, 2)), requires_grad=True)
    with raises(
        FloatingPointError,
        "backward of log_softmax produced nan/inf: the incoming gradient's sum along the axis overflowed",
    ):
        log_softmax(a, axis=1).backward(gradient=np.array([[1e308, 1e308]]))


@pytest.mark.parametrize("op", ["+", "*"])
def test_the_sum_that_undoes_broadcasting_is_checked_too(op):
    """A bias broadcast to 4 rows gets the sum of 4 rows of gradient: 4e308 overflows."""
    x = Tensor(np.ones((4, 1)), requires_grad=True)
    bias = Tensor(np.ones(1), requires_grad=True)
    y = x + bias if op == "+" else x * bias
    with raises(
        FloatingPointError,
        f"backward of {RULES[op].name} produced nan/inf: summing the gradient over the broadcast axes, "
        "from shape (4, 1), overflowed (in the gradient for its input 1, shape (1,))",
    ):
        y.backward(gradient=np.full((4, 1), 1e308))


def test_gradients_that_overflow_when_two_consumers_add_them_are_named():
    x = Tensor(np.full(3, 1e-300), requires_grad=True)
    with raises(FloatingPointError, "to what another op sends the same input overflowed (shape (3,))"):
        ((x * 1e308).sum() + (x * 1e308).sum()).backward()
    assert x.grad is None


# --------------------------------------------------------------------------- grad()


def test_grad_errors():
    x = Tensor(np.ones(2), requires_grad=True)
    unused = Tensor(np.ones(3), requires_grad=True)
    constant = Tensor(np.ones(2))
    y = (x * x).sum()
    with raises(ValueError, "grad: inputs[1] (shape (3,)) was not used to compute the outputs"):
        grad(y, [x, unused], retain_graph=True)
    with raises(RuntimeError, "grad: inputs[0] does not require grad (set requires_grad=True on it)"):
        grad(y, constant)
    with raises(RuntimeError, "grad: outputs[0] does not require grad"):
        grad(constant.sum(), x)
    with raises(ValueError, "grad: got 2 grad_outputs for 1 outputs"):
        grad(y, x, grad_outputs=[None, None])
    with raises(RuntimeError, "grad: the output has shape (2,), not a single number, so pass grad_outputs="):
        grad(x * 2, x)
    with raises(ValueError, "grad: grad_outputs has shape (3,) but the output has shape (2,)"):
        grad(x * 2, x, grad_outputs=np.ones(3))


# --------------------------------------------------------------------------- inputs that once escaped the checks


def test_reshape_and_axis_arguments_must_be_ints():
    x = Tensor(np.ones((4, 2)), requires_grad=True)
    with raises(
        TypeError,
        "Tensor.reshape: the shape must be ints, got (4.0, 2): float 4.0 at position 0 (use // for integer division)",
    ):
        x.reshape(8 / 2, 2)
    with raises(TypeError, "Tensor.sum: the axis must be ints, got (1.0,): float 1.0 at position 0"):
        x.sum(axis=1.0)
    with raises(TypeError, "Tensor.transpose: the axes must be ints"):
        x.transpose(1.0, 0)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_a_numpy_integer_axis_works_forward_and_backward(reduction):
    data = np.arange(8.0).reshape(4, 2)
    x = Tensor(data, requires_grad=True)
    getattr(x, reduction)(axis=np.int64(1)).sum().backward()
    expected = np.ones_like(data) / (2 if reduction == "mean" else 1)
    np.testing.assert_array_equal(x.grad, expected)


def test_division_by_an_exact_zero_names_the_entry():
    x = Tensor(np.ones((2, 2)), requires_grad=True)
    with raises(ZeroDivisionError, "Tensor / (divide): the divisor (shape (2, 2)) is 0 at entry (1, 0)"):
        x / Tensor(np.array([[1.0, 2.0], [0.0, 3.0]]))
    with raises(ZeroDivisionError, "Tensor / (divide): the divisor (shape ()) is 0"):
        x / 0.0


def test_float32_division_by_a_tiny_number_has_the_right_gradient():
    import torch

    a = Tensor(np.array([1e-22], dtype=np.float32), requires_grad=True)
    b = Tensor(np.array([1e-22], dtype=np.float32), requires_grad=True)
    (a / b).sum().backward()
    ta, tb = (torch.tensor([1e-22], dtype=torch.float32, requires_grad=True) for _ in range(2))
    (ta / tb).sum().backward()
    np.testing.assert_allclose(b.grad, tb.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad, [-1e22], rtol=1e-6)  # b*b underflowed: -1.0195e22


def test_grad_names_arrays_passed_instead_of_tensors():
    x = Tensor(np.ones(3), requires_grad=True)
    loss = (x * x).sum()
    with raises(
        TypeError,
        "grad: inputs must be a Tensor or a list of Tensors, got ndarray (pass the Tensor itself, not its .data)",
    ):
        grad(loss, x.data)
    with raises(TypeError, "grad: outputs must be a Tensor or a list of Tensors, got ndarray"):
        grad(loss.data, x)
    with raises(TypeError, "grad: inputs must be a Tensor or a list of Tensors, got a sequence holding float"):
        grad(loss, [x, 1.0])


def test_sgd_names_a_method_passed_uncalled():
    from chainrule.nn import SGD

    class Model:
        def parameters(self):
            return [Tensor(np.ones(2), requires_grad=True)]

    with raises(
        TypeError, "SGD: params is the method 'parameters', not its result; call it: SGD(model.parameters(), lr=...)"
    ):
        SGD(Model().parameters, lr=0.1)
    with raises(TypeError, "SGD: params must be a list of Tensors, got Tensor"):
        SGD(Tensor(np.ones(2), requires_grad=True), lr=0.1)
