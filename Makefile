# corral: the one build. Every library through pkg-config; strict warnings are errors.
#   make            build/corral
#   make test       every test (unit, end-to-end, hostile sandboxes); ends with "N passed, N failed"
#   make test-asan  the same suite against an AddressSanitizer + UndefinedBehaviorSanitizer build
#   make deps       apt-get the Debian packages that are missing
#   make fuzz       each libFuzzer target for FUZZ_SECONDS (default 30)
#   make bench      the side-by-side benchmarks in bench/
#   make demo       the README's main job: a WACP session (examples/demo.sh)
#   make demo-exec  the corral exec demo (examples/demo_exec.sh)
#   make install    PREFIX=/usr/local, DESTDIR: binary, man page, C and Python SDKs, schema,
#                   completion, example policies, systemd unit (packaging/install.mk)
#   make deb        the Debian packages in build/deb/ (debhelper; lintian-clean)
#   make test-package  build, install, use and purge the packages (tests/package/)

PKGS      := libseccomp libcap libnl-3.0 libnl-route-3.0 sqlite3 libcjson libsodium libpcre2-8 yaml-0.1 \
             libxxhash
# Graphviz lays out the report's task graph; it is loaded (dlopen) when a report is made, so only
# its headers are built against (docs/report.md).
PKGS_DLOPEN := libgvc
DEB_PKGS  := gcc make pkg-config python3 libseccomp-dev libcap-dev libnl-3-dev libnl-route-3-dev \
             libsqlite3-dev libcjson-dev libsodium-dev libpcre2-dev libyaml-dev libcmocka-dev \
             libgraphviz-dev libxxhash-dev
# Tools the tests use (unshare, pgrep, chattr, the policy schema check), the fuzzers (clang's
# libFuzzer), the benchmarks' peers (bwrap, ripgrep, hyperfine, socat for srt; `make bench-deps`
# fetches the npm peers), the Kward surface's outliner and differ (universal-ctags, diffutils; run
# in command sandboxes), Node.js for the MCP clients of tests/mcp (NPM_DIRS below), the report's
# test browser (chromium, headless) and the packaging's tools (debhelper, lintian, bash-completion
# and systemd's systemd-analyze for make test-package), the egress tests' clients and throwaway
# CA (curl, openssl).
DEB_TOOLS := util-linux procps e2fsprogs python3-jsonschema clang libclang-rt-14-dev \
             bubblewrap ripgrep hyperfine universal-ctags diffutils clang-format socat nodejs \
             chromium debhelper dpkg-dev lintian bash-completion systemd curl openssl strace
# npm projects installed by `make deps` from their committed package-lock.json (npm ci), never at
# run time: tests/mcp holds @modelcontextprotocol/sdk, inspector and server-filesystem.
NPM_DIRS  := tests/mcp
# The benchmarks' npm peers, installed under build/bench by `make bench-deps` (part of `make bench`):
# the MCP filesystem server (bench/roundtrip.sh) and Anthropic's srt (bench/command_start.sh).
NPM_SRT   := @anthropic-ai/sandbox-runtime@0.0.78

CC      ?= cc
BUILD   ?= build
PREFIX  ?= /usr/local
SAN     ?=

ifeq ($(SAN),1)
BUILD   := build/asan
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) $(PKGS_DLOPEN) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Wformat=2 -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wno-unused-parameter -Wpointer-arith -Wvla -Werror
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 $(WARN) -D_GNU_SOURCE -I. $(PKG_CFLAGS) $(SANFLAGS) -MMD -MP
LDFLAGS += $(SANFLAGS)
LDLIBS  := $(PKG_LIBS) -lm
# The corral binary links the libraries that ship a static archive statically: resolving a dozen
# shared libraries at every start cost 1.4 ms of a sandbox's ~13 ms (bench/exec_start.sh).
STATIC_CANDIDATES := seccomp cap nl-route-3 nl-3 sqlite3 sodium pcre2-8 yaml xxhash
STATIC_FOUND := $(foreach l,$(STATIC_CANDIDATES),$(if $(filter /%,$(shell $(CC) -print-file-name=lib$(l).a 2>/dev/null)),$(l)))
CORRAL_LIBS := -Wl,-Bstatic $(addprefix -l,$(STATIC_FOUND)) -Wl,-Bdynamic $(PKG_LIBS) -lm

# Every .c under the five source folders (they hold one concern per subfolder: docs/architecture.md).
LIB_SRC := $(sort $(shell find common sandbox policy tools supervisor -name '*.c'))
LIB_SRC := $(filter-out supervisor/main.c,$(LIB_SRC))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB     := $(BUILD)/libcorral.a
CORRAL  := $(BUILD)/corral

