# One-command set-up: `make test` and `make lab` each build everything they need.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
LAB_PORT ?= 8888
APP_PORT ?= 8866
# A fresh secret for each `make app`, so the app is not open to every local user.
ifeq ($(origin APP_TOKEN),undefined)
# Drawn once, at its first use: the URL `make app` prints and the token Voila gets are the same
# string (a recursive ?= drew a new one at each use, so the printed URL led to a login page).
APP_TOKEN = $(eval APP_TOKEN := $(shell python3 -c 'import secrets; print(secrets.token_hex(24))'))$(APP_TOKEN)
endif
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: test check lab app java chromium fonts broker-tools brokers screenshots bench bench-store bench-commitlog bench-dispatch bench-kafka bench-compare bench-spark \
        bench-scaling bench-cli bench-offline bench-jobs mutation asan shells \
        conformance data clean

$(STAMP): pyproject.toml setup.py .ci/install-kernel $(wildcard rmqlab/_native/*.c rmqlab/_native/*.h)
	@test -x $(VPY) || $(PY) -m venv $(VENV)
	@$(VPY) -m pip install --quiet --upgrade pip uv
	@# uv installs the same packages as pip, about three times faster (pyspark is a large source build).
	@# --compile-bytecode: every later Python process (each Spark worker, each test run) imports
	@# pandas, pyarrow and pyspark from .pyc files, also where PYTHONDONTWRITEBYTECODE is set;
	@# compiling them on every import cost a Spark worker about 2 s at start-up.
	$(VPY) -m uv pip install --python $(VPY) --compile-bytecode --reinstall-package rmqlab -e '.[dev]' \
	  || $(VPY) -m pip install -e '.[dev]'
	@$(VPY) -m compileall -q rmqlab > /dev/null
	@# The kernel spec "rmqlab" names this environment's Python by absolute path: made here, never committed.
	@$(VPY) .ci/install-kernel
	@# JupyterLab settings for this environment: no news toast over the notebooks, and Markdown
	@# (the start page notebooks/README.md) opens rendered rather than in the text editor.
	@mkdir -p $(VENV)/share/jupyter/lab/settings
	@echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false},' \
	  '"@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"markdown": "Markdown Preview"}}}' \
	  > $(VENV)/share/jupyter/lab/settings/overrides.json
	$(write-completion)
	@touch $(STAMP)

# Shell completion for the rmqlab command, generated from its parser (`rmqlab completion bash|zsh`)
# into the environment: bin/activate loads the bash script (bash-completion would also find it
# beside bin/), zsh users put share/zsh/site-functions in fpath. The scripts are static, so they
# are written again when a command module changes (the bash one stands for both here).
BASH_COMPLETION := $(VENV)/share/bash-completion/completions/rmqlab
ZSH_COMPLETION  := $(VENV)/share/zsh/site-functions/_rmqlab
# The line bin/activate ends with; `if` so that sourcing activate still succeeds in other shells.
ACTIVATE_COMPLETION := if [ -n "$${BASH_VERSION:-}" ] && \
  [ -r "$$VIRTUAL_ENV/share/bash-completion/completions/rmqlab" ]; \
  then . "$$VIRTUAL_ENV/share/bash-completion/completions/rmqlab"; fi
define write-completion
@mkdir -p $(dir $(BASH_COMPLETION)) $(dir $(ZSH_COMPLETION))
@# through a temporary file: a failed run leaves the old script, not an empty one
$(VPY) -m rmqlab completion bash > $(BASH_COMPLETION).tmp && mv $(BASH_COMPLETION).tmp $(BASH_COMPLETION)
$(VPY) -m rmqlab completion zsh > $(ZSH_COMPLETION).tmp && mv $(ZSH_COMPLETION).tmp $(ZSH_COMPLETION)
@grep -qxF '$(ACTIVATE_COMPLETION)' $(VENV)/bin/activate || \
  printf '%s\n' '# rmqlab: bash completion for the rmqlab command (added by make)' '$(ACTIVATE_COMPLETION)' \
  >> $(VENV)/bin/activate
endef

$(BASH_COMPLETION): rmqlab/cli.py $(wildcard rmqlab/commands/*.py) | $(STAMP)
	$(write-completion)

java:
	@.ci/ensure-java

# The real-browser test drives /usr/bin/chromium (installed with apt when running as root).
chromium:
	@.ci/ensure-chromium

# Chinese and emoji glyphs for the notebooks' Unicode keys (fonts-noto-cjk, fonts-noto-color-emoji,
# fonts-symbola; installed with apt when running as root). A fresh machine has only DejaVu.
fonts:
	@.ci/ensure-fonts

# Maven, unshare and ip for the real-broker tests (installed with apt when running as root).
broker-tools:
	@.ci/ensure-broker-tools

# bash and zsh, which judge the completion scripts (installed with apt when running as root).
shells:
	@.ci/ensure-shells

# The real brokers (tests/brokers/) write their stores and partitions into a cache outside the
# checkout (~/.cache/rmqlab/brokers). Their builder, then their tests, run beside the rest of the
# suite: two heavy things at a time on two cores (the broker tests building beside the builder
# made it three, and a loaded machine's broker runs time out). The builder's progress is in
# build/brokers.log, the broker tests' output in build/broker-tests.log (printed at the end).
# `make brokers` builds alone.
# RMQLAB_BROKER_MATRIX=all: every release with every scenario (the default "core" is what CI runs).
test: $(STAMP) $(BASH_COMPLETION) java chromium fonts broker-tools shells
	@mkdir -p build
	@( $(VPY) tests/brokers/build_all.py > build/brokers.log 2>&1 \
	     || echo "some broker builds failed: their tests show why" >> build/brokers.log; \
	   exec $(VPY) -m pytest -q -p no:cacheprovider --durations=15 tests/brokers > build/broker-tests.log 2>&1 ) & \
	brokers=$$!; \
	trap 'kill $$brokers 2>/dev/null' INT TERM; \
	rc=0; $(VPY) -m pytest -q --durations=30 --ignore=tests/brokers || rc=$$?; \
	echo "waiting for the broker builds (build/brokers.log) and their tests (build/broker-tests.log)"; \
	wait $$brokers || rc=$$?; \
	tail -n 2 build/brokers.log; \
	cat build/broker-tests.log; \
	exit $$rc

brokers: $(STAMP) java broker-tools
	$(VPY) tests/brokers/build_all.py

# Lint (ruff: pyflakes, pycodestyle, bugbear, isort, pyupgrade, code that does nothing) and types
# (mypy on jvm/, tables/, rules/, formats/, kafka/, the store engine and verify/); CI runs this first.
check: $(STAMP) $(BASH_COMPLETION)
	$(VENV)/bin/ruff check rmqlab tests benchmarks
	$(VENV)/bin/mypy

# JupyterLab on http://127.0.0.1:$(LAB_PORT)/ (the URL with its token is printed), opening the
# notebook index notebooks/README.md.
lab: $(STAMP) $(BASH_COMPLETION) java chromium fonts
	$(VENV)/bin/jupyter lab --ip 127.0.0.1 --port $(LAB_PORT) --no-browser $(ALLOW_ROOT) \
	  --ServerApp.root_dir=notebooks --LabApp.default_url=/lab/tree/README.md

# Every notebook executed in JupyterLab (Run All) in Chromium at 1280 px, one full-page PNG each in
# build/screenshots/ (git ignores build/); NOTEBOOKS="01 07" picks some. A few minutes (03 starts Spark).
screenshots: $(STAMP) java chromium fonts
	$(VPY) tests/screenshots.py --out build/screenshots $(if $(NOTEBOOKS),--only $(NOTEBOOKS),)

# The time-range query explorer as a stand-alone web app (Voilà: widgets only, no code cells).
app: $(STAMP)
	@echo "rmqlab query explorer: http://127.0.0.1:$(APP_PORT)/?token=$(APP_TOKEN)"
	@$(VENV)/bin/voila notebooks/apps/query-explorer.ipynb --no-browser --port=$(APP_PORT) \
	  --Voila.ip=127.0.0.1 --Voila.token=$(APP_TOKEN)

# Benchmarks print their tables; add --record (e.g. make bench ARGS=--record) to append to RESULTS.md.
bench: $(STAMP)
	cd benchmarks && ../$(VPY) bench_indexfile.py $(ARGS)
	cd benchmarks && ../$(VPY) bench_workload.py $(ARGS)

bench-store: $(STAMP)
	cd benchmarks && ../$(VPY) bench_store.py $(ARGS)

# CommitLog decode to columns on a full 1 GiB file (about 1.2 GiB of scratch space in $TMPDIR).
bench-commitlog: $(STAMP)
	cd benchmarks && ../$(VPY) bench_commitlog.py $(ARGS)

# Store.dispatch of a 2,000,000-message store, whole call and each stage, old and new path.
bench-dispatch: $(STAMP)
	cd benchmarks && ../$(VPY) bench_dispatch.py $(ARGS)

# A 1 GiB Kafka segment of 1 KiB batches in a temporary directory: batch walk and index rebuild, old and new.
bench-kafka: $(STAMP)
	cd benchmarks && ../$(VPY) bench_kafka.py $(ARGS)

# Time and peak memory of each path (index build, CommitLog decode, dispatch, query_many, verify, Kafka
# walk and rebuild) at 1x, 4x and 16x input, one fresh process a measurement: about 5 GiB of scratch
# space in $TMPDIR and 10 minutes.
bench-scaling: $(STAMP)
	cd benchmarks && ../$(VPY) bench_scaling.py $(ARGS)

# Command-line start-up: one trivial command of each group, one fresh process a run; compare with
# the code before a change: make bench-cli ARGS="--python-path before=/path/to/old/checkout --record".
bench-cli: $(STAMP)
	cd benchmarks && ../$(VPY) bench_cli.py $(ARGS)

# The offline mqadmin and kafka-dump-log commands on the sample store and the real Kafka log
# directory, one fresh process a run (about 2 minutes): make bench-offline ARGS=--record.
bench-offline: $(STAMP) data
	cd benchmarks && ../$(VPY) bench_offline_cli.py $(ARGS)

# rmqlab verify --jobs 1 against --jobs 2 on a generated 2 M-message store (built in a temporary
# folder), one fresh process a run, alternating: wall time, speed-up and scaling per
# core; make bench-jobs ARGS="--jobs-list 1,2,4 --record". With rmqlab spark verify beside them
# (local[2] and a standalone cluster of two one-core workers): ARGS="--spark local[2],standalone";
# the CommitLog decode, read_columns(arrow=True, jobs=N), instead: ARGS=--decode.
bench-jobs: $(STAMP) java
	cd benchmarks && ../$(VPY) bench_jobs.py $(ARGS)

# rmqlab side by side with the brokers' own code (RocketMQ 5.3.3's IndexFile and DefaultMessageStore,
# Kafka 3.9.2's DumpLogSegments), one fresh process a measurement, alternating, every answer
# checked against the other side's: about 3 minutes and 3 GiB of scratch space in $TMPDIR, the
# JVM sides built into the broker cache on first use; make bench-compare ARGS=--record.
bench-compare: $(STAMP) java
	cd benchmarks && ../$(VPY) bench_compare.py $(ARGS)

# 200,000,000 index keys with Spark on local[2] and local[1]: about 5 minutes, 8 GiB of scratch disk.
bench-spark: $(STAMP) java
	cd benchmarks && ../$(VPY) bench_spark.py $(ARGS)

# Mutation testing of the whole core, Python (mutmut) and C (a source mutator, one compile a
# mutant): MUTATION_SAMPLE mutants of every Python module and MUTATION_C_SAMPLE of every C file
# and header, drawn with MUTATION_SEED, one test process at a time and nice'd (two to three hours
# on a shared 2-core machine at the defaults). The tables and survivors: benchmarks/out/mutation/report.md.
MUTATION_SAMPLE ?= 10
MUTATION_C_SAMPLE ?= 10
MUTATION_SEED ?= 0
mutation: $(STAMP)
	nice -n 10 $(VPY) benchmarks/mutation.py all --workers 1 --sample $(MUTATION_SAMPLE) \
	  --c-sample $(MUTATION_C_SAMPLE) --seed $(MUTATION_SEED)

# The C extensions built with AddressSanitizer (-fsanitize=address -fno-omit-frame-pointer) into
# benchmarks/out/mutation_c/asan/, the package's own .so files untouched, and their own tests
# (TESTS in benchmarks/mutation_c.py, less the JVM oracle) run with those builds loaded and the
# sanitizer's runtime preloaded: a read or write past a buffer fails the run. About a minute on
# a shared 2-core machine, so not part of `make test`. `benchmarks/mutation_c.py --asan` runs
# mutants the same way.
asan: $(STAMP)
	nice -n 10 $(VPY) benchmarks/mutation_c.py --asan-check

conformance: $(STAMP)
	$(VPY) ../shared/conformance/indexfile_conformance.py tests/data/golden

# The sample store: rebuilt from scratch into data/generated/sample-store/ (git ignores it), then
# checked file by file against the committed data/MANIFEST.sha256; fails if any byte differs.
# After an intended change: $(VPY) -m rmqlab.lab.sample --write-manifest (see data/README.md).
data: $(STAMP)
	$(VPY) -m rmqlab.lab.sample --root data/generated/sample-store --manifest data/MANIFEST.sha256

clean:
	rm -rf $(VENV) build *.egg-info rmqlab/*.so
