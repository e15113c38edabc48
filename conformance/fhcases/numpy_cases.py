"""numpy functions of the kind the translator captures into graphs."""
import numpy as np

from ._registry import case

WEIGHTS = np.arange(6, dtype=np.float64).reshape(2, 3)


@case(np.arange(4))
def elementwise(x):
    return x + 1, x * 2, x ** 2, -x, np.abs(x - 2)


@case(np.arange(6.0).reshape(2, 3))
def reductions(x):
    return x.sum(), x.sum(axis=0), x.max(axis=1), x.mean(), np.prod(x + 1)


@case(np.ones((2, 3)), np.arange(3.0))
def broadcasting(a, b):
    return a + b, a * b[None, :], (a - b).T


@case(np.arange(6).reshape(2, 3))
def reshape_transpose(x):
    return x.reshape(3, 2), x.T, x.ravel(), x[:, ::-1], np.concatenate([x, x], axis=0)


@case(np.arange(10))
def boolean_index(x):
    mask = x % 3 == 0
    return x[mask], np.where(mask, x, -1), mask.sum(), np.nonzero(mask)[0]


@case(np.array([[1.0, 2.0], [3.0, 4.0]]))
def matmul(a):
    return a @ a, np.dot(a, [1.0, 1.0]), a @ WEIGHTS[:, :2]


@case(np.arange(5, dtype=np.int32))
def dtype_casts(x):
    return x.astype(np.float32), x.astype(np.int64) * 2, x.dtype.name, (x / 2).dtype.name


@case(np.arange(4.0))
def inplace_update(x):
    x += 1
    x[0] = 100
    return x.sum()


@case(3)
def constructors(n):
    return np.zeros(n), np.ones((n, 2), dtype=np.int8), np.full(n, 7), np.eye(n), np.linspace(0, 1, n + 2)


@case(np.array([3, 1, 2]))
def sort_and_search(x):
    return np.sort(x), np.argsort(x), np.searchsorted(np.sort(x), 2), np.cumsum(x), np.unique([1, 1, 2])


@case(np.arange(4))
def scalar_results(x):
    return x[1], x.sum(), np.float64(2.5) * 2, np.int64(7) // 2, bool(x.any())


@case(np.array([1.0, np.nan, 3.0]))
def nan_handling(x):
    return np.isnan(x), np.nansum(x), np.nanmax(x), x[~np.isnan(x)]


@case(np.arange(12).reshape(3, 4))
def slicing_views(x):
    v = x[1:, 1:3]
    v[0, 0] = -1
    return v.copy(), x[1], x[:, -1], x[..., 0]


@case(np.array([1, 2, 3]))
def with_python_control_flow(x):
    total = 0
    for v in x:
        if v % 2:
            total += int(v)
        else:
            total -= int(v) * 10
    return total, np.stack([x, x * 2])


@case(np.arange(6.0))
def graph_break_print_like(x):
    y = x * 2
    text = repr(y.tolist())     # a Python-level call in the middle of array code
    z = y + 1
    return z, text


@case(np.array([[2.0, 0.0], [0.0, 4.0]]))
def linalg_simple(a):
    return np.linalg.inv(a), np.trace(a), np.diag(a), np.linalg.det(a) > 0


@case(np.arange(3), 2)
def closure_over_array(x, k):
    def scale(y):
        return y * k + x
    return scale(x), scale(np.ones(3, dtype=np.int64))


@case(np.arange(8).reshape(2, 2, 2))
def multi_axis(x):
    return x.sum(axis=(0, 2)), np.swapaxes(x, 0, 2), x.reshape(-1, 4).max(axis=-1)


@case(np.array([1.5, -2.5, 3.5]))
def rounding(x):
    return np.round(x), np.floor(x), np.ceil(x), np.clip(x, -1, 2), np.sign(x)
