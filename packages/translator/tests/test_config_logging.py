"""The config object (validation, patch as context manager and decorator) and FRAMEHOOK_LOGS."""

import logging
import os
import subprocess
import sys

import pytest

from framehook.translator import config
from framehook.translator import logs as fh_logging
from framehook.translator.config import Config, ConfigError


def test_defaults_and_validation():
    cfg = Config()
    assert cfg.cache_size_limit == 8 and cfg.skip_stdlib is True
    cfg.cache_size_limit = 3
    assert cfg.cache_size_limit == 3
    with pytest.raises(ConfigError, match="cache_size_limit: expected int"):
        cfg.cache_size_limit = "8"
    with pytest.raises(ConfigError, match=">= 1"):
        cfg.cache_size_limit = 0
    with pytest.raises(ConfigError, match="expected int"):
        cfg.cache_size_limit = True
    with pytest.raises(ConfigError, match="no setting 'cache_limit'"):
        cfg.cache_limit = 3
    with pytest.raises(AttributeError, match="no setting"):
        cfg.nope
    with pytest.raises(ConfigError, match="tuple of str"):
        cfg.skip_dirs = (1,)
    cfg.record_dir = None
    cfg.record_dir = "/tmp"
    cfg.reset_defaults()
    assert cfg.cache_size_limit == 8
    assert "cache_size_limit = 8" in cfg.describe()
    assert "patch" in dir(cfg) and cfg.to_dict()["restart_limit"] == 10


def test_patch_context_manager_and_decorator():
    before = config.cache_size_limit
    with config.patch(cache_size_limit=2, verbose=True) as cfg:
        assert cfg is config and config.cache_size_limit == 2 and config.verbose
        with config.patch({"cache_size_limit": 5}):
            assert config.cache_size_limit == 5
        assert config.cache_size_limit == 2
    assert config.cache_size_limit == before and config.verbose is False

    @config.patch(restart_limit=1)
    def inner():
        return config.restart_limit

    assert inner() == 1 and config.restart_limit == 10
    # a bad value is reported where patch() is called, before anything changes
    with pytest.raises(ConfigError, match="restart_limit"):
        config.patch(restart_limit=-1)
    with pytest.raises(ConfigError, match="no setting"):
        config.patch(bogus=1)
    with pytest.raises(ConfigError, match="dict"):
        config.patch([("a", 1)])


def test_env_disable_read_at_import():
    code = "from framehook.translator import config; print(config.disable, config.record_dir)"
    env = dict(os.environ, FRAMEHOOK_DISABLE="1", FRAMEHOOK_RECORD_DIR="/tmp/recs")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "/tmp/recs"]


def test_parse_log_spec():
    assert fh_logging.parse_log_spec("guards, +bytecode,-translator") == {
        "guards": logging.INFO,
        "bytecode": logging.DEBUG,
        "translator": logging.ERROR,
    }
    assert set(fh_logging.parse_log_spec("all")) == set(fh_logging.COMPONENTS)
    assert fh_logging.parse_log_spec(" , ") == {}
    with pytest.raises(fh_logging.LogSpecError, match="unknown component 'gards'"):
        fh_logging.parse_log_spec("gards")


def test_set_logs_levels():
    try:
        fh_logging.set_logs("recompiles")
        assert fh_logging.get_logger("recompiles").level == logging.INFO
        fh_logging.set_logs(guards="debug", bytecode=True, restarts=False)
        assert fh_logging.get_logger("guards").level == logging.DEBUG
        assert fh_logging.get_logger("bytecode").level == logging.INFO
        assert fh_logging.get_logger("restarts").level == logging.NOTSET
        fh_logging.set_logs(all=True)
        assert all(fh_logging.get_logger(c).level == logging.INFO for c in fh_logging.COMPONENTS)
        with pytest.raises(fh_logging.LogSpecError):
            fh_logging.set_logs(nope=True)
        with pytest.raises(fh_logging.LogSpecError):
            fh_logging.set_logs(guards="loud")
        with pytest.raises(fh_logging.LogSpecError):
            fh_logging.get_logger("nope")
    finally:
        fh_logging.set_logs()
    assert all(fh_logging.get_logger(c).level == logging.NOTSET for c in fh_logging.COMPONENTS)


def test_framehook_logs_env_var():
    code = (
        "import logging; from framehook.translator import logs as l; "
        "print(l.get_logger('guards').level, l.get_logger('bytecode').level); "
        "l.get_logger('guards').info('hello-guards')"
    )
    env = dict(os.environ, FRAMEHOOK_LOGS="guards,+bytecode")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(logging.INFO), str(logging.DEBUG)]
    assert "[framehook.translator.guards] INFO: hello-guards" in out.stderr
    bad = subprocess.run(
        [sys.executable, "-c", "import framehook.translator.logs"],
        env=dict(os.environ, FRAMEHOOK_LOGS="nonsense"),
        capture_output=True,
        text=True,
    )
    # not an import failure: the entry is skipped with one line naming it (test_rough_edges.py)
    assert bad.returncode == 0 and "ignoring 'nonsense' in FRAMEHOOK_LOGS" in bad.stderr


def test_warn_once(caplog):
    logger = fh_logging.get_logger("translator")
    fh_logging.reset_once()
    with caplog.at_level(logging.WARNING, logger="framehook.translator"):
        assert fh_logging.warn_once(logger, "k", "first %s", 1)
        assert not fh_logging.warn_once(logger, "k", "first %s", 2)
    assert [r.getMessage() for r in caplog.records] == ["first 1"]
    fh_logging.reset_once()
