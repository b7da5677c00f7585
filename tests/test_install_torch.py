"""tools/install_torch.py: the uv and pip command lines per platform (a dry run: nothing is downloaded)."""
import os
import subprocess
import sys

import pytest

TOOL = os.path.join(os.path.dirname(__file__), "..", "tools", "install_torch.py")


def dry(*args, env=None, uv=False):
    """(exit status, the pip lines or the 'kept' line (uv's too with uv=True), stderr)."""
    out = subprocess.run([sys.executable, TOOL, "--dry-run", *args], capture_output=True, text=True,
                         env=dict(os.environ, **(env or {})), timeout=60)
    lines = out.stdout.strip().splitlines()
    return out.returncode, lines if uv else [ln for ln in lines if not ln.startswith("uv ")], out.stderr


def test_uv_tries_the_cpu_index_alone_then_pips_sources_before_pip_and_not_with_netlab_pip():
    rc, lines, _ = dry("--platform", "linux", "--installed", "none", uv=True)
    assert lines[:2] == ["uv pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0",
                         "uv pip install torch==2.13.0"] and len(lines) == 4
    rc, lines, _ = dry("--platform", "darwin", "--installed", "none", uv=True)
    assert lines[0] == "uv pip install torch==2.13.0" and len(lines) == 2
    rc, lines, _ = dry("--platform", "linux", "--installed", "none", env={"NETLAB_PIP": "1"}, uv=True)
    assert len(lines) == 2 and not any(ln.startswith("uv ") for ln in lines)


def test_linux_tries_the_cpu_index_first_then_the_default_index():
    rc, lines, _ = dry("--platform", "linux", "--installed", "none")
    assert rc == 0 and len(lines) == 2
    first, fallback = lines
    assert "--index-url https://download.pytorch.org/whl/cpu" in first and first.endswith("torch==2.13.0")
    assert "--timeout 10 --retries 0" in first                       # an unreachable index fails fast
    assert "--index-url" not in fallback and fallback.endswith("torch==2.13.0")


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_macos_and_windows_use_the_default_index(platform):
    rc, lines, _ = dry("--platform", platform, "--installed", "none")
    assert rc == 0 and len(lines) == 1 and "--index-url" not in lines[0] and lines[0].endswith("torch==2.13.0")


def test_a_compatible_torch_is_kept():
    for version in ("2.13.0+cpu", "2.6.0+cu124", "2.4.0"):           # pyproject: torch>=2.4
        rc, lines, _ = dry("--platform", "linux", "--installed", version)
        assert rc == 0 and len(lines) == 1 and "kept" in lines[0]
    rc, lines, _ = dry("--platform", "linux", "--installed", "2.3.1")     # too old for netlab
    assert len(lines) == 2


def test_an_explicit_torch_must_match_exactly():
    rc, lines, _ = dry("--platform", "linux", "--installed", "2.13.0+cpu", "--exact", "--torch", "torch==2.12.0")
    assert len(lines) == 2 and lines[0].endswith("torch==2.12.0")
    rc, lines, _ = dry("--platform", "linux", "--installed", "2.13.0+cpu", "--exact", "--torch", "torch==2.13.0")
    assert "kept" in lines[0]                                        # 2.13.0+cpu satisfies ==2.13.0


def test_knobs_from_the_environment_and_bad_input():
    rc, lines, _ = dry("--platform", "linux", "--installed", "none", env={"TORCH_INDEX": "", "TORCH": "torch==2.12.0"})
    assert lines == [f"{sys.executable} -m pip install --quiet torch==2.12.0"]
    rc, _, err = dry("--torch", "pytorch")
    assert rc != 0 and "TORCH must look like" in err


def test_make_passes_the_knobs():
    root = os.path.join(os.path.dirname(__file__), "..")
    plain = subprocess.run(["make", "-n", "-B", "install"], cwd=root, capture_output=True, text=True).stdout
    pinned = subprocess.run(["make", "-n", "-B", "install", "TORCH=torch==2.12.0", "TORCH_INDEX="], cwd=root,
                            capture_output=True, text=True).stdout
    assert 'install_torch.py --torch "torch==2.13.0" --index "https://download.pytorch.org/whl/cpu"' in plain
    assert "--exact" not in plain
    assert 'install_torch.py --torch "torch==2.12.0" --index "" --exact' in pinned
