import os
import sys

import matplotlib
import psutil
import pytest

matplotlib.use("Agg")
sys.path.insert(0, os.path.dirname(__file__))          # tests/solutions: reference answers

import netlab  # noqa: E402
from netlab import cluster  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _stop_pool_at_end():
    yield
    netlab.shutdown()


def pool_pids() -> list[int]:
    return list(cluster._default.pids) if cluster._default is not None and cluster._default.alive else []


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pids, seconds: float = 10.0) -> list[int]:
    """Pids still running after `seconds` (empty when all are gone)."""
    import time
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if running(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if running(p)]
