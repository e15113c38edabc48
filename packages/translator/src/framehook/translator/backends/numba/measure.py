"""Is the kernel faster than the eager code? A decision robust to a noisy, shared machine.

Calls alternate kernel and eager, so that each *pair* sees the same machine load, and the
decision looks at the pairs' ratios kernel/eager (one slow call from a busy neighbour moves
one ratio, not the verdict):

* keep the kernel when the upper quartile of the ratios is below ``KEEP_BELOW``: it won
  every second pair by a clear margin and three pairs in four at least narrowly, so a
  near-tie (ratios scattered around 1) goes to eager, which has no compile cost;
* stop early, after ``MIN_PAIRS``, when the verdict is already clear either way (every
  ratio below ``CLEAR_WIN``, or the lower quartile above 1);
* else stop at ``config.numba_measure_calls`` pairs, or once ``MAX_MEASURE_SECONDS`` were
  spent measuring, and decide on the pairs so far.

Once kept, one call in ``every`` is timed, alternately as eager and as kernel (each call
does run one of them: the results are the same), and a kernel whose median ratio over the
last ``WINDOW`` sampled pairs is above ``DEMOTE_ABOVE`` is demoted to eager. ``every`` is
at least ``SAMPLE_EVERY`` and grows with the kernel's lead so that the sampled eager calls
cost at most ``SAMPLE_OVERHEAD`` of the calls' time (a kernel 30x faster than eager is
sampled one call in ~1500): a narrow winner, the one that may turn loser, is watched
closely. Closest of all right after it is kept (probation): a kernel whose measured lead
was under 25% (median ratio above ``PROBATION_ABOVE``) has every ``PROBATION_EVERY``-th
call timed until its first ``WINDOW`` pairs are judged, so that a win the measurement saw
and the steady state does not (another program's load, a thread pool left spinning by
the code before) is undone within a few dozen calls, not a few hundred. Between samples a
call costs one counter decrement.

The clock is injectable (``Measurement(clock=...)``) so tests drive the verdicts with
chosen timings.
"""

from __future__ import annotations

import time
from typing import Callable, List, Optional, Tuple

__all__ = [
    "Measurement",
    "KEEP_BELOW",
    "CLEAR_WIN",
    "MIN_PAIRS",
    "MAX_MEASURE_SECONDS",
    "SAMPLE_EVERY",
    "PROBATION_EVERY",
    "PROBATION_ABOVE",
]

#: the kernel is kept when the upper quartile of kernel/eager ratios is below this
KEEP_BELOW = 0.95
#: every ratio below this after MIN_PAIRS: a clear win, stop measuring
CLEAR_WIN = 0.5
MIN_PAIRS = 5
#: time spent in measured calls (both kinds) after which the verdict is made on what is known
MAX_MEASURE_SECONDS = 1.0
#: in steady state at least one call in this many is timed (alternately eager and kernel)
SAMPLE_EVERY = 10
#: right after keeping a narrow winner, one call in this many is timed until WINDOW pairs
PROBATION_EVERY = 2
#: a kept kernel whose measured median ratio is above this is on probation
PROBATION_ABOVE = 0.8
#: the share of the kernel's time the sampled eager calls may add
SAMPLE_OVERHEAD = 0.01
#: the sparsest sampling, however far the kernel leads
MAX_SAMPLE_EVERY = 100_000
#: sampled pairs the steady-state verdict looks at
WINDOW = 7
#: demote when the median steady-state ratio is above this (a kept kernel had won clearly)
DEMOTE_ABOVE = 1.05


def _quantile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


