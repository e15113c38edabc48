"""Translating a frame leaves the user's warning state alone: what a module has already
shown stays shown ("default" and "once" actions), the filters are the user's, and the
translator's own numpy calls on proxy values warn nobody."""

import threading
import warnings

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.symbolic import numpy_support
from framehook.translator.symbolic.numpy_support import warnings_ignored, warnings_raised


def _user_warning():
    warnings.warn("careful", UserWarning)


def _empty_mean(x):
    return np.mean(x[:0]) + x  # numpy warns "Mean of empty slice" on real (and proxy) values


def _shown(action, between):
    """How many times a user warning raised twice is shown, with ``between`` run in between."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        _user_warning()
        between()
        _user_warning()
    return sum(str(w.message) == "careful" for w in caught)


def _translate():
    ft.reset()
    opt = ft.optimize("eager")(_empty_mean)
    opt(np.ones(3))  # its own "Mean of empty slice" is not counted
    assert ft.explain(_empty_mean)(np.ones(3)).graph_count == 1


def test_a_translation_does_not_make_modules_forget_shown_warnings():
    for action in ("default", "once", "module"):
        assert _shown(action, lambda: None) == 1
        assert _shown(action, _translate) == 1, action
    assert _shown("always", _translate) == 2


def test_the_captured_function_warns_like_plain_numpy():
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        _empty_mean(np.ones(3))
    ft.reset()
    opt = ft.optimize("eager")(_empty_mean)
    with warnings.catch_warnings(record=True) as captured:
        warnings.simplefilter("always")
        opt(np.ones(3))  # translation (proxy values: quiet) and the graph's run (warns)
        opt(np.ones(3))  # cache hit
    messages = [str(w.message) for w in plain]
    assert messages and [str(w.message) for w in captured] == messages * 2


def test_warnings_ignored_restores_the_filters_in_force():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before = list(warnings.filters)
        with warnings_ignored():
            warnings.warn("hidden", UserWarning)  # would raise under "error"
            inner = warnings.filters
            inner.insert(0, ("always", None, DeprecationWarning, None, 0))  # user code inside
        assert warnings.filters is inner
        assert warnings.filters[1:] == before and warnings.filters[0][0] == "always"
        try:
            warnings.warn("raised", UserWarning)
        except UserWarning:
            pass
        else:
            raise AssertionError("the 'error' filter is gone")
    try:
        with warnings_ignored():
            raise KeyError("inside")
    except KeyError:
        pass
    assert not any(isinstance(entry[1], numpy_support._ThisThread) for entry in warnings.filters)


@pytest.mark.parametrize("quiet", [warnings_ignored, warnings_raised])
def test_the_translators_filters_leave_other_threads_alone(quiet):
    # the filter list is shared by every thread: a translation on one thread silenced the
    # warnings of code another thread ran meanwhile (warnings_raised made them exceptions)
    seen, errors = [], []

    def other():
        try:
            warnings.warn("from another thread", UserWarning)
        except Exception as e:  # noqa: BLE001 - what the test checks
            errors.append(e)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with quiet():
            t = threading.Thread(target=other)
            t.start()
            t.join()
            try:
                warnings.warn("from this thread", UserWarning)
            except UserWarning:
                seen.append("raised")
        seen += [str(w.message) for w in caught]
    assert errors == []
    expected = ["from another thread"] + (["raised"] if quiet is warnings_raised else [])
    assert sorted(seen) == sorted(expected)
    assert not any(isinstance(entry[1], numpy_support._ThisThread) for entry in warnings.filters)
