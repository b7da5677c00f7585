"""tools/install_deps.py: uv is given what pip is configured with, and torch stays as installed."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import install_deps  # noqa: E402

# ``pip config list`` as pip 23 prints it: files' settings and the environment's (PIP_FIND_LINKS -> :env:)
PIP_CONFIG = """:env:.default-timeout='180'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/elsewhere'
"""


def test_pips_sources_become_uvs_options_and_the_environment_wins_as_in_pip():
    args, cert = install_deps.pip_settings(PIP_CONFIG)
    assert args == ["--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/pypi-more/simple",
                    "--find-links", "/opt/wheels", "--constraint", "/etc/xdg/pip/constraints.txt"]
    assert cert == "/etc/ssl/certs/ca-certificates.crt"
    assert install_deps.pip_settings("") == ([], None)


def test_torch_is_held_at_the_installed_version():
    import importlib.metadata
    assert install_deps.torch_pin() == f"torch=={importlib.metadata.version('torch')}"


def test_dry_run_prints_uv_then_pip_and_installs_nothing():
    out = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "tools", "install_deps.py"),
                          "--dry-run", "-e", ".[lab]"], capture_output=True, text=True, check=True).stdout.splitlines()
    assert "uv pip install" in out[1] and out[1].endswith("-e '.[lab]'")
    assert out[2].endswith("-m pip install --quiet -e '.[lab]'")
