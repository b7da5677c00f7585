# netlab's two commands:  make lab  (install, then open JupyterLab on labs/)
#                         make test (install, then run every test, notebooks included)
# Everything goes into a local virtual environment, .venv/. torch is pinned to a CPU build here:
# an unpinned torch would pull several GB of CUDA wheels.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.netlab-installed

.PHONY: install lab test bench clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$(TORCH)" -e ".[lab,dev]"
	@touch $(STAMP)

# JupyterLab refuses to run as root unless told; containers often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: install
	OMP_NUM_THREADS=1 $(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=labs $(ROOT_FLAG)

test: install
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest tests labs --nbval-lax --nbval-current-env -q

bench: install
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/launch.py

clean:
	rm -rf $(VENV) *.egg-info