class Measurement:
    """The timing state of one kernel: ``run(kernel, eager)`` makes a call (timed, or not);
    ``verdict`` is None while measuring, then ``"kernel"`` or ``"eager"``; ``reason`` says
    why eager (for the FH016 note)."""

    def __init__(self, max_pairs: int, clock: Callable[[], float] = time.perf_counter) -> None:
        self.max_pairs = max_pairs
        self.clock = clock
        self.kernel: List[float] = []
        self.eager: List[float] = []
        self.spent = 0.0
        self.verdict: Optional[str] = None if max_pairs > 0 else "kernel"
        self.reason = ""
        self.every = SAMPLE_EVERY
        self._countdown = SAMPLE_EVERY
        self._sampled: Tuple[List[float], List[float]] = ([], [])
        self._steady_calls = 0

    # -------------------------------------------------------------- the first calls

    def timed(self, which: int, call: Callable[[], object]) -> object:
        """Run ``call`` (0: the kernel, 1: eager), recording its time."""
        start = self.clock()
        result = call()
        took = self.clock() - start
        (self.kernel if which == 0 else self.eager).append(took)
        self.spent += took
        return result

    def next_is_eager(self) -> bool:
        return len(self.kernel) > len(self.eager)

    def decide(self) -> Optional[str]:
        """After a measured call: the verdict once it is made (then it stays)."""
        pairs = min(len(self.kernel), len(self.eager))
        if self.verdict is not None or pairs == 0:
            return self.verdict
        ratios = [k / e if e > 0 else float("inf") for k, e in zip(self.kernel, self.eager)]
        clear = pairs >= MIN_PAIRS and (max(ratios) < CLEAR_WIN or _quantile(ratios, 0.25) > 1.0)
        if not clear and pairs < self.max_pairs and self.spent < MAX_MEASURE_SECONDS:
            return None
        upper = _quantile(ratios, 0.75)
        if upper < KEEP_BELOW:
            self.verdict = "kernel"
            median = _quantile(ratios, 0.5)
            self._pace(median)
            if median > PROBATION_ABOVE:  # until the first window is judged (steady)
                self.every = self._countdown = PROBATION_EVERY
        else:
            self.verdict = "eager"
            k, e = _quantile(self.kernel, 0.5), _quantile(self.eager, 0.5)
            self.reason = (
                f"not measured faster than eager: kernel {k * 1e6:.1f} us against eager {e * 1e6:.1f} us "
                f"(median of {pairs} alternating pairs; the kernel must win three pairs in four by "
                f"{(1 - KEEP_BELOW) * 100:.0f}%)"
            )
        return self.verdict

    # -------------------------------------------------------------- steady state

    def _pace(self, ratio: float) -> None:
        """Sample so that the eager calls among the samples cost at most SAMPLE_OVERHEAD:
        one eager call in ``2 * every`` costs ``(1 / ratio - 1) / (2 * every)`` more."""
        lead = 1.0 / ratio - 1.0 if ratio > 0 else float("inf")
        wanted = lead / (2 * SAMPLE_OVERHEAD)
        self.every = int(min(MAX_SAMPLE_EVERY, max(SAMPLE_EVERY, wanted)))
        self._countdown = min(self._countdown, self.every)

    def sample_now(self) -> bool:
        """Is this kept-kernel call one of the sampled ones? (a decrement between samples)"""
        self._countdown -= 1
        if self._countdown > 0:
            return False
        self._countdown = self.every
        return True

    def steady(self, kernel: Callable[[], object], eager: Callable[[], object]) -> object:
        """A sampled call, run eager or as the kernel (alternately), timed; may demote."""
        kernels, eagers = self._sampled
        which = len(kernels) > len(eagers)
        start = self.clock()
        result = eager() if which else kernel()
        took = self.clock() - start
        (eagers if which else kernels).append(took)
        self._steady_calls += self.every
        if len(eagers) == len(kernels) >= WINDOW:  # a pair completed: judge the last WINDOW
            del kernels[:-WINDOW], eagers[:-WINDOW]
            ratios = [k / e if e > 0 else float("inf") for k, e in zip(kernels, eagers)]
            median = _quantile(ratios, 0.5)
            self._pace(median)
            if median > DEMOTE_ABOVE:
                k, e = _quantile(kernels, 0.5), _quantile(eagers, 0.5)
                self.verdict = "eager"
                self.reason = (
                    f"demoted: kernel {k * 1e6:.1f} us against eager {e * 1e6:.1f} us over "
                    f"{self._steady_calls} calls ({WINDOW} sampled pairs)"
                )
        return result
