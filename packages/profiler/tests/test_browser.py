"""The speedscope file opens in the real speedscope viewer, in headless Chromium, with no
console errors; the HTML flame graph draws its boxes there, offline.

Opt-in, because it may install Chromium (apt-get) and the speedscope npm package from the
network: run it with

    FRAMEHOOK_BROWSER_TESTS=1 python -m pytest packages/profiler/tests -m browser

(a few seconds once the viewer is cached). Where Chromium or the speedscope package cannot
be installed it skips saying why. CI runs it in a job of its own.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import threading

import pytest

from framehook.profiler import Profiler

from fhprof_helpers import npm_package, run_for_setup

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        os.environ.get("FRAMEHOOK_BROWSER_TESTS") != "1",
        reason="opt-in: needs the network to install Chromium and speedscope; set FRAMEHOOK_BROWSER_TESTS=1",
    ),
]

SPEEDSCOPE = "speedscope@1.25.0"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    if shutil.which("apt-get") and os.geteuid() == 0:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run_for_setup(["apt-get", "update", "-q"], env=env)
        run_for_setup(["apt-get", "install", "-y", "-q", "chromium"], env=env)
        for name in BROWSERS:
            path = shutil.which(name)
            if path:
                return path
    pytest.skip("no Chromium here and it could not be installed with apt-get; the browser test needs one")


def _speedscope_dist():
    return os.path.dirname(npm_package(SPEEDSCOPE, "speedscope", "speedscope/dist/release/index.html"))


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_speedscope_file_opens_in_the_viewer_without_console_errors(tmp_path):
    browser = _browser()
    dist = _speedscope_dist()
    site = tmp_path / "site"
    shutil.copytree(dist, site / "speedscope")
    with Profiler() as prof:
        fib(12)
        worker = threading.Thread(target=fib, args=(10,))
        worker.start()
        worker.join()
    prof.profile.export(site / "profile.speedscope.json")
    assert json.loads((site / "profile.speedscope.json").read_text())["profiles"]

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        url = f"{base}/speedscope/index.html#profileURL={base}/profile.speedscope.json"
        proc = subprocess.run(
            [
                browser,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                f"--user-data-dir={tmp_path / 'chrome-profile'}",
                "--enable-logging=stderr",
                "--v=0",
                "--virtual-time-budget=15000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    errors = [line for line in console if re.search(r"error|uncaught|exception", line, re.I)]
    assert errors == [], errors
    dom = proc.stdout
    # speedscope names the page after the loaded profile once it parsed the file
    title = re.search(r"<title>(.*?)</title>", dom)
    assert title and "framehook-profiler" in title.group(1), (title, dom[:2000])
    assert "<canvas" in dom


def _headless(browser, tmp_path, *args):
    return subprocess.run(
        [
            browser,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'chrome-profile'}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_html_flame_graph_draws_its_boxes_offline(tmp_path):
    image_module = pytest.importorskip("PIL.Image", reason="Pillow (with cairosvg) reads the screenshot")
    browser = _browser()
    with Profiler() as prof:
        fib(14)
        worker = threading.Thread(target=fib, args=(12,))
        worker.start()
        worker.join()
    page = prof.profile.export(tmp_path / "flame.html")
    url = f"file://{page}"  # (no server: the page needs nothing but itself)
    shot = tmp_path / "flame.png"
    proc = _headless(browser, tmp_path, "--window-size=1200,700", f"--screenshot={shot}", url)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    assert [line for line in console if re.search(r"error|uncaught|exception", line, re.I)] == []
    image = image_module.open(shot).convert("RGB")
    raw = image.tobytes()
    pixels = [raw[i : i + 3] for i in range(0, len(raw), 3)]
    coloured = sum(1 for r, g, b in pixels if max(r, g, b) - min(r, g, b) > 60)
    assert coloured > len(pixels) // 20, coloured  # boxes, in colour (not an empty or black page)
    dom = _headless(browser, tmp_path, "--dump-dom", url).stdout
    drawn = dom.count("<rect")
    assert drawn >= 2 + 2 * 14, drawn  # all, two threads, fib's depth in each
