# beamtrace: `make` builds the NIF, the CLI and the beams; `make test` runs
# every test; `make demo` runs the main job; `make bench` the benchmarks.
# V=1 shows full commands.

ERL ?= erl
ERLC ?= erlc
CC ?= cc

ERTS_INCLUDE := $(shell $(ERL) -noshell -eval 'io:format("~ts/erts-~ts/include", [code:root_dir(), erlang:system_info(version)]), halt().' 2>/dev/null)
ERL_INTERFACE := $(shell $(ERL) -noshell -eval 'io:format("~ts", [code:lib_dir(erl_interface)]), halt().' 2>/dev/null)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
OPT ?= -O2 -g
CFLAGS_BASE := -std=gnu11 $(OPT) $(WARN) -fPIC -Ic_src
NIF_CFLAGS := $(CFLAGS_BASE) -fvisibility=hidden -I$(ERTS_INCLUDE)
# -z nodelete: a consumer thread may still be inside this library's code
# when the VM closes an old copy of it after a code upgrade from another
# file; the copy must stay mapped.
LDLIBS_NIF := -lpthread -Wl,-z,nodelete

Q := $(if $(V),,@)

# The pure C core: no erl_nif.h, shared by the NIF, the CLI and the C tests.
CORE_SRC := c_src/catalogue.c c_src/event.c c_src/ctf_packet.c c_src/ctf_metadata.c \
            c_src/ring.c c_src/trace_dir.c
