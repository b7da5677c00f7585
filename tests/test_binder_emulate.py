"""binder/emulate.py, small: build Binder's environment, run chapter 1 at CI size in 1 CPU and 2 GB."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(ROOT, "binder"))
import emulate  # noqa: E402

pytestmark = pytest.mark.slow             # builds Binder's environment, runs a chapter in it


def test_requirements_drop_the_cpu_index_and_pin_the_local_torch(tmp_path):
    out = tmp_path / "req.txt"
    changes = emulate.requirements_here(os.path.join(ROOT, "binder", "requirements.txt"), str(out))
    text = out.read_text()
    assert "download.pytorch.org" not in text and "+cpu" not in text and "torch==2.13.0\n" in text
    assert len(changes) == 2 and all("cannot be reached" in c or "local CPU wheel" in c for c in changes)
    assert "fonts-noto-cjk" in open(os.path.join(ROOT, "binder", "apt.txt")).read()


def test_the_kept_environment_is_rebuilt_when_what_its_build_depends_on_changes(tmp_path, monkeypatch):
    """--cache's key: the same for the same inputs (a comment is not an input), another for another
    requirement, stand-in or Python, so that no change to binder/ runs in an environment built before it."""
    key = emulate.env_key()
    assert key == emulate.env_key()
    binder = tmp_path / "binder"
    binder.mkdir()
    requirements = open(os.path.join(ROOT, "binder", "requirements.txt")).read()
    (binder / "runtime.txt").write_text(open(os.path.join(ROOT, "binder", "runtime.txt")).read())
    monkeypatch.setattr(emulate, "BINDER", str(binder))
    (binder / "requirements.txt").write_text("# a comment\n" + requirements)
    assert emulate.env_key() == key
    (binder / "requirements.txt").write_text(requirements.replace("tqdm>=4.60", "tqdm>=4.61"))
    assert emulate.env_key() != key
    (binder / "requirements.txt").write_text(requirements)
    monkeypatch.setattr(emulate, "STAND_INS", emulate.STAND_INS[:-1])
    assert emulate.env_key() != key
    monkeypatch.undo()
    other = tmp_path / "python"                                   # another build of Python
    other.write_text("#!/bin/sh\necho 3.11.99 linux\n")
    other.chmod(0o755)
    monkeypatch.setattr(emulate, "_runtime_python", lambda: str(other))
    assert emulate.env_key() != key


def _cgroups_usable() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create a memory cgroup"
    base = "/sys/fs/cgroup" if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else "/sys/fs/cgroup/memory"
    probe = os.path.join(base, f"netlab-probe-{os.getpid()}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
    except OSError as exc:
        return f"cannot create a memory cgroup under {base}: {exc}"
    if subprocess.run(["which", "taskset"], capture_output=True).returncode:
        return "taskset is not installed"
    return None


# Where the test keeps Binder's environment between runs (binder/emulate.py --cache): built from scratch
# whenever requirements.txt, the stand-ins, runtime.txt's Python or the build steps change, or a day after
# the last build; NETLAB_BINDER_FRESH=1 builds a fresh one in the test's own folder every time.
CACHE = os.environ.get("NETLAB_BINDER_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "netlab", "binder")


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_chapter_1_runs_in_one_cpu_and_2_gb(tmp_path):
    """Modes alone and open. With one chapter the modes are the same run (a fresh kernel runs it, the
    pause only comes between chapters), so binder/emulate.py runs it once and measures it with its
    kernel open (open; back-to-back's row would be the same) and once that kernel is shut down (alone)."""
    why = _cgroups_usable()
    if why:
        pytest.skip(why)
    result = tmp_path / "result.json"
    fresh = os.environ.get("NETLAB_BINDER_FRESH") == "1"
    run = subprocess.run([sys.executable, os.path.join(ROOT, "binder", "emulate.py"), "--ci", "--chapters", "1",
                          "--modes", "alone,open", "--pause", "0", "--venv", str(tmp_path / "venv"),
                          "--out", str(tmp_path), "--json", str(result), *([] if fresh else ["--cache", CACHE])],
                         capture_output=True, text=True, timeout=1700)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # the environment is binder/'s: built from scratch now, or before from the same inputs and checked
    assert "build: requirements installed in" in run.stdout or "every requirement is installed in it" in run.stdout
    import json
    data = json.load(open(result))
    assert sorted(data["results"]) == ["alone", "open"]
    for mode in ("alone", "open"):
        row, = data["results"][mode]["chapters"]
        assert row["failed_cells"] == [] and data["results"][mode]["left_behind"] == []
        assert row["ok"] and 100e6 < row["peak_bytes"] < 2e9          # it ran, and inside the limit
        kernels = [p for p in row["processes"] if p["what"] == "kernel"]
        if mode != "alone":                                             # the kernel left open is listed
            assert any(p["rss_mb"] > 50 for p in kernels)
        else:                                                           # alone: measured once it was shut down
            assert kernels == []
        assert any(p["what"] == "JupyterLab server" and p["rss_mb"] > 30 for p in row["processes"])  # counted too
        assert data["results"][mode]["oom_kills"] == 0 and row["oom_kills"] == 0
        # netlab's memory checks in the chapter's kernel were logged; its first one had to start a fork server
        assert row["checks"] and row["checks"][0]["forkserver"] > 0 and row["checks"][0]["verdict"] == "ran"
        assert all(0 < c["available"] <= c["limit"] <= 2e9 for c in row["checks"])   # the cgroup's own limit


def test_binder_start_sets_one_thread_and_a_short_idle_release_unless_told():
    start = os.path.join(ROOT, "binder", "start")
    env = {k: v for k, v in os.environ.items() if k != "NETLAB_IDLE_S"}
    seen = dict(line.split("=", 1) for line in subprocess.run(["bash", start, "env"], env=env, capture_output=True,
                                                               text=True, check=True).stdout.splitlines() if "=" in line)
    assert seen["OMP_NUM_THREADS"] == "1" and seen["NETLAB_IDLE_S"] == "30"
    told = subprocess.run(["bash", start, "sh", "-c", "echo $NETLAB_IDLE_S"], env=dict(env, NETLAB_IDLE_S="5"),
                          capture_output=True, text=True, check=True).stdout.strip()
    assert told == "5"
