# beamtrace: `make` builds the NIF, the CLI and the beams; `make test` runs
# every test; `make demo` runs the main job; `make bench` the benchmarks.
# V=1 shows full commands.

ERL ?= erl
ERLC ?= erlc
CC ?= cc

ERTS_INCLUDE := $(shell $(ERL) -noshell -eval 'io:format("~ts/erts-~ts/include", [code:root_dir(), erlang:system_info(version)]), halt().' 2>/dev/null)
ERL_INTERFACE := $(shell $(ERL) -noshell -eval 'io:format("~ts", [code:lib_dir(erl_interface)]), halt().' 2>/dev/null)

# The one version source: the vsn of src/beamtrace.app.src (rebar3, mix and
# Hex read it there; `beamtrace --version` gets it from here).
VERSION := $(shell sed -n 's/.*{vsn, *"\([^"]*\)"}.*/\1/p' src/beamtrace.app.src)

# USDT probes need sys/sdt.h (systemtap-sdt-dev). Without it they are
# compiled out (c_src/sinks/usdt_sdt.h); `make USDT=0` compiles them out anyway.
USDT ?= $(shell printf '\043include <sys/sdt.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1 || echo 0)

# Warnings are errors in this project's own build: `make`, `make test`,
# `make bench`, CI (WERROR=1, the default). A project that depends on
# beamtrace builds it through rebar.config's pre_hook (rebar3, and mix,
# which builds rebar dependencies with rebar3), which runs
# `make priv WERROR=0`: a newer compiler's new warning there is printed and
# must not fail someone else's build.
WERROR ?= 1
WERROR_FLAG := $(if $(filter 1,$(WERROR)),-Werror)
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes $(WERROR_FLAG)
OPT ?= -O2 -g
CFLAGS_BASE := -std=gnu11 $(OPT) $(WARN) -fPIC -Ic_src -DBMT_USDT=$(USDT)
NIF_CFLAGS := $(CFLAGS_BASE) -fvisibility=hidden -I$(ERTS_INCLUDE)
# Not -z nodelete: the last unload joins every thread, so the library may
# go; a copy whose threads outlive it is pinned at the hand-over
# (c_src/nif/nif_pin.h).
LDLIBS_NIF := -lpthread -ldl

Q := $(if $(V),,@)

# Every core, unless make is given -j (make -j1 builds one thing at a time).
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
# One line per object and link, except under make -s (the tests' builds).
SAY := $(if $(findstring s,$(filter-out -%,$(firstword $(MAKEFLAGS)))),@:,@echo)

# The pure C core: no erl_nif.h, shared by the NIF, the CLI and the C tests.
CORE_SRC := c_src/core/catalogue.c c_src/core/clock.c c_src/core/event.c c_src/core/ctf_packet.c \
            c_src/core/ctf_metadata.c c_src/core/ring.c c_src/core/trace_dir.c
# The recorder: sessions, consumer threads, the stop protocol (pure C too,
# so the C tests drive it under ThreadSanitizer without a VM).
RECORDER_SRC := c_src/core/fence.c c_src/recorder/recorder.c c_src/recorder/start.c \
                c_src/recorder/consumer.c c_src/recorder/drain.c c_src/recorder/finish.c \
                c_src/recorder/control.c c_src/recorder/capture.c \
                c_src/recorder/sampling.c c_src/recorder/relayd_proto.c \
                c_src/recorder/relayd_socket.c c_src/recorder/relayd_control.c \
                c_src/recorder/relayd_outbox.c c_src/recorder/relayd_client.c
SINKS_SRC := c_src/sinks/lttng.c c_src/sinks/usdt.c c_src/sinks/usdt_wants.c
NIF_SRC := $(CORE_SRC) $(RECORDER_SRC) $(SINKS_SRC) $(sort $(wildcard c_src/nif/*.c))
# The command checks `record --relayd`'s URL with the recorder's parser,
# and maps tracepoints to sampling kinds with the recorder's table.
CLI_SRC := $(CORE_SRC) c_src/core/usdt_catalogue.c c_src/recorder/relayd_proto.c \
           c_src/recorder/sampling.c \
           $(sort $(wildcard c_src/cli/*/*.c))
ERL_SRC := $(sort $(wildcard src/*.erl))
BEAMS := $(patsubst src/%.erl,ebin/%.beam,$(ERL_SRC))
APP_MODULES := $(patsubst src/%.erl,%,$(ERL_SRC))
comma := ,
space := $(subst ,, )

NIF := priv/beamtrace_nif.so
CLI := priv/beamtrace
# OTP's dyntrace module name, backed by beamtrace (beamtrace:install_dyntrace/0).
# Its source is in c_src/compat/, not src/: rebar3 and mix compile every
# .erl under src/ into the application's ebin/, where a second dyntrace
# would hide OTP's and break releases holding runtime_tools.
COMPAT := priv/dyntrace_nif.so priv/compat/dyntrace.beam

.PHONY: all priv beams test test-otp dialyzer demo bench bench-instructions bench-memory fuzz clean docs check-docs usdt-skipped debug
all: priv beams
beams: $(BEAMS) ebin/beamtrace.app
# What rebar3 (rebar.config's pre_hook) builds: everything but the beams.
priv: $(NIF) $(CLI) $(COMPAT) lttng
ifeq ($(USDT),0)
priv: usdt-skipped
usdt-skipped:
	@echo "  SKIP    USDT probes: no sys/sdt.h (install systemtap-sdt-dev) or USDT=0; they are compiled out"
endif

# Rebuilds the C targets when the compiler, the flags or the version change
# (CC=clang, USDT=0, OPT=...), not only when a source does.
BUILD_CONFIG := _build/build-config
$(BUILD_CONFIG): FORCE
	@mkdir -p _build
	@echo '$(CC) $(CFLAGS_BASE) $(VERSION)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_BASE) $(VERSION)' >$@
.PHONY: FORCE

# One object per source and build (the NIF's, the command's, the debug
# NIF's), under _build/obj/, so a build uses every core (the -j above) and
# recompiles only what a change touches: each object depends on the headers
# its source includes (-MMD) and on the build's flags ($(BUILD_CONFIG)).
OBJ := _build/obj
NIF_OBJ := $(patsubst c_src/%.c,$(OBJ)/nif/%.o,$(NIF_SRC))
CLI_OBJ := $(patsubst c_src/%.c,$(OBJ)/cli/%.o,$(CLI_SRC))
DEBUG_OBJ := $(patsubst c_src/%.c,$(OBJ)/debug/%.o,$(NIF_SRC))
CLI_CFLAGS := $(CFLAGS_BASE) -DBMT_VERSION='"$(VERSION)"' -Ic_src/cli
DEBUG_CFLAGS := $(NIF_CFLAGS) -O1 -DBMT_DEBUG
-include $(NIF_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(DEBUG_OBJ:.o=.d)

# The NIF's objects wait for the generated sources' check: a stale
# generated header fails the build before anything compiles against it.
$(OBJ)/nif/%.o: c_src/%.c $(BUILD_CONFIG) _build/generated.checked
	@mkdir -p $(@D)
	$(SAY) "  CC      $<"
	$(Q)$(CC) $(NIF_CFLAGS) -MMD -MP -c -o $@ $<

$(OBJ)/cli/%.o: c_src/%.c $(BUILD_CONFIG)
	@mkdir -p $(@D)
	$(SAY) "  CC      $< (command)"
	$(Q)$(CC) $(CLI_CFLAGS) -MMD -MP -c -o $@ $<

$(OBJ)/debug/%.o: c_src/%.c $(BUILD_CONFIG) _build/generated.checked
	@mkdir -p $(@D)
	$(SAY) "  CC      $< (debug)"
	$(Q)$(CC) $(DEBUG_CFLAGS) -MMD -MP -c -o $@ $<

# The command under ASan and UBSan, for the tests and `make fuzz`
# (test/cli, test/analyses): built once, shared by them. BMT_READER_POISON:
# fields a command did not select read as NULL strings (ctf/reader.h), so
# a field missing from a command's set fails a check.
ASAN_CLI := _build/asan/beamtrace
ASAN_OBJ := $(patsubst c_src/%.c,$(OBJ)/asan/%.o,$(CLI_SRC))
ASAN_CFLAGS := -std=gnu11 -O1 -g $(WARN) -fsanitize=address,undefined -fno-omit-frame-pointer \
               -fno-sanitize-recover=all -DBMT_READER_POISON -Ic_src -Ic_src/cli
-include $(ASAN_OBJ:.o=.d)
.PHONY: asan-cli
asan-cli: $(ASAN_CLI)
$(OBJ)/asan/%.o: c_src/%.c $(BUILD_CONFIG)
	@mkdir -p $(@D)
	$(SAY) "  CC      $< (ASan)"
	$(Q)$(CC) $(ASAN_CFLAGS) -MMD -MP -c -o $@ $<

$(ASAN_CLI): $(ASAN_OBJ)
	@mkdir -p $(@D)
	$(SAY) "  LD      $@"
	$(Q)$(CC) $(ASAN_CFLAGS) -o $@ $(ASAN_OBJ) -lm

$(NIF): $(NIF_OBJ)
	@mkdir -p priv
	$(SAY) "  LD      $@"
	$(Q)$(CC) $(NIF_CFLAGS) -shared -o $@ $(NIF_OBJ) $(LDLIBS_NIF)

$(CLI): $(CLI_OBJ)
	@mkdir -p priv
	$(SAY) "  LD      $@"
	$(Q)$(CC) $(CLI_CFLAGS) -o $@ $(CLI_OBJ) -lm

# `make debug`: the NIF with the decoder's field checks (-DBMT_DEBUG: every
# field written is checked against the catalogue's name and type, and each
# event's field count, c_src/nif/nif_decode.h), into _build/debug/priv/
# beside the provider library it loads. The tests load it by setting the
# application's priv_dir (test/erl/debug_fields.sh).
DEBUG_PRIV := _build/debug/priv
debug: $(DEBUG_PRIV)/beamtrace_nif.so
$(DEBUG_PRIV)/beamtrace_nif.so: $(DEBUG_OBJ) lttng
	@mkdir -p $(DEBUG_PRIV)
	$(SAY) "  LD      $@"
	$(Q)$(CC) $(DEBUG_CFLAGS) -shared -o $@ $(DEBUG_OBJ) $(LDLIBS_NIF)
	$(Q)if [ -f $(LTTNG_SO) ]; then ln -sf $(abspath $(LTTNG_SO)) $(DEBUG_PRIV)/; fi

priv/dyntrace_nif.so: c_src/compat/dyntrace_nif.c $(wildcard c_src/*/*.h c_src/*/*.def) $(BUILD_CONFIG)
	@mkdir -p priv
	@echo "  CC      $@"
	$(Q)$(CC) $(NIF_CFLAGS) -shared -o $@ $< -ldl

priv/compat/dyntrace.beam: c_src/compat/dyntrace.erl $(wildcard include/*.hrl)
	@mkdir -p priv/compat
	@echo "  ERLC    $@"
	$(Q)$(ERLC) $(WERROR_FLAG) +debug_info -Iinclude -o priv/compat $<

ebin/%.beam: src/%.erl $(wildcard include/*.hrl)
	@mkdir -p ebin
	@echo "  ERLC    $@"
	$(Q)$(ERLC) $(WERROR_FLAG) +debug_info -Iinclude -o ebin $<

# The modules list from the sources, as rebar3 writes it.
ebin/beamtrace.app: src/beamtrace.app.src $(ERL_SRC)
	@mkdir -p ebin
	$(Q)sed 's/{modules, *\[[^]]*\]}/{modules, [$(subst $(space),$(comma),$(APP_MODULES))]}/' $< >$@

# Tests (test/README.md): `make test` runs every group, `make test-GROUP`
# one (test-erl, test-c, ...), and T=NAME[,NAME...] only the named tests of
# that group, as its TAP lines name them (make test-erl
# T=bmt_lifecycle_SUITE:two_sessions_test). The scripts read the filter as
# BMT_TEST_FILTER and their other settings from BMT_* variables, none of
# which this Makefile defines: a Makefile variable of the same name would
# replace what the user set (`MODULES=... make test` once ran nothing).
# The scripts' own makes (scratch copies, print-*) start job pools of
# their own: this make's jobserver is not passed down to them.
SCRIPT_ENV = MAKEFLAGS='$(filter-out -j% --jobserver%,$(MAKEFLAGS))'
test: all
	$(Q)$(SCRIPT_ENV) BMT_TEST_FILTER='$(T)' bash test/run_all.sh

test-%: all
	$(Q)$(SCRIPT_ENV) BMT_TEST_FILTER='$(T)' bash test/run_all.sh $*

# The OTP version matrix: the VM-facing groups on Debian trixie (OTP 27) and
# sid (OTP 29) in chroots under _build/chroots/ (made on first use, root).
test-otp:
	$(Q)$(SCRIPT_ENV) bash test/otp/matrix.sh

# `make dialyzer`: the application's beams and the test modules, 0 warnings
# (CI fails on one). The PLT holds erts, kernel, stdlib and runtime_tools
# (all src/ uses), compiler and common_test (the tests'); it is built once
# per OTP release under _build/dialyzer/ (minutes) and reused. Dialyzer's
# own switches are its defaults; the few calls it cannot judge on some OTP
# releases say why where they are (-dialyzer attributes).
DIALYZER_OTP := $(shell $(ERL) -noshell -eval 'io:format("~s-~s", [erlang:system_info(otp_release), erlang:system_info(version)]), halt().' 2>/dev/null)
DIALYZER_PLT := _build/dialyzer/otp-$(DIALYZER_OTP).plt
DIALYZER_PLT_APPS := erts kernel stdlib runtime_tools compiler common_test
DIALYZER_TEST_SRC := $(wildcard test/lib/*.erl test/lib/selftest/*.erl test/*/*.erl)

$(DIALYZER_PLT):
	@mkdir -p _build/dialyzer
	@echo "  PLT     $@ ($(DIALYZER_PLT_APPS); once per OTP release)"
	$(Q)dialyzer --build_plt --output_plt $@.tmp --apps $(DIALYZER_PLT_APPS) >_build/dialyzer/plt.log 2>&1 || \
	    { tail -20 _build/dialyzer/plt.log; exit 1; }
	$(Q)mv $@.tmp $@

dialyzer: beams $(DIALYZER_PLT)
	@rm -rf _build/dialyzer/test && mkdir -p _build/dialyzer/test
	$(Q)$(ERLC) -Werror +debug_info -o _build/dialyzer/test $(DIALYZER_TEST_SRC)
	@echo "  DIALYZE ebin/ and the test modules"
	$(Q)dialyzer --plt $(DIALYZER_PLT) $(BEAMS) _build/dialyzer/test/*.beam

demo: all
	$(Q)$(SCRIPT_ENV) bash examples/process_tracing.sh

bench: all
	$(Q)$(SCRIPT_ENV) bash bench/run.sh

# The analyses' instructions per event alone (callgrind, a few minutes).
bench-instructions: all
	$(Q)$(SCRIPT_ENV) bash bench/instructions.sh

# Peak RSS of flame and report at 5, 20 and 50 M events (several GB of traces).
bench-memory: all
	$(Q)$(SCRIPT_ENV) bash bench/memory.sh

# Longer fuzz runs than the test suite's: the NIF with 100000 random calls,
# then the trace reader's mutation fuzz against babeltrace2 (FUZZ_RUNS=10000
# by default; the test suite runs 1000).
fuzz: all
	$(Q)$(SCRIPT_ENV) BMT_FUZZ_CALLS=100000 BMT_TEST_FILTER=bmt_faults_SUITE:callbacks_fuzz_test \
	    bash test/run_all.sh erl
	$(Q)$(SCRIPT_ENV) bash test/cli/fuzz.sh

clean:
	rm -rf priv/*.so $(CLI) priv/compat ebin test/out bench/out $(OBJ) _build/debug _build/asan

# The generated parts of docs/ (tracepoint and USDT tables from the
# catalogue, docs/cli.md's option tables from each command's --help) come
# from the CLI: `make docs` rewrites them (commit them), `make check-docs`
# fails when they are not current (tools/update_docs.sh).
docs: $(CLI)
	$(Q)bash tools/update_docs.sh

check-docs: $(CLI)
	$(Q)bash tools/update_docs.sh --check

# ---- Man pages, bash completion, install -------------------------------------
# The man pages (help2man) and the bash completion derive from the command's
# own --help, like docs/cli.md; they are built into _build/ and never
# committed: the help text is their one source, and help2man is only needed
# to install them (tools/gen_man.sh, tools/gen_completion.sh).
#
# `make install` puts the command on PATH and what it runs with beside it:
#   $(BINDIR)/beamtrace -> $(APPDIR)/priv/beamtrace (a relative symlink: the
#       command finds its ebin/ and priv/ from its own path, so
#       `beamtrace record` ships the installed beams and NIF library)
#   $(APPDIR)/{ebin,priv}   the OTP application (erl -pa $(APPDIR)/ebin)
#   $(MANDIR)/man1/beamtrace.1, beamtrace-CMD.1
#   $(BASH_COMPLETION_DIR)/beamtrace
#   $(SHAREDIR)/scripts/    the bpftrace scripts
#   $(DOCDIR)/              README.md, CHANGELOG.md, LICENSE, docs/
# PREFIX (default /usr/local) and DESTDIR are honoured, and BINDIR, LIBDIR,
# DATAROOTDIR, MANDIR and BASH_COMPLETION_DIR one by one; the directories
# named beamtrace are wholly beamtrace's (install replaces them). Without help2man the man pages are
# skipped, and make says so. `make uninstall` removes all of it, from the
# list install wrote ($(APPDIR)/installed-files).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
DATAROOTDIR ?= $(PREFIX)/share
MANDIR ?= $(DATAROOTDIR)/man
BASH_COMPLETION_DIR ?= $(DATAROOTDIR)/bash-completion/completions
APPDIR := $(LIBDIR)/beamtrace
SHAREDIR := $(DATAROOTDIR)/beamtrace
DOCDIR := $(DATAROOTDIR)/doc/beamtrace
INSTALL ?= install
MAN_OUT := _build/man
COMPLETION := _build/completion/beamtrace
HELP2MAN := $(shell command -v help2man 2>/dev/null)
# Reproducible dates in the man pages: the last commit's, where there is one.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
HELP_TOOLS := tools/help_lib.sh tools/help_options.awk

.PHONY: man completion install uninstall man-skipped
man: $(MAN_OUT)/.built
$(MAN_OUT)/.built: $(CLI) tools/gen_man.sh $(HELP_TOOLS) $(wildcard docs/man/*.h2m)
	@echo "  MAN     $(MAN_OUT)/"
	$(Q)rm -rf $(MAN_OUT) && SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) bash tools/gen_man.sh $(CLI) $(MAN_OUT) $(VERSION)
	@touch $@

completion: $(COMPLETION)
$(COMPLETION): $(CLI) tools/gen_completion.sh $(HELP_TOOLS)
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	$(Q)bash tools/gen_completion.sh $(CLI) >$@.tmp && mv $@.tmp $@

man-skipped:
	@echo "  SKIP    man pages: help2man is not installed (apt-get install help2man)"

install: all completion $(if $(HELP2MAN),man,man-skipped)
	@echo "  INSTALL $(DESTDIR)$(PREFIX)"
	$(Q)rm -rf $(DESTDIR)$(APPDIR) $(DESTDIR)$(SHAREDIR) $(DESTDIR)$(DOCDIR)
	$(Q)$(INSTALL) -d $(DESTDIR)$(APPDIR)/ebin $(DESTDIR)$(APPDIR)/priv/compat $(DESTDIR)$(BINDIR) \
	    $(DESTDIR)$(BASH_COMPLETION_DIR) $(DESTDIR)$(SHAREDIR)/scripts $(DESTDIR)$(DOCDIR)/docs
	$(Q)$(INSTALL) -m 644 $(BEAMS) ebin/beamtrace.app $(DESTDIR)$(APPDIR)/ebin/
	$(Q)$(INSTALL) -m 755 $(CLI) $(DESTDIR)$(APPDIR)/priv/
	$(Q)$(INSTALL) -m 644 $(NIF) priv/dyntrace_nif.so $(DESTDIR)$(APPDIR)/priv/
	$(Q)if [ -f $(LTTNG_SO) ]; then $(INSTALL) -m 644 $(LTTNG_SO) $(DESTDIR)$(APPDIR)/priv/; fi
	$(Q)$(INSTALL) -m 644 priv/compat/dyntrace.beam $(DESTDIR)$(APPDIR)/priv/compat/
	$(Q)ln -sfn "$$(realpath -m --relative-to=$(BINDIR) $(APPDIR)/priv/beamtrace)" $(DESTDIR)$(BINDIR)/beamtrace
	$(Q)$(INSTALL) -m 644 $(COMPLETION) $(DESTDIR)$(BASH_COMPLETION_DIR)/beamtrace
	$(Q)$(INSTALL) -m 644 scripts/*.bt scripts/README.md $(DESTDIR)$(SHAREDIR)/scripts/
	$(Q)$(INSTALL) -m 755 scripts/beamtrace-bpftrace $(DESTDIR)$(SHAREDIR)/scripts/
	$(Q)$(INSTALL) -m 644 README.md CHANGELOG.md LICENSE $(DESTDIR)$(DOCDIR)/
	$(Q)$(INSTALL) -m 644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/
	$(Q)echo $(BINDIR)/beamtrace >$(DESTDIR)$(APPDIR)/installed-files
	$(Q)echo $(BASH_COMPLETION_DIR)/beamtrace >>$(DESTDIR)$(APPDIR)/installed-files
	$(Q)if [ -n "$(HELP2MAN)" ]; then \
	    $(INSTALL) -d $(DESTDIR)$(MANDIR)/man1 && \
	    for m in $(MAN_OUT)/*.1; do \
	        $(INSTALL) -m 644 $$m $(DESTDIR)$(MANDIR)/man1/ && \
	        echo $(MANDIR)/man1/$${m##*/} >>$(DESTDIR)$(APPDIR)/installed-files || exit 1; \
	    done; fi

uninstall:
	@echo "  UNINST  $(DESTDIR)$(PREFIX)"
	$(Q)if [ -f $(DESTDIR)$(APPDIR)/installed-files ]; then \
	    while read -r f; do rm -f "$(DESTDIR)$$f"; done <$(DESTDIR)$(APPDIR)/installed-files; \
	fi
	$(Q)rm -rf $(DESTDIR)$(APPDIR) $(DESTDIR)$(SHAREDIR) $(DESTDIR)$(DOCDIR)

# ---- Generated sources -----------------------------------------------------
# What the preprocessor cannot derive readably is generated from the
# catalogue (c_src/core/catalogue.def) and the tracer callback table
# (c_src/nif/tracer_callbacks.def) and committed with a DO-NOT-EDIT banner:
#  - c_src/sinks/lttng_provider/: the LTTng-UST provider header (one per domain) and the
#    provider library's glue (tools/gen_lttng.c);
#  - c_src/core/catalogue_fields.h (named field positions) and
#    include/beamtrace_tracer.hrl (the callbacks' exports and stubs in
#    Erlang) (tools/gen_catalogue.c).
# `make` regenerates them into _build/ and FAILS, naming the fix, when the
# committed ones are not current; `make generate` rewrites them (then commit
# them). `make check-generated` is the same check, for the tests.
#
# priv/beamtrace_lttng.so, the provider library, is built only where
# pkg-config finds lttng-ust; elsewhere `make` says once that the LTTng sink
# is skipped. The NIF dlopens it at load (c_src/sinks/lttng.c) and never links
# liblttng-ust itself, so one NIF binary works with or without LTTng.

GEN_LTTNG := _build/gen_lttng
GEN_CATALOGUE := _build/gen_catalogue
LTTNG_GEN_DIR := c_src/sinks/lttng_provider
GENERATED := $(wildcard $(LTTNG_GEN_DIR)/*) c_src/core/catalogue_fields.h include/beamtrace_tracer.hrl
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

.PHONY: lttng check-generated generate generate-lttng lttng-skipped
all: lttng _build/generated.checked

ifeq ($(LTTNG_UST),yes)
lttng: $(LTTNG_SO)
else
lttng: lttng-skipped
lttng-skipped:
	@echo "  SKIP    $(LTTNG_SO): pkg-config finds no lttng-ust (install liblttng-ust-dev); the LTTng sink is off"
endif

$(GEN_LTTNG): tools/gen_lttng.c c_src/core/catalogue.c c_src/core/catalogue.h c_src/core/catalogue.def
	@mkdir -p _build
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_BASE) -o $@ tools/gen_lttng.c c_src/core/catalogue.c

$(GEN_CATALOGUE): tools/gen_catalogue.c c_src/core/catalogue.c c_src/core/catalogue.h \
                  c_src/core/catalogue.def c_src/nif/tracer_callbacks.def
	@mkdir -p _build
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_BASE) -o $@ tools/gen_catalogue.c c_src/core/catalogue.c

# The check runs again whenever a generator, a table or the committed
# files change.
_build/generated.checked: $(GEN_LTTNG) $(GEN_CATALOGUE) $(GENERATED)
	$(Q)$(MAKE) --no-print-directory check-generated
	@touch $@

check-generated: $(GEN_LTTNG) $(GEN_CATALOGUE)
	$(Q)rm -rf _build/gen.new && mkdir -p _build/gen.new/lttng _build/gen.new/c _build/gen.new/include
	$(Q)$(GEN_LTTNG) _build/gen.new/lttng
	$(Q)$(GEN_CATALOGUE) _build/gen.new/c _build/gen.new/include
	$(Q)if ! { diff -r $(LTTNG_GEN_DIR) _build/gen.new/lttng && \
	           diff c_src/core/catalogue_fields.h _build/gen.new/c/catalogue_fields.h && \
	           diff include/beamtrace_tracer.hrl _build/gen.new/include/beamtrace_tracer.hrl; \
	         } >_build/gen.diff 2>&1; then \
	    echo "error: generated sources are not what tools/gen_*.c make from the tables" >&2; \
	    echo "       (diff in _build/gen.diff): run 'make generate' and commit them" >&2; \
	    exit 1; fi

generate: $(GEN_LTTNG) $(GEN_CATALOGUE)
	$(Q)rm -rf $(LTTNG_GEN_DIR) && mkdir -p $(LTTNG_GEN_DIR)
	$(Q)$(GEN_LTTNG) $(LTTNG_GEN_DIR)
	$(Q)$(GEN_CATALOGUE) c_src/core include
	@echo "  GEN     $(LTTNG_GEN_DIR)/ c_src/core/catalogue_fields.h include/beamtrace_tracer.hrl"

# The old name.
generate-lttng: generate

$(LTTNG_SO): $(wildcard $(LTTNG_GEN_DIR)/*) $(BUILD_CONFIG) c_src/sinks/sinks.h c_src/core/event.h \
             c_src/core/catalogue.h c_src/core/catalogue.def _build/generated.checked
	@mkdir -p priv
	@echo "  CC      $@"
	$(Q)$(CC) $(LTTNG_CFLAGS) -shared -o $@ $(LTTNG_GEN_DIR)/beamtrace_lttng.c $(LTTNG_LDLIBS)

clean: clean-lttng
.PHONY: clean-lttng
clean-lttng:
	rm -rf _build/gen_lttng _build/gen_catalogue _build/gen.new _build/gen.diff _build/generated.checked

# `make -s print-CLI_SRC`: a variable's value, for test scripts that build
# sanitizer variants from the same source lists.
print-%:
	@echo $($*)
