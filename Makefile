# One command each: `make reproduce` runs every notebook on the embedded default, `make test` runs the tests.
# Both create a virtual environment in $(VENV) and install what they need, torch first
# (a bare `torch` requirement would pull several GB of CUDA wheels on a CPU box).
PYTHON  ?= python3
VENV    ?= .venv
TORCH   ?= torch==2.13.0
PRESET  ?= default
PYTEST_ARGS ?=
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.ddrl-installed
# The exact versions of the environment the tests and CI run in (Linux x86_64, CPython 3.11; ddrl/run/lockfile.py): every
# line of constraints.txt names that platform in its marker, so elsewhere only pyproject.toml's ranges apply.
# `make install LOCK=` takes the newest releases the ranges allow instead; `make lock` writes the file again.
LOCK    ?= constraints.txt
LOCK_C  := $(if $(LOCK),-c $(LOCK))
# 2-core machines oversubscribe fast: one torch process at a time, with a bounded thread count.
export OMP_NUM_THREADS ?= 2
export TOKENIZERS_PARALLELISM ?= false
export HF_HUB_OFFLINE ?= 1
export MPLBACKEND ?= Agg

.PHONY: install publish install-verl lock lock-verl test test-study test-fast test-e2e test-slow test-browser test-verl reproduce smoke figures docs clean

# JupyterLab opens the paired notebooks/NN_*.py as notebooks (jupytext's "Jupytext Notebook" viewer), set as an
# override of this environment only (ddrl/run/labsettings.py); the pairing itself is jupytext.toml's.
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.d/ddrl.json
install: $(STAMP) $(LAB_OVERRIDES)

$(LAB_OVERRIDES): $(STAMP) ddrl/run/labsettings.py
	$(PY) -m ddrl.run.labsettings

# torch through pip (which reads this machine's pip configuration: the CPU wheel on disk), then the rest through uv
# (PyPI's uv, installed by pip): the same packages and versions as pip resolves, with the installed CPU torch kept,
# in ~13 s instead of pip's ~146 s (measured 2026-12-02 in two fresh venvs; `pip freeze` identical but for uv itself).
# Should uv fail, pip installs the rest. uv, unlike pip, writes no bytecode unless asked (--compile-bytecode): without
# it, where PYTHONDONTWRITEBYTECODE is set (this machine, CI) every process compiled pandas, matplotlib, transformers
# and scipy from source again (13 s of notebook 06's 55 s render: docs/benchmarks.md, "Bytecode"); ddrl's
# own modules are compiled once here for the same reason (a module edited later is recompiled as Python always does).
# The stamp records the lock it installed (tests/test_environment.py checks the installed versions against it).
$(STAMP): pyproject.toml $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip uv
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m uv pip install -q --compile-bytecode --python $(PY) $(LOCK_C) -e ".[dev,lora]" \
		|| $(PY) -m pip install -q $(LOCK_C) -e ".[dev,lora]"
	$(PY) -m compileall -q ddrl >/dev/null
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	echo "lock=$(LOCK)" > $@

# constraints.txt again: a fresh environment built as `install` builds it but with no lock (the newest releases the
# ranges allow, and the browser extra), frozen with this platform's marker. Run the tests on it before committing.
LOCK_VENV ?= .venv-lock
lock:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install -q --upgrade pip uv
	$(LOCK_VENV)/bin/python -m pip install -q "$(TORCH)"
	$(LOCK_VENV)/bin/python -m uv pip install -q --python $(LOCK_VENV)/bin/python -e ".[dev,browser,lora]"
	$(LOCK_VENV)/bin/python -m ddrl.run.lockfile write --python $(LOCK_VENV)/bin/python --out constraints.txt
	rm -rf $(LOCK_VENV)

# `make test` is the fast tier: pure functions, tiny-model machinery, one RL step of every preset; a developer's
# loop, a few minutes on 2 cores. TEST_WORKERS pytest-xdist processes, a test file per process at a time (module
# fixtures once), the longest files first (tests/conftest.py); each worker gets cores / TEST_WORKERS threads.
# TEST_WORKERS=0 runs everything in one process. `make test-slow` is the slow tier: the e2e smoke run of every
# notebook (papermill, `-m e2e`; `make test-e2e` alone) and the checks marked slow; .ci/run runs it when CI's time
# allows. `make test-fast` is `make test` (kept for muscle memory).
TEST_WORKERS ?= 2
XDIST = $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile)
test: $(STAMP)
	$(PY) -m pytest -q $(XDIST) -m "not slow and not browser and not e2e and not regenerate" $(PYTEST_ARGS)

