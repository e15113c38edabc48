"""The numba backend's kernel-or-eager decision (``measure``), driven by a fake clock:
a clear win is kept, a near-tie and a loss go eager, noise spikes do not flip a win, the
measuring stops at its caps, and a kept kernel that loses in steady state is demoted with
a note saying by how much. No test here times anything real."""

from __future__ import annotations

from typing import Any, List

import pytest

from framehook.translator.backends.numba import measure
from framehook.translator.backends.numba.measure import Measurement


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, seconds: float) -> str:
        self.now += seconds
        return "ran"


def measured(kernel: List[float], eager: List[float], max_pairs: int = 20) -> Measurement:
    """Measure with call times taken in turn from the lists (cycled) until a verdict."""
    clock = Clock()
    m = Measurement(max_pairs, clock=clock)
    k = e = 0
    while m.verdict is None:
        if m.next_is_eager():
            assert m.timed(1, lambda: clock.spend(eager[e % len(eager)])) == "ran"
            e += 1
        else:
            assert m.timed(0, lambda: clock.spend(kernel[k % len(kernel)])) == "ran"
            k += 1
        m.decide()
        assert k + e <= 2 * max_pairs, "the measurement never ends"
    return m


def test_a_clear_win_is_kept_after_few_pairs():
    m = measured([10e-6], [100e-6])
    assert m.verdict == "kernel" and m.reason == ""
    assert len(m.kernel) == len(m.eager) == measure.MIN_PAIRS  # stopped early


def test_a_clear_loss_goes_eager_after_few_pairs_with_the_times():
    m = measured([300e-6], [100e-6])
    assert m.verdict == "eager" and len(m.eager) == measure.MIN_PAIRS
    assert "kernel 300.0 us against eager 100.0 us" in m.reason


@pytest.mark.parametrize("kernel", [[98e-6, 103e-6], [96e-6], [100e-6], [90e-6, 99e-6, 101e-6, 97e-6]])
def test_a_near_tie_goes_eager_after_all_pairs(kernel):
    m = measured(kernel, [100e-6], max_pairs=12)
    assert m.verdict == "eager", m.reason
    assert len(m.eager) == 12 and "not measured faster than eager" in m.reason


def test_a_narrow_but_steady_win_is_kept():
    m = measured([80e-6, 85e-6, 82e-6], [100e-6], max_pairs=12)
    assert m.verdict == "kernel"


def test_noise_spikes_do_not_flip_a_win():
    # one call in six of the kernel hit by a busy neighbour (20x slower), eager spiking too
    m = measured([60e-6, 60e-6, 1200e-6, 60e-6, 60e-6, 60e-6], [100e-6, 100e-6, 100e-6, 900e-6], max_pairs=12)
    assert m.verdict == "kernel"


def test_measuring_stops_once_its_time_is_spent():
    # slow calls: the verdict comes after MAX_MEASURE_SECONDS, before the pair cap
    m = measured([0.2, 0.24], [0.22], max_pairs=100)
    assert m.verdict == "eager"
    assert m.spent >= measure.MAX_MEASURE_SECONDS and len(m.eager) < 10


def test_zero_pairs_means_the_kernel_untimed():
    m = Measurement(0, clock=Clock())
    assert m.verdict == "kernel" and m.decide() == "kernel"


def steady(m: Measurement, clock: Clock, kernel: float, eager: float, samples: int) -> List[str]:
    """Calls of a kept kernel until ``samples`` of them were timed or it is demoted."""
    ran: List[str] = []
    while m.verdict == "kernel" and samples > 0:
        if m.sample_now():
            samples -= 1
            m.steady(
                lambda: ran.append("kernel") or clock.spend(kernel), lambda: ran.append("eager") or clock.spend(eager)
            )
        else:
            ran.append("untimed")
    return ran


def kept(kernel: float, eager: float) -> Any:
    m = measured([kernel], [eager])
    assert m.verdict == "kernel"
    clock = Clock()
    m.clock = clock
    return m, clock


def test_steady_state_samples_a_small_share_alternating():
    m, clock = kept(90e-6, 100e-6)  # a narrow winner: watched closely
    steady(m, clock, 90e-6, 100e-6, 2 * measure.WINDOW)  # its probation (below)
    ran = steady(m, clock, 90e-6, 100e-6, 20)
    assert m.verdict == "kernel" and m.every == measure.SAMPLE_EVERY
    timed = [r for r in ran if r != "untimed"]
    assert timed == ["kernel", "eager"] * 10  # in turn
    # (the first sample comes when probation's countdown ends)
    assert 19 * measure.SAMPLE_EVERY < len(ran) <= 20 * measure.SAMPLE_EVERY


def test_a_narrow_winner_is_sampled_densely_until_its_first_window_is_judged():
    m, clock = kept(90e-6, 100e-6)  # led by 10%: on probation
    assert m.every == measure.PROBATION_EVERY
    ran = steady(m, clock, 90e-6, 100e-6, 2 * measure.WINDOW)
    assert m.verdict == "kernel"
    assert len(ran) == 2 * measure.WINDOW * measure.PROBATION_EVERY  # every other call timed
    assert m.every == measure.SAMPLE_EVERY  # judged: sampled as any narrow winner from here


def test_a_clear_winner_has_no_probation():
    m, _ = kept(70e-6, 100e-6)  # led by 30%
    assert m.every > measure.SAMPLE_EVERY


def test_a_narrow_win_the_steady_state_does_not_confirm_is_undone_within_its_probation():
    m, clock = kept(90e-6, 100e-6)
    ran = steady(m, clock, 130e-6, 100e-6, 100)  # the steady state: the kernel loses by 30%
    assert m.verdict == "eager" and m.reason.startswith("demoted: kernel 130.0 us against eager 100.0 us")
    assert len(ran) == 2 * measure.WINDOW * measure.PROBATION_EVERY


@pytest.mark.parametrize("kernel", [1e-6, 10e-6, 30e-6])
def test_a_far_ahead_kernel_is_sampled_less_so_eager_samples_cost_little(kernel):
    m, clock = kept(kernel, 100e-6)
    ran = steady(m, clock, kernel, 100e-6, 4 * measure.WINDOW)
    assert m.verdict == "kernel" and m.every > measure.SAMPLE_EVERY
    # what the sampled eager calls added, against the kernel's time for all the calls
    extra = ran.count("eager") * (100e-6 - kernel)
    assert extra / (len(ran) * kernel) <= 1.5 * measure.SAMPLE_OVERHEAD, (m.every, len(ran))


def test_a_kept_kernel_that_loses_in_steady_state_is_demoted_with_a_note():
    m, clock = kept(10e-6, 100e-6)
    steady(m, clock, 10e-6, 100e-6, 2 * measure.WINDOW)
    assert m.verdict == "kernel"
    ran = steady(m, clock, 250e-6, 100e-6, 4 * measure.WINDOW)
    assert m.verdict == "eager", "the loss was not noticed"
    assert ran.count("eager") + ran.count("kernel") <= 2 * measure.WINDOW + 1
    assert m.reason.startswith("demoted: kernel 250.0 us against eager 100.0 us over ")
    assert " calls" in m.reason


def test_one_slow_steady_sample_does_not_demote():
    m, clock = kept(10e-6, 100e-6)
    spikes: Any = iter([500e-6] + [10e-6] * 1000)
    for _ in range(30):
        while not m.sample_now():
            pass
        m.steady(lambda: clock.spend(next(spikes)), lambda: clock.spend(100e-6))
    assert m.verdict == "kernel"
