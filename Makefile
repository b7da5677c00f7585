# netlab's commands:      make lab  (install, then open JupyterLab on labs/)
#                         make test (install, then run every test, notebooks included)
#                         make quick (install, then every test not marked slow: about 2 min on 2 idle cores)
#                         make bench (install, then the speed set: each speed target measured, in one table)
# Everything goes into a local virtual environment, .venv/. torch is pinned and CPU-only: on Linux
# tools/install_torch.py takes it from PyTorch's CPU index (PyPI's Linux wheel pulls several GB of
# CUDA), falling back to the default index; a compatible torch already in .venv is kept.
#   make lab TORCH=torch==2.12.0      another version (then kept only if it matches exactly)
#   make lab TORCH_INDEX=             skip the CPU index (default index only)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
STAMP  := $(VENV)/.netlab-installed
EXACT  := $(if $(filter file,$(origin TORCH)),,--exact)

.PHONY: install lab test quick bench clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile tools/install_torch.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python tools/install_torch.py --torch "$(TORCH)" --index "$(TORCH_INDEX)" $(EXACT)
	$(BIN)/python -m pip install --quiet -e ".[lab,dev]"
	@touch $(STAMP)

# JupyterLab refuses to run as root unless told; containers often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: install
	OMP_NUM_THREADS=1 $(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=labs $(ROOT_FLAG)

test: install
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest tests labs --nbval-lax --nbval-current-env -q -rs

quick: install
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -m "not slow" tests labs --nbval-lax --nbval-current-env -q -rs

bench: install
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/speed.py

clean:
	rm -rf $(VENV) *.egg-info