UNIT_SRC    := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%)
# Programs that run INSIDE sandboxes (hostile probes, test agents): plain builds, no sanitizer
# runtime, so what they observe is the sandbox and not ASan's own needs.
HOSTILE_SRC := $(sort $(wildcard tests/hostile/*.c))
HOSTILE_BIN := $(HOSTILE_SRC:tests/hostile/%.c=build/tests/hostile/%)
AGENT_SRC   := $(sort $(wildcard tests/agents/*.c examples/agents/*.c))
AGENT_BIN   := $(patsubst %.c,build/%,$(AGENT_SRC))
SDK_SRC     := $(wildcard sdk/*.c)
FUZZ_SRC    := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN    := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
FUZZ_SECONDS ?= 30

.PHONY: all test test-asan crash-test test-build deps fuzz bench bench-deps demo demo-gated demo-exec install clean check-deps
all: check-deps $(CORRAL)

check-deps:
	@pkg-config --exists $(PKGS) $(PKGS_DLOPEN) || { echo "corral: missing libraries: $$(for p in $(PKGS) $(PKGS_DLOPEN); do pkg-config --exists $$p || printf '%s ' $$p; done)- run 'make deps' (as root) to install them with apt-get" >&2; exit 1; }

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(CORRAL): $(BUILD)/obj/supervisor/main.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(CORRAL_LIBS)

$(BUILD)/tests/unit/%: tests/unit/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS) $(shell pkg-config --libs cmocka)

build/tests/hostile/%: tests/hostile/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -I. -o $@ $< $(if $(findstring seccomp,$*),-lseccomp)

build/tests/agents/% build/examples/agents/%: AGENT_LIBS = $(shell pkg-config --libs libcjson)
build/%: %.c $(SDK_SRC)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -I. -Isdk $(shell pkg-config --cflags libcjson) -o $@ $< $(SDK_SRC) $(AGENT_LIBS)

test-build: all $(UNIT_BIN) $(HOSTILE_BIN) $(AGENT_BIN)

test: test-build
	@CORRAL=$(abspath $(CORRAL)) BUILD=$(abspath $(BUILD)) sh tests/run.sh

# corral run SIGKILLed at 50 points of a session, each resumed to the end (make test runs 4).
crash-test: test-build
	@CORRAL=$(abspath $(CORRAL)) BUILD=$(abspath $(BUILD)) CRASH_POINTS=50 sh tests/run.sh run_crash

test-asan:
	$(MAKE) SAN=1 test

deps:
	@missing=""; for p in $(DEB_PKGS) $(DEB_TOOLS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "all build and test packages are installed"; fi
	@command -v npm >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm; }
	@for d in $(NPM_DIRS); do \
	  if cmp -s $$d/package-lock.json $$d/node_modules/.corral-installed-lock 2>/dev/null; then \
	    echo "npm packages of $$d are installed"; \
	  else echo "npm ci in $$d"; (cd $$d && npm ci --no-audit --no-fund --loglevel=error && \
	    cp package-lock.json node_modules/.corral-installed-lock) || exit 1; fi; done

# The library is compiled once for every fuzzer (instrumented, with ASan+UBSan), each target
# then only links: fifteen targets used to compile every source fifteen times.
FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -I. $(PKG_CFLAGS) -fsanitize=address,undefined
FUZZ_OBJ    := $(LIB_SRC:%.c=build/fuzz/obj/%.o)
build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

build/fuzz/libcorral-fuzz.a: $(FUZZ_OBJ)
	rm -f $@ && ar rcs $@ $^

build/fuzz/%: tests/fuzz/%.c build/fuzz/libcorral-fuzz.a
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< build/fuzz/libcorral-fuzz.a $(PKG_LIBS) -lm

fuzz: $(FUZZ_BIN)
	@for f in $(FUZZ_BIN); do n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
	  seeds=tests/fuzz/seeds/$${n#fuzz_}; [ -d $$seeds ] || seeds=; \
	  echo "== $$n for $(FUZZ_SECONDS)s"; \
	  if ! $$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 build/fuzz/corpus-$$n $$seeds >build/fuzz/$$n.log 2>&1; then \
	    tail -40 build/fuzz/$$n.log; echo "fuzz: $$n found a crash (log: build/fuzz/$$n.log)"; exit 1; fi; \
	  tail -1 build/fuzz/$$n.log; done

bench-deps:
	@mkdir -p build/bench/npm-srt
	@[ -x build/bench/npm-srt/node_modules/.bin/srt ] || (cd build/bench/npm-srt && npm install --no-audit --no-fund --silent $(NPM_SRT))

bench: test-build bench-deps
	@CORRAL=$(abspath $(CORRAL)) sh bench/run.sh

demo: all $(AGENT_BIN)
	@CORRAL=$(abspath $(CORRAL)) sh examples/demo.sh

# The same session under the supervised highway, its gates approved by a scripted person
# through `corral gate` from another process.
demo-gated: all $(AGENT_BIN)
	@CORRAL=$(abspath $(CORRAL)) sh examples/demo_gated.sh

demo-exec: all $(HOSTILE_BIN) $(AGENT_BIN)
	@CORRAL=$(abspath $(CORRAL)) sh examples/demo_exec.sh

# make install (DESTDIR, PREFIX), make deb, make test-package
include packaging/install.mk

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)

# The libraries a program linking build/libcorral.a needs (tests/replay/wacp_params.c uses it).
print-libs:
	@echo $(LDLIBS)