test-fast: test

test-e2e: $(STAMP)
	$(PY) -m pytest -q -m e2e $(PYTEST_ARGS)

# Nothing lost: every claim entry committed under results/ recomputed from the committed per-run CSVs and compared
# (tests/test_study_regenerates.py; no training, but ~1 M CSV rows and 4,000-draw bootstraps). One test per committed
# analysis, spread over the workers one test at a time (--dist load), not one file per worker.
test-study: $(STAMP)
	$(PY) -m pytest -q $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist load) -m regenerate $(PYTEST_ARGS)

test-slow: $(STAMP)
	$(PY) -m pytest -q $(XDIST) -m "(slow or e2e) and not browser and not regenerate" $(PYTEST_ARGS)

# JupyterLab in a real browser (tests/test_browser.py): Debian's Chromium (apt, never a Playwright download)
# and the `browser` extra (playwright). Screenshots land in outputs/browser/.
CHROMIUM ?= /usr/bin/chromium
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
test-browser: install
	test -x $(CHROMIUM) || ($(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium)
	$(PY) -c "import playwright" 2>/dev/null || $(PY) -m pip install -q $(LOCK_C) -e ".[browser]"
	DDRL_CHROMIUM=$(CHROMIUM) $(PY) -m pytest -q -m browser $(PYTEST_ARGS)

# verl (multi-GPU scale-out) pins its own transformers: its tests run in a separate environment.
# Its exact versions: VERL_LOCK (`make lock-verl` writes it; VERL_LOCK= takes the newest), recorded in its stamp.
VENV_VERL ?= .venv-verl
VERL_LOCK ?= ddrl/integrations/verl/constraints.txt
$(VENV_VERL)/.ddrl-installed: pyproject.toml ddrl/integrations/verl/install_venv.sh $(VERL_LOCK)
	LOCK=$(VERL_LOCK) PYTHON=$(PYTHON) TORCH="$(TORCH)" bash ddrl/integrations/verl/install_venv.sh $(VENV_VERL)
	echo "lock=$(VERL_LOCK)" > $@

lock-verl:
	rm -rf $(LOCK_VENV)
	LOCK= PYTHON=$(PYTHON) TORCH="$(TORCH)" bash ddrl/integrations/verl/install_venv.sh $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m ddrl.run.lockfile write --python $(LOCK_VENV)/bin/python --out ddrl/integrations/verl/constraints.txt \
		--target lock-verl --built "ddrl/integrations/verl/install_venv.sh with LOCK= (verl 0.9.1 and the verl tier's packages)"
	rm -rf $(LOCK_VENV)

install-verl: $(VENV_VERL)/.ddrl-installed

test-verl: install-verl
	$(VENV_VERL)/bin/python -m pytest -q tests/verl -W ignore::UserWarning

reproduce: $(STAMP)
	$(PY) -m ddrl.run.reproduce --preset $(PRESET)

smoke: $(STAMP)
	$(PY) -m ddrl.run.reproduce --preset smoke

# The executed notebooks, figures embedded, into docs/notebooks/ (committed; GitHub renders them), each with a
# header naming the commit and preset: copied from what `make reproduce` wrote to PUBLISH_FROM, never executed
# again; refused, naming each problem, if one is missing, from another commit or preset, or older than its source
# (ddrl/run/publish.py; tests/test_published.py fails on a stale copy).
PUBLISH_FROM ?= outputs/$(PRESET)
PUBLISH_TO   ?= docs/notebooks
publish: $(STAMP)
	$(PY) -m ddrl.run.publish --preset $(PRESET) --from $(PUBLISH_FROM) --to $(PUBLISH_TO)

# The committed figure store (ddrl/report/figure_store.py): notebook 06's figures and their entries in docs/results/, which a
# fresh clone's render copies instead of drawing. Run it after changing a figure, its data or its code
# (tests/test_study.py fails until then); a figure whose code is unchanged is copied, not drawn again.
FIGURES_OUT ?= outputs/figures
figures: $(STAMP)
	$(PY) -m ddrl.run.reproduce --preset default --only 06 --no-html --output-dir $(FIGURES_OUT)
	$(PY) -m ddrl.report.figure_store commit $(FIGURES_OUT)

# The results page, docs/results.md, rendered from the committed analyses under results/ (ddrl/study/page.py);
# tests/test_results_page.py fails while the committed page differs from this rendering.
docs: $(STAMP)
	$(PY) -m ddrl.study render-page

clean:
	rm -rf outputs .pytest_cache
