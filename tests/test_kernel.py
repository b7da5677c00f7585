"""Kernel > Interrupt and kernel shutdown, in a real Jupyter kernel, leave no rank behind."""
import os
import signal
import time

import pytest

from conftest import execute, outputs, shell_reply, wait_gone

pytestmark = pytest.mark.slow             # real Jupyter kernels, interrupted and shut down

jupyter_client = pytest.importorskip("jupyter_client")


@pytest.fixture
def kernel():
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=os.path.dirname(__file__))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    yield km, kc
    kc.stop_channels()
    if km.is_alive():
        km.shutdown_kernel(now=True)


def pids_in(kc):
    status, out, _ = execute(kc, "print(*netlab.runtime.shared._default.pids)")
    return [int(p) for p in out.split()]


def test_kernel_interrupt_stops_ranks_and_next_run_works(kernel, tmp_path):
    km, kc = kernel
    status, out, _ = execute(kc, "import netlab\nprint(netlab.run(lambda c: c.rank, ranks=3).values)")
    assert status == "ok" and out.strip() == "[0, 1, 2]"
    pids = pids_in(kc)
    started = tmp_path / "started"
    msg_id = kc.execute(f"import time\n"
                        f"netlab.run(lambda c: (open({str(started)!r} + str(c.rank), 'w').close(), time.sleep(600)),\n"
                        f"           ranks=3, timeout=900)")
    deadline = time.monotonic() + 120               # the ranks are inside the run, not before it
    while len(list(tmp_path.glob("started*"))) < 3:
        assert time.monotonic() < deadline, "the ranks did not start the run within 120 s"
        time.sleep(0.1)
    km.interrupt_kernel()                           # what Kernel > Interrupt does
    _, errors = outputs(kc, msg_id, timeout=60)
    assert shell_reply(kc, msg_id, timeout=60)["content"]["status"] == "error"
    assert errors == ["Interrupted"]
    assert wait_gone(pids) == []
    status, out, _ = execute(kc, "print(netlab.run(lambda c: c.rank * 2, ranks=3).values)")
    assert status == "ok" and out.strip() == "[0, 2, 4]"


def test_ranks_exit_with_the_kernel(kernel):
    km, kc = kernel
    execute(kc, "import netlab\nnetlab.run(lambda c: c.rank, ranks=4)")
    pids = pids_in(kc)
    os.kill(km.provisioner.process.pid, signal.SIGKILL)   # the kernel dies without cleaning up
    assert wait_gone(pids, 10) == []
