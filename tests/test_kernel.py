"""Kernel > Interrupt and kernel shutdown, in a real Jupyter kernel, leave no rank behind."""
import os
import queue
import signal

import pytest

from conftest import wait_gone

jupyter_client = pytest.importorskip("jupyter_client")


def execute(kc, code, timeout=120):
    """Run code in the kernel; return (status, stdout text, error name)."""
    msg_id = kc.execute(code)
    out, ename = [], None
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out.append(content["text"])
        elif kind == "error":
            ename = content["ename"]
        elif kind == "status" and content["execution_state"] == "idle":
            break
    reply = kc.get_shell_msg(timeout=timeout)
    return reply["content"]["status"], "".join(out), ename


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
    status, out, _ = execute(kc, "print(*netlab.cluster._default.pids)")
    return [int(p) for p in out.split()]


def test_kernel_interrupt_stops_ranks_and_next_run_works(kernel):
    km, kc = kernel
    status, out, _ = execute(kc, "import netlab\nprint(netlab.run(lambda c: c.rank, ranks=3).values)")
    assert status == "ok" and out.strip() == "[0, 1, 2]"
    pids = pids_in(kc)
    msg_id = kc.execute("import time\nnetlab.run(lambda c: time.sleep(600), ranks=3, timeout=900)")
    import time
    time.sleep(3)
    km.interrupt_kernel()                           # what Kernel > Interrupt does
    errors = []
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=30)
        except queue.Empty:
            break
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "error":
            errors.append(msg["content"]["ename"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    kc.get_shell_msg(timeout=30)
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
