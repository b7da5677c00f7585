# netlab's commands:      make lab  (install, then open JupyterLab on labs/)
#                         make test (install, then run every test, notebooks included)
#                         make quick (install, then every test not marked slow, on two pytest workers: about 2 min on 2 cores)
#                         make bench (install, then the speed set: each speed target measured, in one table)
#                         make site (install, then build the website of every chapter executed: _build/site/)
# Everything goes into a local virtual environment, .venv/. torch is pinned and CPU-only: on Linux
# tools/install_torch.py takes it from PyTorch's CPU index (PyPI's Linux wheel pulls several GB of
# CUDA), falling back to the default index; a compatible torch already in .venv is kept.
#   make lab TORCH=torch==2.12.0      another version (then kept only if it matches exactly)
#   make lab TORCH_INDEX=             skip the CPU index (default index only)
#   make test WORKERS=0               one pytest process (a small machine; make quick too); WORKERS=4 more workers
#   make site CI=1                    the site at CI sizes (as make test builds it); SITE_FLAGS=--reuse keeps
#                                     executed chapters whose inputs did not change

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
STAMP  := $(VENV)/.netlab-installed
SITE_STAMP := $(VENV)/.netlab-site-installed
WORKERS ?= 3
QUICK_WORKERS := $(if $(filter command line environment,$(origin WORKERS)),$(WORKERS),2)
EXACT  := $(if $(filter file,$(origin TORCH)),,--exact)

.PHONY: install lab test quick bench site fonts clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile tools/install_torch.py tools/install_deps.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python tools/install_torch.py --torch "$(TORCH)" --index "$(TORCH_INDEX)" $(EXACT)
	$(BIN)/python tools/install_deps.py -e ".[lab,dev]"
	@touch $(STAMP)

# The website's tools (Jupyter Book 1, pyproject's [site] extra) go into the same .venv, stamped apart:
# make install stays as it was, make site and make test add them.
$(SITE_STAMP): $(STAMP)
	$(BIN)/python tools/install_deps.py -e ".[site]"
	@touch $(SITE_STAMP)

# The chapters' Chinese terms (集合通信, ...) need a CJK font where the site is built and checked in Chromium:
# Debian's fonts-noto-cjk, installed when we are root (as binder/apt.txt installs it on Binder).
fonts:
	@if fc-list :lang=zh family 2>/dev/null | grep -q .; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's fonts-noto-cjk for the site's Chinese terms"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk; } >/tmp/netlab-fonts.log 2>&1 \
	    || echo "could not install fonts-noto-cjk (see /tmp/netlab-fonts.log): the Chinese terms will not render here"; \
	else echo "no CJK font here (Debian: apt-get install fonts-noto-cjk): the Chinese terms will not render in this machine's browser"; fi

# JupyterLab refuses to run as root unless told; containers often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: install
	OMP_NUM_THREADS=1 $(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=labs $(ROOT_FLAG)

# Three pytest workers on two cores (--dist loadgroup, tests/scheduling.py): a third of the suite's wall time is
# waiting (real links, the browser, rank timeouts), which a third worker fills: 805 s of pytest, Binder built cold, where two workers
# took 1,033 s on the same suite but for the testbed's priority (7 December, fresh clones); four took longer than three
# (681 s against 595-860 s in all over ten runs, 1,105-1,625 CPU s: the machine's speed moved the most). Each chapter executes once: one worker runs the notebooks (nbval), then
# the tests that use them (the site, the torch check: group "chapters", tests/chapter_runs.py, which records
# nbval's execution for them); each browser chapter is a unit of its own; every other file stays whole on one
# worker, as with --dist loadfile (a file's module fixtures are built once); the longest
# units start first. The real-kernel, browser and Binder tests' bounds were derived on a loaded machine
# (load 10-30), which is what the other workers make; the real kernel's testbed raises its own priority.
# make quick computes without waiting: two workers, unless WORKERS is given.
# Both byte-compile netlab first: where PYTHONDONTWRITEBYTECODE is set (this project's machines set it), every kernel, fork
# server and command the tests start would otherwise compile netlab's modules again (about 0.5 CPU s each).
test: install $(SITE_STAMP) fonts
	$(BIN)/python -m compileall -q netlab
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup tests labs --nbval-lax --nbval-current-env -q -rs --durations=25

quick: install
	$(BIN)/python -m compileall -q netlab
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(QUICK_WORKERS) --dist worksteal -m "not slow" tests labs --nbval-lax --nbval-current-env -q -rs

bench: install
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/speed.py

site: install $(SITE_STAMP) fonts
	OMP_NUM_THREADS=1 $(BIN)/python tools/build_site.py $(SITE_FLAGS)

clean:
	rm -rf $(VENV) *.egg-info _build
