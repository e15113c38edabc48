"""Runs CPython regression-test modules and prints each test's outcome as JSON.

    python regrtest_runner.py {plain|shim|hook} [--shim PATH] MODULE...

plain: as shipped; shim: under a do-nothing eval-frame function; hook: with framehook's
pass-through callback intercepting every frame of the main thread.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class Outcomes(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.outcomes = {}

    def addSuccess(self, test):
        self.outcomes[test.id()] = "pass"

    def addFailure(self, test, err):
        self.outcomes[test.id()] = "fail"

    def addError(self, test, err):
        self.outcomes[getattr(test, "id", lambda: str(test))()] = "error"

    def addSkip(self, test, reason):
        self.outcomes[test.id()] = "skip"

    def addExpectedFailure(self, test, err):
        self.outcomes[test.id()] = "xfail"

    def addUnexpectedSuccess(self, test):
        self.outcomes[test.id()] = "xpass"

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self.outcomes[subtest.id()] = "fail"


def load_shim(path):
    spec = importlib.util.spec_from_file_location("fh_shim", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["plain", "shim", "hook", "skip"])
    parser.add_argument("--shim")
    parser.add_argument("modules", nargs="+")
    args = parser.parse_args()

    suites = {}
    for name in args.modules:
        try:
            suites[name] = unittest.defaultTestLoader.loadTestsFromName("test." + name)
        except Exception as exc:  # noqa: BLE001 - reported as the module's outcome
            suites[name] = exc

    stop = lambda: None  # noqa: E731
    if args.mode == "shim":
        shim = load_shim(args.shim)
        shim.install()
        stop = shim.uninstall
    elif args.mode == "hook":
        import framehook.runtime as rt
        from passthrough import PassThrough

        rt.set_eval_frame(PassThrough())
        stop = lambda: rt.set_eval_frame(None)  # noqa: E731
    elif args.mode == "skip":
        import framehook.runtime as rt

        rt.set_eval_frame(lambda frame, entry, state: None)  # the do-nothing callback
        stop = lambda: rt.set_eval_frame(None)  # noqa: E731

    results = {}
    real_stdout, real_stderr = sys.stdout, sys.stderr
    try:
        for name, suite in suites.items():
            if isinstance(suite, Exception):
                results[name] = {"<load>": f"load error: {type(suite).__name__}"}
                continue
            outcome = Outcomes()
            sys.stdout = sys.stderr = io.StringIO()  # the tests' chatter is not the point
            try:
                suite.run(outcome)
            finally:
                sys.stdout, sys.stderr = real_stdout, real_stderr
            results[name] = outcome.outcomes
    finally:
        stop()
    json.dump(results, real_stdout)


if __name__ == "__main__":
    main()