NIF_SRC := $(CORE_SRC) $(sort $(wildcard c_src/nif_*.c))
CLI_SRC := $(CORE_SRC) c_src/usdt_catalogue.c $(sort $(wildcard c_src/cli/*.c))
ERL_SRC := $(wildcard src/*.erl)
BEAMS := $(patsubst src/%.erl,ebin/%.beam,$(ERL_SRC))

NIF := priv/beamtrace_nif.so
CLI := priv/beamtrace
# OTP's dyntrace module name, backed by beamtrace (beamtrace:install_dyntrace/0).
COMPAT := priv/dyntrace_nif.so priv/compat/dyntrace.beam

.PHONY: all test demo bench clean docs check-docs fuzz
all: $(NIF) $(CLI) $(BEAMS) ebin/beamtrace.app $(COMPAT)

$(NIF): $(NIF_SRC) $(wildcard c_src/*.h c_src/*.def)
	@mkdir -p priv
	@echo "  CC      $@"
	$(Q)$(CC) $(NIF_CFLAGS) -shared -o $@ $(NIF_SRC) $(LDLIBS_NIF)

$(CLI): $(CLI_SRC) $(wildcard c_src/*.h c_src/*.def c_src/cli/*.h)
	@mkdir -p priv
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_BASE) -Ic_src/cli -o $@ $(CLI_SRC) -lm

priv/dyntrace_nif.so: c_src/compat/dyntrace_nif.c $(wildcard c_src/*.h)
	@mkdir -p priv
	@echo "  CC      $@"
	$(Q)$(CC) $(NIF_CFLAGS) -shared -o $@ $< -ldl

priv/compat/dyntrace.beam: src/compat/dyntrace.erl $(wildcard include/*.hrl)
	@mkdir -p priv/compat
	@echo "  ERLC    $@"
	$(Q)$(ERLC) -Werror +debug_info -Iinclude -o priv/compat $<

ebin/%.beam: src/%.erl $(wildcard include/*.hrl)
	@mkdir -p ebin
	@echo "  ERLC    $@"
	$(Q)$(ERLC) -Werror +debug_info -Iinclude -o ebin $<

ebin/beamtrace.app: src/beamtrace.app.src
	@mkdir -p ebin
	$(Q)cp $< $@

test: all
	$(Q)bash test/run_all.sh

demo: all
	$(Q)bash examples/process_tracing.sh

bench: all
	$(Q)bash bench/run.sh

# The trace reader's mutation fuzz at scale (FUZZ_RUNS=10000 by default);
# the test suite runs 1000.
fuzz: all
	$(Q)bash test/cli/fuzz.sh

clean:
	rm -rf priv/*.so $(CLI) ebin test/out bench/out

# The README's tracepoint table comes from the catalogue, through the CLI.
docs: $(CLI)
	$(Q)bash tools/update_docs.sh

check-docs: $(CLI)
	$(Q)bash tools/update_docs.sh --check

# ---- LTTng-UST sink ---------------------------------------------------------
# The provider sources in c_src/lttng/ (the tracepoint provider header, one
# per domain, and the provider library's glue) are generated from the
# catalogue by tools/gen_lttng.c and committed with a DO-NOT-EDIT banner.
# `make` regenerates them into _build/ and FAILS, naming the fix, when the
# committed ones are not current; `make generate-lttng` rewrites them (then
# commit them). `make check-generated` is the same check, for the tests.
#
# priv/beamtrace_lttng.so, the provider library, is built only where
# pkg-config finds lttng-ust; elsewhere `make` says once that the LTTng sink
# is skipped. The NIF dlopens it at load (c_src/nif_lttng.c) and never links
# liblttng-ust itself, so one NIF binary works with or without LTTng.

GEN_LTTNG := _build/gen_lttng
LTTNG_GEN_DIR := c_src/lttng
LTTNG_SO := priv/beamtrace_lttng.so
LTTNG_UST := $(shell pkg-config --exists lttng-ust 2>/dev/null && echo yes)
# dlopen/dladdr for the loader: in libc since glibc 2.34, libdl before.
LDLIBS_NIF += -ldl

# LTTNG_UST_COMPAT_API_VERSION=0 hides lttng-ust's pre-2.13 names
# (TRACEPOINT_EVENT, ctf_string, ...), so the generator cannot fall back on
# them. lttng-ust 2.13's probe code compiles clean under our warnings; if a
# later version is not, silence it here, on this line only, with the reason.
LTTNG_CFLAGS := $(CFLAGS_BASE) -fvisibility=hidden -I$(ERTS_INCLUDE) \
                -DLTTNG_UST_COMPAT_API_VERSION=0 $(shell pkg-config --cflags lttng-ust 2>/dev/null)
LTTNG_LDLIBS := $(shell pkg-config --libs lttng-ust 2>/dev/null) -ldl

.PHONY: lttng check-generated generate-lttng lttng-skipped
all: lttng _build/lttng.checked

ifeq ($(LTTNG_UST),yes)
lttng: $(LTTNG_SO)
else
lttng: lttng-skipped
lttng-skipped:
	@echo "  SKIP    $(LTTNG_SO): pkg-config finds no lttng-ust (install liblttng-ust-dev); the LTTng sink is off"
endif

$(GEN_LTTNG): tools/gen_lttng.c c_src/catalogue.c c_src/catalogue.h c_src/catalogue.def
	@mkdir -p _build
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_BASE) -o $@ tools/gen_lttng.c c_src/catalogue.c

# The check runs again whenever the generator, the catalogue or the
# committed files change.
_build/lttng.checked: $(GEN_LTTNG) $(wildcard $(LTTNG_GEN_DIR)/*)
	$(Q)$(MAKE) --no-print-directory check-generated
	@touch $@

check-generated: $(GEN_LTTNG)
	$(Q)rm -rf _build/lttng.new && mkdir -p _build/lttng.new
	$(Q)$(GEN_LTTNG) _build/lttng.new
	$(Q)if ! diff -r $(LTTNG_GEN_DIR) _build/lttng.new >_build/lttng.diff 2>&1; then \
	    echo "error: $(LTTNG_GEN_DIR)/ is not what tools/gen_lttng.c makes from the catalogue" >&2; \
	    echo "       (diff in _build/lttng.diff): run 'make generate-lttng' and commit $(LTTNG_GEN_DIR)/" >&2; \
	    exit 1; fi

generate-lttng: $(GEN_LTTNG)
	$(Q)rm -rf $(LTTNG_GEN_DIR) && mkdir -p $(LTTNG_GEN_DIR)
	$(Q)$(GEN_LTTNG) $(LTTNG_GEN_DIR)
	@echo "  GEN     $(LTTNG_GEN_DIR)/"

$(LTTNG_SO): $(wildcard $(LTTNG_GEN_DIR)/*) c_src/nif_sinks.h c_src/event.h c_src/catalogue.h \
             c_src/catalogue.def _build/lttng.checked
	@mkdir -p priv
	@echo "  CC      $@"
	$(Q)$(CC) $(LTTNG_CFLAGS) -shared -o $@ $(LTTNG_GEN_DIR)/beamtrace_lttng.c $(LTTNG_LDLIBS)

clean: clean-lttng
.PHONY: clean-lttng
clean-lttng:
	rm -rf _build/gen_lttng _build/lttng.new _build/lttng.diff _build/lttng.checked

# `make -s print-CLI_SRC`: a variable's value, for test scripts that build
# sanitizer variants from the same source lists.
print-%:
	@echo $($*)
