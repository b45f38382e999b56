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
LDLIBS_NIF := -lpthread

Q := $(if $(V),,@)

# The pure C core: no erl_nif.h, shared by the NIF, the CLI and the C tests.
CORE_SRC := c_src/catalogue.c c_src/event.c c_src/ctf_packet.c c_src/ctf_metadata.c \
            c_src/ring.c c_src/trace_dir.c
NIF_SRC := $(CORE_SRC) $(sort $(wildcard c_src/nif_*.c))
CLI_SRC := $(CORE_SRC) $(sort $(wildcard c_src/cli/*.c))
ERL_SRC := $(wildcard src/*.erl)
BEAMS := $(patsubst src/%.erl,ebin/%.beam,$(ERL_SRC))

NIF := priv/beamtrace_nif.so
CLI := priv/beamtrace

.PHONY: all test demo bench clean docs check-docs
all: $(NIF) $(CLI) $(BEAMS) ebin/beamtrace.app

$(NIF): $(NIF_SRC) $(wildcard c_src/*.h c_src/*.def)
	@mkdir -p priv
	@echo "  CC      $@"
	$(Q)$(CC) $(NIF_CFLAGS) -shared -o $@ $(NIF_SRC) $(LDLIBS_NIF)

$(CLI): $(CLI_SRC) $(wildcard c_src/*.h c_src/*.def c_src/cli/*.h)
	@mkdir -p priv
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_BASE) -Ic_src/cli -o $@ $(CLI_SRC) -lm

ebin/%.beam: src/%.erl
	@mkdir -p ebin
	@echo "  ERLC    $@"
	$(Q)$(ERLC) -Werror +debug_info -o ebin $<

ebin/beamtrace.app: src/beamtrace.app.src
	@mkdir -p ebin
	$(Q)cp $< $@

test: all
	$(Q)bash test/run_all.sh

demo: all
	$(Q)bash examples/process_tracing.sh

bench: all
	$(Q)bash bench/run.sh

clean:
	rm -rf priv/*.so $(CLI) ebin test/out bench/out

# The README's tracepoint table comes from the catalogue, through the CLI.
docs: $(CLI)
	$(Q)bash tools/update_docs.sh

check-docs: $(CLI)
	$(Q)bash tools/update_docs.sh --check
