# framehook fuzz finding: translator, once (packages/translator/src/framehook/translator/graph/ir.py, may_raise)
# runs standalone; fuzz/tests/test_regressions.py replays it plainly and in every mode
import numpy as np


def f(a, b, arr):
    # an operation whose value goes unused still raises (or warns) under the block's
    # settings: dead-code elimination must keep it inside a captured errstate block
    y = arr * 2
    with np.errstate(divide="raise"):
        np.log(arr * 0)
        y = y + 1
    return y


ARGS = (1, 2, np.arange(3.0))
OTHER_ARGS = (1, 2, np.arange(3, dtype=np.float32))
OUTER_ERRSTATE = {'divide': 'warn'}
FAMILY = 'errstate'

if __name__ == "__main__":
    print(f(*ARGS))
