"""Kernel > Interrupt and kernel shutdown, in a real Jupyter kernel, leave no rank behind."""
import os
import signal
import time

import pytest

from conftest import wait_gone

jupyter_client = pytest.importorskip("jupyter_client")


def shell_reply(kc, msg_id, timeout=120):
    """The shell reply to request `msg_id`, skipping replies to other requests.

    Replies are not all to the request just sent: `wait_for_ready` sends a kernel_info_request
    every second until one is answered (so a slow start leaves extra kernel_info_replies queued),
    and an interrupted cell's reply may arrive late. Only `parent_header.msg_id` says whose it is.
    """
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no shell reply to {msg_id} within {timeout} s")
        msg = kc.get_shell_msg(timeout=left)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def outputs(kc, msg_id, timeout=120):
    """(stdout text, error names) that request `msg_id` produced on iopub, up to its idle status."""
    out, errors = [], []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the kernel did not go idle after {msg_id} within {timeout} s")
        msg = kc.get_iopub_msg(timeout=left)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream" and content["name"] == "stdout":
            out.append(content["text"])
        elif kind == "error":
            errors.append(content["ename"])
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(out), errors


def execute(kc, code, timeout=120):
    """Run code in the kernel; return (status, stdout text, error name or None)."""
    msg_id = kc.execute(code)
    out, errors = outputs(kc, msg_id, timeout)
    reply = shell_reply(kc, msg_id, timeout)
    return reply["content"]["status"], out, errors[0] if errors else None


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
