# framehook fuzz finding: translator, once (packages/translator/tests/test_fuzz_regressions.py, seed 173)
# runs standalone; fuzz/tests/test_regressions.py replays it plainly and in every mode
import numpy as np


def f(a, b, arr):
    # dead-code elimination dropped the unused `0 % p2`, so the ZeroDivisionError Python
    # raises for a == b vanished from the cached graph
    def g1(p2, k=1):
        return (0 % p2) + k

    v3 = g1(b - a)
    v4 = (-2 - v3) + (b % b)  # noqa: F841 - unused on purpose
    return 7


ARGS = (5, 2, np.arange(3))
OTHER_ARGS = (3, 3, np.arange(3))
OUTER_ERRSTATE = None
FAMILY = 'python'

if __name__ == "__main__":
    print(f(*ARGS))
