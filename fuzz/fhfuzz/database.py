"""Where findings are shared: ``--database SPEC`` as a Hypothesis example database.

A directory (shared storage, ``DirectoryBasedExampleDatabase``) or ``redis://host:port[/db]``
(``RedisExampleDatabase``, needs the redis package). Every machine that points at the same
database replays the failing examples the others saved before generating new ones.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase


def open_database(spec: str) -> ExampleDatabase:
    """The example database ``spec`` names; a ValueError says what was expected."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"--database: expected a directory path or redis://host:port[/db], got {spec!r}")
    if "://" not in spec:
        path = Path(spec)
        if path.exists() and not path.is_dir():
            raise ValueError(f"--database {spec!r}: expected a directory, but it is a file")
        return DirectoryBasedExampleDatabase(str(path))
    parts = urlsplit(spec)
    if parts.scheme != "redis":
        raise ValueError(
            f"--database {spec!r}: unknown scheme {parts.scheme!r}; expected a directory path or redis://host:port[/db]"
        )
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise ValueError(f"--database {spec!r}: expected redis://host:port[/db] with a host and a port")
    db_text = parts.path.strip("/") or "0"
    if not db_text.isdigit():
        raise ValueError(f"--database {spec!r}: the database number {db_text!r} must be a non-negative integer")
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError as exc:
        raise ValueError(f"--database {spec!r}: the redis package is not installed (pip install redis): {exc}") from exc
    client = redis.Redis(host=parts.hostname, port=port, db=int(db_text))
    # findings stay for a quarter (Hypothesis keeps them 8 days by default): a shared
    # campaign replays them until someone fixes the bug
    return RedisExampleDatabase(client, expire_after=timedelta(days=90), key_prefix=b"framehook-fuzz:")
