%% @doc beamtrace: OTP's `org_erlang_dyntrace' tracepoints on a stock VM.
%%
%% This module is both the API and the tracer module. Use it as
%% `{tracer, beamtrace, []}' (events go to the default session) or
%% `{tracer, beamtrace, Session}' in `erlang:trace/3':
%%
%% ```
%% {ok, S} = beamtrace:start(#{events => ["org_erlang_dyntrace:process_*"]}),
%% erlang:trace(new, true, [procs, {tracer, beamtrace, []}]),
%% ...,
%% {ok, #{dir := Dir, events := N, discarded := 0}} = beamtrace:stop().
%% '''
%%
%% A session records into a CTF trace directory readable by `beamtrace view',
%% babeltrace2 and Trace Compass. The recording never blocks a traced
%% process: when a thread's buffer is full, events are dropped and counted.
%%
%% == Structure ==
%% This module has the API's docs, the NIFs (on_load loads the library) and
%% the tracer callbacks; each area's work is in a module of its own, which
%% the API calls: beamtrace_sessions, beamtrace_trace, beamtrace_flight,
%% beamtrace_tracing, beamtrace_probes, beamtrace_tags, beamtrace_dyntrace.
-module(beamtrace).
%% Implements the erl_tracer behaviour (its callbacks are the NIFs below;
%% erl_tracer.erl ships no behaviour_info in Debian's OTP 25).

-export([start/0, start/1, stop/0, stop/1, info/0, info/1, sessions/0, sinks/0,
         snapshot/1, snapshot/2]).
%% User probes and tags: OTP's dyntrace API.
-export([available/0, user_trace_s1/1, user_trace_i4s4/9,
         p/0, p/1, p/2, p/3, p/4, p/5, p/6, p/7, p/8,
         pn/1, pn/2, pn/3, pn/4, pn/5, pn/6, pn/7, pn/8, pn/9,
         put_tag/1, get_tag/0, get_tag_data/0, spread_tag/1, restore_tag/1]).
%% OTP's dyntrace module name, backed by beamtrace.
-export([install_dyntrace/0, uninstall_dyntrace/0]).
%% Trace flags and patterns in a trace session of beamtrace's own.
-export([trace_session/1]).
%% One call: recording, flags and patterns, guard rails, all taken down.
-export([trace/2, trace_async/2, stop_trace/1, trace_info/1, snapshot_trace/1]).
%% The flight recorder: captures around triggers (docs/flight-recorder.md).
-export([flight/2, stop_flight/1, flight_info/1, trigger/1, flight_offer_nif/5,
         flight_info_nif/1, flight_call_trigger_nif/3, flight_call_sweep_nif/2]).
-export(['$shared_state'/0]).
%% The trace clock; beamtrace's own events, for beamtrace's modules.
-export([clock_ns/0, emit_nif/3, priv_dir/0]).
%% The NIFs of the modules this API delegates to (beamtrace_sessions,
%% beamtrace_probes): the library is loaded for this module, so they are
%% this module's functions.
-export([start_nif/2, stop_nif/1, snapshot_nif/2, user_probe_wanted/2, user_trace_s1_nif/2,
         user_trace_i4s4_nif/9, user_trace_n_nif/10]).

-nifs([start_nif/2, stop_nif/1, info_nif/1, sessions_nif/0, snapshot_nif/2, sinks_nif/0,
       '$shared_state'/0, emit_nif/3, clock_ns/0,
       user_probe_wanted/2, user_trace_s1_nif/2, user_trace_i4s4_nif/9, user_trace_n_nif/10,
       flight_offer_nif/5, trigger_nif/1, flight_info_nif/1, flight_call_trigger_nif/3,
       flight_call_sweep_nif/2]).

-on_load(load_nif/0).

-export_type([session/0, option/0, stats/0]).

-opaque session() :: reference().
-type limit() :: pos_integer() | infinity.
-type option() ::
        {dir, file:name_all()}
      | {events, [string() | binary()]}
      | {mode, discard | overwrite}
      | {buffer_size, pos_integer()}
      | {subbuffers, 2..1024}
      | {message_length, 0..16384 | size_only}
      | {default, boolean()}
      | {file_mode, 8#600..8#777}
      | {max_bytes, limit()}
      | {max_events, limit()}
      | {duration, limit()}
      | {max_rate, limit()}
      | {tracefile_size, limit()}
      | {tracefile_count, limit()}
      | {flush_interval, pos_integer()}
      | {links, boolean()}
      | {results, boolean()}
      | {args, boolean()}
      | {notify, pid() | undefined}
      | {system_monitor, map()}
      | {samples, map()}
      | {distribution, boolean()}
      | {file_io, boolean() | [pid()]}
      | {ets, [atom() | ets:tid() | all]}
      | {relayd, string() | binary()}
      | {live, boolean() | pos_integer()}
      | {local, boolean()}
      | {relayd_session, string() | binary()}
      | {relayd_buffer, pos_integer()}
      | {flight, none | map()}
      | {sample, none | pos_integer() | #{atom() => pos_integer()}}
      | {on_max_rate, stop | sample}.
-type reason() :: stop | duration | max_events | max_bytes | max_rate | dir_removed
                | vm_exit | unload | file:posix().
-type stats() :: #{dir := binary() | undefined, events := non_neg_integer(),
                   discarded := non_neg_integer(), after_stop := non_neg_integer(),
                   overwritten := non_neg_integer(),
                   written_bytes := non_neg_integer(), reason := reason(),
                   names_missing => non_neg_integer(), relayd => relayd_stats()}.
%% A streaming session's relayd copy: `events' the relayd confirmed it
%% wrote, `lost' the events it was not confirmed to have (counted in
%% `discarded'; `unconfirmed' of them were sent before the connection
%% ended, so its copy may hold them too),
%% `path' its trace directory under the relayd's output (the current
%% connection's), `error' the last failure in one line.
-type relayd_stats() :: #{url := binary(),
                          state := connecting | streaming | disconnected | closed | failed,
                          path := binary() | undefined, events := non_neg_integer(),
                          lost := non_neg_integer(), unconfirmed := non_neg_integer(),
                          written_bytes := non_neg_integer(),
                          queued_bytes := non_neg_integer(),
                          connections := non_neg_integer(),
                          disconnections := non_neg_integer(),
                          error := binary() | undefined}.

%% The erl_tracer callbacks: exported, declared NIFs, and their stubs.
-include("beamtrace_tracer.hrl").

%%% API

%% @equiv start(#{})
-spec start() -> {ok, session()} | {error, term()}.
start() ->
    start(#{}).

%% @doc Starts a recording session.
%%
%% Options (a map or a proplist):
%% <dl>
%% <dt>`dir'</dt><dd>trace directory, created private (0700, files 0600)
%%   and refused if it is a symlink or already holds anything; default a new
%%   `./beamtrace-traces/beamtrace-YYYYMMDD-HHMMSS[-N]'.</dd>
%% <dt>`events'</dt><dd>LTTng-style patterns, e.g.
%%   `["org_erlang_dyntrace:process_*"]'; default all tracepoints.</dd>
%% <dt>`mode'</dt><dd>`discard' (keep the oldest, drop new events when full;
%%   default) or `overwrite' (flight recorder: keep the newest; written out
%%   at stop, at VM exit, or by snapshot/1).</dd>
%% <dt>`buffer_size'</dt><dd>bytes of buffer per recording thread (default
%%   4 MiB), split into `subbuffers' packets (default 8).</dd>
%% <dt>`message_length'</dt><dd>bytes of each printed message kept
%%   (default 255), 0 for none, or `size_only' for its size in words.</dd>
%% <dt>`default'</dt><dd>make this the session `{tracer, beamtrace, []}'
%%   feeds; the first session started is the default anyway.</dd>
%% <dt>`file_mode'</dt><dd>mode of the trace files (default 8#600); the
%%   directory gets x wherever the files have r.</dd>
%% <dt>`max_bytes', `max_events', `duration' (ms), `max_rate' (events a
%%   second, over 100 ms)</dt><dd>caps: past one the session stops by
%%   itself, with that reason. Default `max_bytes' 1 GiB, others
%%   `infinity'.</dd>
%% <dt>`tracefile_size', `tracefile_count'</dt><dd>LTTng-style rotation:
%%   each thread's stream file is cut at `tracefile_size' bytes and only the
%%   newest `tracefile_count' files are kept.</dd>
%% <dt>`flush_interval'</dt><dd>ms within which a thread's partial packet
%%   reaches the disk (default 1000).</dd>
%% <dt>`notify'</dt><dd>a process sent `{beamtrace_stopped, Session, Reason}'
%%   when the session stops by itself.</dd>
%% <dt>`links'</dt><dd>`true' records message events as
%%   `org_erlang_beamtrace:message_send_link' and `message_receive_link'
%%   instead of OTP's `message_send' and `message_receive': the same fields
%%   plus what matches each send to its receipt (docs/cluster.md). It costs
%%   the traced processes a bounded fingerprint of every traced message;
%%   the receiving side also needs the `receive' trace pattern trace/2 sets
%%   with its `links' option. Default `false'.</dd>
%% <dt>`results'</dt><dd>`true' records OTP's `function_return' as
%%   `org_erlang_beamtrace:function_result': the same fields plus the value
%%   returned, printed and bounded (255 bytes), for `beamtrace calls
%%   --group-by return'. Only returns traced with `return' call specs carry
%%   a value. Default `false'.</dd>
%% <dt>`args'</dt><dd>`true' records OTP's `function_call' as
%%   `org_erlang_beamtrace:function_call_args': the same fields plus the
%%   argument list, printed and bounded (255 bytes), for `beamtrace calls
%%   --group-by arg:N'. Default `false'.</dd>
%% <dt>`sample'</dt><dd>keep one event in N: `N' (calls, sends,
%%   receives, scheduling and GC) or `#{call => N, send => N, 'receive' =>
%%   N, running => N, garbage_collection => N, procs => N, ports => N}'.
%%   Decided in the tracer, per event kind; a call and its return, a
%%   process's in and out, a collection's start and end stay together. The
%%   ratios are in the trace (`sample_ratio' events) and the analyses scale
%%   counts back by them. Default `none'.</dd>
%% <dt>`on_max_rate'</dt><dd>`stop' (default; a flight recording's is
%%   `sample'): what passing `max_rate' does. `sample' keeps fewer events
%%   instead (the ratio that brings the rate to 80% of the cap), and more
%%   again once the rate stays under a quarter of it; stop/1's figures say
%%   so (`sampling' => #{ratios, reactions}).</dd>
%% <dt>`system_monitor', `samples', `distribution', `file_io', `ets'</dt><dd>the session's
%%   own sources (long GCs and schedules, busy ports, counters, node up and
%%   down, file operations, ETS operations): see beamtrace_sources. Off by default; none costs anything
%%   unless asked for.</dd>
%% <dt>`relayd'</dt><dd>`"net://HOST[:CONTROL_PORT[:DATA_PORT]][/PATH]"'
%%   (as `lttng create --set-url'; ports 5342 and 5343 by default): the
%%   session streams to that lttng-relayd, which writes the trace under
%%   `<its output>/<hostname>/<relayd_session>/ust/pid/<procname>-<pid>-<datetime>/'.
%%   No lttng-sessiond or root is needed on this node. The start fails with
%%   `{relayd, Posix, Why}' when the relayd cannot be reached. Afterwards a
%%   slow, stopped or lost relayd never holds up the node: what it cannot
%%   take is dropped and counted (`relayd => #{lost}' in info/1 and
%%   stop/1, and in `discarded'), and a lost connection is made again.
%%   docs/streaming.md.</dd>
%% <dt>`local'</dt><dd>with `relayd': also keep a local copy (in `dir',
%%   or the default directory). A given `dir' implies it. Default
%%   `false'.</dd>
%% <dt>`live'</dt><dd>with `relayd': `true' (1 s, LTTng's default) or a
%%   period in ms: a live session, which `babeltrace2
%%   --input-format=lttng-live net://RELAYD/host/HOSTNAME/SESSION' follows
%%   while it records; idle threads send beacons so viewers move on.
%%   Partial packets are flushed at that period.</dd>
%% <dt>`relayd_session'</dt><dd>the session's name on the relayd, taken
%%   as its directory; default `"beamtrace"', to which the relayd appends
%%   `-YYYYMMDD-HHMMSS'.</dd>
%% <dt>`relayd_buffer'</dt><dd>bytes of packets held while the network
%%   lags (default 4 MiB, at least two packets).</dd>
%% </dl>
%% Errors: `{badopt, Key}', `{Posix, Dir}', `too_many_sessions',
%% `{relayd, Posix, Why}', and the sources' (`{system_monitor, {in_use,
%% Pid}}', ...).
-spec start(#{atom() => term()} | [option()]) -> {ok, session()} | {error, term()}.
start(Opts) ->
    beamtrace_sessions:start(Opts).

%% @doc Stops the default session and returns its figures.
%%
%% Trace flags are not touched: flags set by hand with `{tracer, beamtrace,
%% []}' stay on their processes after stop/0, and every traced event still
%% calls the tracer (which then answers `discard'; about 25% extra CPU per
%% message on a busy broker). Clear them with `erlang:trace(all, false,
%% [all])' and the patterns with `erlang:trace_pattern({'_', '_', '_'},
%% false, [local, meta, call_count, call_time])', or use trace/2, which
%% removes every flag and pattern it set whenever it stops.
-spec stop() -> {ok, stats()} | {error, term()}.
stop() ->
    beamtrace_sessions:stop().

%% @doc Stops a session: waits for events in flight, writes every buffer
%% out, closes the trace; or collects a session that stopped by itself.
%% `events' are in the trace; `discarded' were lost while it recorded (full
%% buffers, overwritten packets, packets a cap or a write failure left
%% unwritten), as LTTng counts them, and the trace's own loss counts say
%% the same; `after_stop' were offered once it had ended (flags still set
%% when a cap, the duration or this call ended it): never to be recorded,
%% and no loss. Together they are every event the session was offered.
%% `reason' says why it stopped; `names_missing' how many processes the
%% state dump had not named when the stop cut it (they are named only by
%% the events that name them). A trace the disk refused (`enospc', ...) or whose directory
%% was removed (`dir_removed') is `{error, {Reason, Stats}}'; a session
%% already collected, or one of a library since unloaded,
%% `{error, not_running}'.
-spec stop(session()) -> {ok, stats()} | {error, term()}.
stop(Session) ->
    beamtrace_sessions:stop(Session).

%% @doc Writes what a flight recorder (`mode => overwrite') session holds
%% now into a new trace directory next to its own
%% (`<dir>-snapshot-<N>'), without stopping it: LTTng's `snapshot record'.
%% A session that only streams has no directory: `{error, no_dir}' (give
%% snapshot/2 one).
-spec snapshot(session()) -> {ok, map()} | {error, term()}.
snapshot(Session) ->
    beamtrace_sessions:snapshot(Session).

%% @doc As snapshot/1, into `Dir' (created; must not hold anything).
-spec snapshot(session(), file:name_all()) -> {ok, map()} | {error, term()}.
snapshot(Session, Dir) ->
    beamtrace_sessions:snapshot(Session, Dir).

%% @doc Live state of the default session: `#{state := running | stopped,
%% dir, events, discarded, after_stop, written_bytes, default, reason}'.
-spec info() -> map() | {error, not_running}.
info() ->
    info_nif([]).

%% @doc Live state of a session; `[]' is the default session, as in
%% `{tracer, beamtrace, []}'.
-spec info(session() | []) -> map() | {error, not_running}.
info(Session) ->
    info_nif(Session).

%% @doc Every running session, and those that stopped by themselves and
%% were not collected by stop/1 yet.
-spec sessions() -> [session()].
sessions() ->
    sessions_nif().

%% @doc Which sinks this node has: the recorder always; LTTng-UST when
%% liblttng-ust and beamtrace's provider library load; USDT unless it was
%% compiled out (no sys/sdt.h at build time). `clock' says what stamps the
%% events (CLOCK_MONOTONIC nanoseconds either way): `tsc' when the CPU's
%% invariant TSC, calibrated against clock_gettime and re-checked every
%% millisecond, stands in for it (also where the kernel keeps time with
%% kvm-clock), else `{clock_gettime, Why}'. The first call calibrates the
%% clock if no session did yet (about 30 ms, on a dirty scheduler).
-spec sinks() -> #{recorder := true, lttng := true | {unavailable, binary()},
                   usdt := true | {unavailable, binary()},
                   clock := tsc | {clock_gettime, binary()}}.
sinks() ->
    sinks_nif().

%% @doc Opens a handle through which trace flags and patterns are set with
%% beamtrace as the tracer, and all taken down again by
%% beamtrace_tracing:close/1 or when the caller exits: a trace session of
%% its own on OTP 27+ (untouched by tools clearing the legacy session), the
%% legacy session otherwise. See beamtrace_tracing for the calls and the
%% contract. Opts: `tracer_state' (`[]' or a session from start/1),
%% `name', `backend', `owner'.
-spec trace_session(beamtrace_tracing:options()) ->
          {ok, beamtrace_tracing:handle()} | {error, term()}.
trace_session(Opts) ->
    beamtrace_tracing:open(Opts).

%% @doc Records `Spec' with guard rails and takes everything down again,
%% in one call: starts a session (Opts holds start/1's options too), loads
%% the modules the spec names, sets the trace patterns and flags (through
%% beamtrace_tracing: a trace session of its own on OTP 27+), waits until
%% a cap trips, then removes every flag and pattern it set, stops the
%% session and returns its figures.
%%
%% Spec: one item or a list of items.
%% <ul>
%% <li>a call spec, redbug style: `"my_mod:handle_call/3"', `"my_mod:f"'
%%   (any arity), `"my_mod"' (every function), `"my_mod:'_'/2"', `_' or
%%   `'_'' as wildcards, quoted atoms allowed; or in Elixir's spelling,
%%   `"MyApp.Worker.run/1"', `"MyApp.Worker"', `":ets.lookup/2"'; `"... -> return"' also
%%   records returns and exceptions (return_trace, exception_trace). Or a
%%   tuple `{M, F, A}' / `{M, F, A, return}'. Calls are traced `local'
%%   (local calls too).</li>
%% <li>an event kind: `procs', `send', `'receive'', `running',
%%   `garbage_collection', `ports' (`call' is implied by call specs).</li>
%% </ul>
%% The spec may be empty (`[]') when a session source (`system_monitor',
%% `samples', `distribution', `file_io', `ets') is what is to be recorded.
%% Options (map or proplist), with start/1's (but `notify', `default'):
%% <dl>
%% <dt>`procs'</dt><dd>`all' (default), `new', `existing', a pid, a
%%   registered name, or a list of pids and names.</dd>
%% <dt>`duration'</dt><dd>ms or `infinity'; default 15000. When it
%%   elapses the flags and patterns go first, then the session stops:
%%   nothing is cut at the end.</dd>
%% <dt>`max_events', `max_bytes' (default 1 GiB), `max_rate' (events a
%%   second over 100 ms windows, default 100000, `infinity' for none; the
%%   state dump at start does not count; `on_max_rate => sample' samples
%%   instead of stopping)</dt>
%%   <dd>start/1's caps, enforced by the session's consumer thread at no
%%   cost per event; the first to trip stops the trace with its name as the
%%   reason. They count whole packets (buffer_size / subbuffers bytes per
%%   thread; 64 KiB when a cap is given and neither is), so a trace can
%%   end up to a packet short of a cap; the events offered between the
%%   trip and the removal of the flags are counted in `after_stop' (not
%%   losses: the trace had ended).</dd>
%% <dt>`owner'</dt><dd>the process whose exit stops the trace (default the
%%   caller).</dd>
%% <dt>`return_to'</dt><dd>`true' adds the `return_to' flag: timing that
%%   keeps tail calls (below).</dd>
%% <dt>`backend'</dt><dd>beamtrace_tracing's: `auto' (default), `session',
%%   `legacy'.</dd>
%% <dt>`links'</dt><dd>`true' (with `send' and/or `'receive''): message
%%   events carry what links each send to its receipt (start/1's `links'),
%%   and the `'receive'' pattern that tells the sender is set (in the own
%%   trace session on OTP 27+; on OTP 25/26 the node's one `'receive''
%%   pattern, restored at the end). docs/cluster.md. Default `false'.</dd>
%% <dt>`exclude'</dt><dd>pids and registered names never traced (with
%%   `procs' `all' or `existing'); default `[]'. beamtrace's own processes
%%   never are either, and are named in the trace (`own_process') so that
%%   the analyses leave out what they take part in.</dd>
%% <dt>`nodes'</dt><dd>a list of nodes (this one may be among them): the
%%   same on each, traces brought back into one cluster directory here, on
%%   this node's clock: `{ok, #{dir, nodes => #{Node => Stats}}}'. See
%%   beamtrace_cluster:trace/3. Not with trace_async/2.</dd>
%% <dt>`results', `args'</dt><dd>`true' records the value each traced call
%%   returns (with `-> return' specs) or its arguments, for `beamtrace calls
%%   --group-by return' or `arg:N' (start/1's options of those names).</dd>
%% </dl>
%% Returns `{ok, Stats}' (stop/1's map, plus `reason', `functions' and
%% `processes' matched, `backend', `elapsed_ms' from the flags on to the
%% flags off, `code_loads' and `not_reapplied': traced modules loaded again
%% while recording, whose call patterns were set again on the new code,
%% and the specs the new code no longer matches), or `{error, {Posix,
%% Stats}}' when the disk refused the trace. Setup errors, after which
%% nothing is left set and no trace directory is left: `{error,
%% {badspec, Item, Why}}', `{error, {not_loaded, Module}}', `{error,
%% {no_match, Spec}}' (a spec matching no function), `{error, {no_process,
%% PidOrName}}', `{error, {already_traced, Pid, Tracer}}' (OTP 25/26: another
%% tracer holds it), `{error, {badopt, Key}}', start/1's errors.
%%
%% `-> return' and tail recursion: return_trace keeps a stack frame for
%% every traced call until it returns, so a traced function that never
%% returns, such as a server's receive loop calling itself (`"my_server"'
%% traces its loop too), grows its stack on every iteration for as long as
%% the trace runs, until memory runs out. Trace with `-> return' only
%% functions that return (handle_call/3 does), or use `return_to => true'
%% without `-> return': the VM then reports where each traced call returns
%% to (a `function_return' naming the caller), once per chain of tail
%% calls, and keeps tail recursion. `beamtrace calls' times calls from these
%% when the caller is traced too; a return into untraced code leaves the
%% call unfinished there.
-spec trace(beamtrace_trace:spec(), beamtrace_trace:options() | list()) ->
          {ok, map()} | {error, term()}.
trace(Spec, Opts) ->
    beamtrace_trace:trace(Spec, Opts).

%% @doc As trace/2, but returns `{ok, Trace}' once tracing is set up; when
%% it stops (a cap, the owner's exit), the caller gets `{beamtrace_trace,
%% Trace, Result}', Result as trace/2's.
-spec trace_async(beamtrace_trace:spec(), beamtrace_trace:options() | list()) ->
          {ok, beamtrace_trace:trace()} | {error, term()}.
trace_async(Spec, Opts) ->
    beamtrace_trace:trace_async(Spec, Opts).

%% @doc Stops a trace_async/2 trace now: trace/2's result, reason `stop'.
%% `{error, not_running}' once it is over (and its result was taken),
%% `{error, not_a_trace}' at once for anything else, a live process
%% included (nothing is sent to it).
-spec stop_trace(beamtrace_trace:trace() | term()) -> {ok, map()} | {error, term()}.
stop_trace(Trace) ->
    beamtrace_trace:stop(Trace).

%% @doc Live figures of a trace_async/2 trace: `#{state, elapsed_ms, dir,
%% events, discarded, written_bytes, functions, processes, backend,
%% code_loads}';
%% `{error, not_running}' once it is over, `{error, not_a_trace}' at once
%% for anything else (nothing is sent to it).
-spec trace_info(beamtrace_trace:trace() | term()) -> map() | {error, not_running | not_a_trace}.
trace_info(Trace) ->
    beamtrace_trace:info(Trace).

%%% The flight recorder

%% @doc Starts a flight recording: `Spec' is recorded as by trace/2 into
%% rings that keep the last `window' ms, and every trigger writes a
%% capture, `<dir>/capture-<N>-<UTC time>', a trace holding the window
%% before it and `after' ms past it. Triggers (`triggers', at least one):
%% `"Mod:Fun/Arity>15ms"' (a call slower than that), `"long_gc=50ms"',
%% `"long_schedule=50ms"', `"large_heap=Words"', `"busy_port"',
%% `"busy_dist_port"', `"long_message_queue=D/E"' (OTP 27+), `"probe"' or
%% `"probe=Label"' (trigger/1), `"message_queue=N"' (sampled). Options:
%% trace/2's, plus `window' (default 10000), `after' (1000),
%% `max_captures' (per hour, default 6, or `infinity'), `until' (ms,
%% default 7 days), `sample_interval' (message_queue sampling, ms, default
%% 1000). Returns `{ok, Flight}'; it runs until `until', a cap (max_bytes
%% covers every capture), stop_flight/1 or its owner's exit. See
%% beamtrace_flight and docs/flight-recorder.md.
-spec flight(beamtrace_trace:spec(), map() | list()) ->
          {ok, beamtrace_flight:flight()} | {error, term()}.
flight(Spec, Opts) ->
    beamtrace_flight:start(Spec, Opts).

%% @doc Stops a flight recording: trace/2's result plus `captures' (their
%% directories) and the capture figures.
-spec stop_flight(beamtrace_flight:flight()) -> {ok, map()} | {error, term()}.
stop_flight(Flight) ->
    beamtrace_flight:stop(Flight).

%% @doc Live figures of a flight recording.
-spec flight_info(beamtrace_flight:flight()) -> map() | {error, not_running}.
flight_info(Flight) ->
    beamtrace_flight:info(Flight).

%% @doc Fires every flight recording with a `probe' trigger for `Label'
%% (or for any label): a capture of what led here. true when one took it;
%% false (costing one NIF call) when none listens.
-spec trigger(atom() | binary() | string()) -> boolean().
trigger(Label) when is_list(Label) ->
    trigger_nif(unicode:characters_to_binary(Label));
trigger(Label) ->
    trigger_nif(Label).

%% @doc Writes what a trace_async/2 trace with `mode => overwrite' (a
%% flight recorder) holds now into a new trace directory next to its own
%% (`<dir>-snapshot-<N>'), without stopping it: snapshot/1 for that trace.
-spec snapshot_trace(beamtrace_trace:trace() | term()) -> {ok, map()} | {error, term()}.
snapshot_trace(Trace) ->
    beamtrace_trace:snapshot(Trace).

%%% User probes (OTP's dyntrace:p/pn). Integers come first, then strings
%%% (iodata of at most 1024 bytes), at most 4 of each. A probe returns true
%%% when some sink listened, false when none did (nothing is evaluated
%%% then), and raises badarg for a string that is too long or not iodata.

%% @doc true: user probes work in this VM (beamtrace's NIF is loaded).
-spec available() -> boolean().
available() ->
    true.

%% @doc Fires user_trace_s1 (OTP's deprecated single-string probe).
-spec user_trace_s1(iodata()) -> boolean().
user_trace_s1(Message) ->
    beamtrace_probes:user_trace_s1(Message).

%% @doc Fires user_trace_i4s4 with every slot given (`undef' for absent).
user_trace_i4s4(Tag, I1, I2, I3, I4, S1, S2, S3, S4) ->
    beamtrace_probes:user_trace_i4s4(Tag, I1, I2, I3, I4, S1, S2, S3, S4).

%% OTP's dispatch, clause by clause (beamtrace_probes): up to 4 integers,
%% then up to 4 strings; any other shape is a function_clause.
-spec p() -> boolean().

p() -> beamtrace_probes:p().
p(A) -> beamtrace_probes:p(A).
p(A, B) -> beamtrace_probes:p(A, B).
p(A, B, C) -> beamtrace_probes:p(A, B, C).
p(A, B, C, D) -> beamtrace_probes:p(A, B, C, D).
p(A, B, C, D, E) -> beamtrace_probes:p(A, B, C, D, E).
p(A, B, C, D, E, F) -> beamtrace_probes:p(A, B, C, D, E, F).
p(A, B, C, D, E, F, G) -> beamtrace_probes:p(A, B, C, D, E, F, G).
p(A, B, C, D, E, F, G, H) -> beamtrace_probes:p(A, B, C, D, E, F, G, H).

%% @doc Numbered user probes: Label in 0..1023 fires user_trace_n (and the
%% USDT probe user_trace-n&lt;Label&gt;).

pn(L) -> beamtrace_probes:pn(L).
pn(L, A) -> beamtrace_probes:pn(L, A).
pn(L, A, B) -> beamtrace_probes:pn(L, A, B).
pn(L, A, B, C) -> beamtrace_probes:pn(L, A, B, C).
pn(L, A, B, C, D) -> beamtrace_probes:pn(L, A, B, C, D).
pn(L, A, B, C, D, E) -> beamtrace_probes:pn(L, A, B, C, D, E).
pn(L, A, B, C, D, E, F) -> beamtrace_probes:pn(L, A, B, C, D, E, F).
pn(L, A, B, C, D, E, F, G) -> beamtrace_probes:pn(L, A, B, C, D, E, F, G).
pn(L, A, B, C, D, E, F, G, H) -> beamtrace_probes:pn(L, A, B, C, D, E, F, G, H).

%%% User tags (beamtrace_tags): a binary per process that travels with its
%%% messages while the process is "spreading", as OTP's dt_* BIFs did.

%% @doc Sets this process's tag (chardata, stored as UTF-8) and returns the
%% previous one; `undefined' clears it.
-spec put_tag(undefined | unicode:chardata()) -> binary() | undefined.
put_tag(Data) ->
    beamtrace_tags:put_tag(Data).

%% @doc The tag this process set with put_tag/1, or undefined.
-spec get_tag() -> binary() | undefined.
get_tag() ->
    beamtrace_tags:get_tag().

%% @doc The tag in effect: set here, or received from a spreading sender.
-spec get_tag_data() -> binary() | undefined.
get_tag_data() ->
    beamtrace_tags:get_tag_data().

%% @doc Starts (true) or stops (false) attaching this process's tag to the
%% messages it sends; returns the previous state for restore_tag/1.
-spec spread_tag(boolean()) -> {non_neg_integer(), binary() | []}.
spread_tag(On) ->
    beamtrace_tags:spread_tag(On).

%% @doc Restores a state spread_tag/1 returned (in this or another process).
-spec restore_tag({non_neg_integer(), binary() | []}) -> true.
restore_tag(State) ->
    beamtrace_tags:restore_tag(State).

%%% dyntrace compatibility (beamtrace_dyntrace)

%% @doc Loads, into this running node, a `dyntrace' module backed by
%% beamtrace: existing code calling dyntrace:p/N, put_tag/1, ... and
%% `{tracer, dyntrace, []}' users work on a stock VM with no code change,
%% recording into beamtrace's sinks. OTP's own module, if loaded, is
%% replaced; uninstall_dyntrace/0 brings it back. Until then the stand-in's
%% directory stays first on the code path, so reloading dyntrace (the
%% shell's `l(dyntrace)', a release handler's load) loads the stand-in
%% again, never OTP's module, whose probes raise `nif_not_loaded' on a VM
%% built without dynamic tracing.
-spec install_dyntrace() -> ok | {error, term()}.
install_dyntrace() ->
    beamtrace_dyntrace:install_dyntrace().

%% @doc Unloads beamtrace's `dyntrace' and loads OTP's from the code path
%% again (if runtime_tools is installed). Tracers named `dyntrace' stop
%% recording: with OTP's module on a stock VM they trace nothing.
-spec uninstall_dyntrace() -> ok | {error, term()}.
uninstall_dyntrace() ->
    beamtrace_dyntrace:uninstall_dyntrace().

load_nif() ->
    %% The priv directory also holds the optional sink libraries. Thread
    %% slots: every scheduler (normal, dirty CPU, dirty I/O) may run a trace
    %% callback; 16 more for the VM's other threads. The NIF lays the slots
    %% out by kind, so that a trace says which streams dirty schedulers
    %% wrote.
    case priv_dir() of
        {error, _} = Error ->
            Error;
        Priv ->
            Threads = {erlang:system_info(schedulers), erlang:system_info(dirty_cpu_schedulers),
                       erlang:system_info(dirty_io_schedulers), 16},
            case erlang:load_nif(filename:join(Priv, "beamtrace_nif"), {Priv, Threads}) of
                ok ->
                    preload();
                {error, Why} = Error ->
                    %% A shipper (beamtrace record) reads why: the code
                    %% server only logs it.
                    _ = application:get_env(beamtrace, priv_dir) =/= undefined andalso
                        application:set_env(beamtrace, nif_load_error, Why),
                    Error
            end
    end.

%% The modules that starting and stopping a session or a trace/2 call,
%% beamtrace's and OTP's, and those of the user probes and tags (which
%% were this module's own), loaded with beamtrace: a module's first call
%% otherwise loads it through the code server, a process of normal
%% priority that on a saturated node answers a turn of the run queue
%% later, and a load takes it several (measured: 115 s before trace/2
%% began, at 100,000 busy processes on OTP 25). bmt_trace_SUITE's
%% busy_servers_test runs those paths with the code server suspended.
%% `beamtrace record' ships beamtrace's modules before this one: they are
%% loaded already then. `trace' (trace sessions) is OTP 27's; a module
%% missing is skipped.
-define(PRELOAD, [beamtrace_sessions, beamtrace_probes, beamtrace_tags,
                  beamtrace_label, beamtrace_registry, beamtrace_statedump, beamtrace_sources,
                  beamtrace_sources_monitor, beamtrace_sources_samples,
                  beamtrace_tracing, beamtrace_trace_spec, beamtrace_trace_options,
                  beamtrace_trace,
                  string, unicode_util, io_lib, io_lib_format, calendar, counters, proc_lib,
                  gen_server, gen, filename, trace]).

preload() ->
    _ = [code:ensure_loaded(M) || M <- ?PRELOAD],
    ok.

%% @private Where the NIF library is: the application environment's `priv_dir'
%% first (what `beamtrace record' sets while it loads the modules it
%% shipped with code:load_binary/3: code:which/1 is `non_existing' during
%% their on_load), then the application's priv directory, then priv/ next
%% to the ebin/ this module was loaded from.
-spec priv_dir() -> string() | {error, term()}.
priv_dir() ->
    case application:get_env(beamtrace, priv_dir) of
        {ok, Dir} when is_list(Dir); is_binary(Dir) ->
            unicode:characters_to_list(Dir);
        _ ->
            case {code:priv_dir(beamtrace), code:which(?MODULE)} of
                {Dir, _} when is_list(Dir) ->
                    Dir;
                {_, Beam} when is_list(Beam) ->
                    filename:join(filename:dirname(filename:dirname(Beam)), "priv");
                {_, Other} ->
                    {error, {no_priv_dir, Other}}
            end
    end.

%%% NIF stubs: replaced when the library loads.

%% @private Starts a session into Dir (undefined: it only streams).
-spec start_nif(binary() | undefined, map()) -> {ok, session()} | {error, term()}.
start_nif(_Dir, _Options) -> erlang:nif_error(nif_not_loaded).
%% @private Stops a session (`[]': the default one), its figures.
-spec stop_nif(session() | []) -> {ok, stats()} | {error, term()}.
stop_nif(_Session) -> erlang:nif_error(nif_not_loaded).
info_nif(_Session) -> erlang:nif_error(nif_not_loaded).
sessions_nif() -> erlang:nif_error(nif_not_loaded).
%% @private Writes what an overwrite-mode session holds into Dir.
-spec snapshot_nif(session(), binary()) -> {ok, map()} | {error, term()}.
snapshot_nif(_Session, _Dir) -> erlang:nif_error(nif_not_loaded).
%% @private Records one org_erlang_beamtrace event (beamtrace's own code:
%% the state dump, the node table).
-spec emit_nif(session() | [], atom(), [term()]) -> boolean().
emit_nif(_Session, _Tracepoint, _Fields) -> erlang:nif_error(nif_not_loaded).
%% @doc The trace clock now: CLOCK_MONOTONIC in nanoseconds, the clock of
%% every timestamp in a trace (their metadata holds its offset to the
%% epoch). For estimating one node's clock against another's.
-spec clock_ns() -> non_neg_integer().
clock_ns() -> erlang:nif_error(nif_not_loaded).
sinks_nif() -> erlang:nif_error(nif_not_loaded).
'$shared_state'() -> erlang:nif_error(nif_not_loaded).
%% @private Whether a sink listens to a user probe (kind s1, i4s4, or n
%% and its label); then each kind's probe (beamtrace_probes).
-spec user_probe_wanted(s1 | i4s4 | n, term()) -> boolean().
user_probe_wanted(_Kind, _Label) -> erlang:nif_error(nif_not_loaded).
-spec user_trace_s1_nif(term(), term()) -> boolean().
user_trace_s1_nif(_Tag, _Message) -> erlang:nif_error(nif_not_loaded).
-spec user_trace_i4s4_nif(_, _, _, _, _, _, _, _, _) -> boolean().
user_trace_i4s4_nif(_Tag, _I1, _I2, _I3, _I4, _S1, _S2, _S3, _S4) ->
    erlang:nif_error(nif_not_loaded).
-spec user_trace_n_nif(_, _, _, _, _, _, _, _, _, _) -> boolean().
user_trace_n_nif(_Label, _Tag, _I1, _I2, _I3, _I4, _S1, _S2, _S3, _S4) ->
    erlang:nif_error(nif_not_loaded).
%% @private A trigger decided outside the tracer (a system monitor report,
%% a sampled queue): started | extended | skipped | false (not a trigger).
-spec flight_offer_nif(session() | [], atom(), non_neg_integer(), term(), term()) -> atom().
flight_offer_nif(_Session, _Kind, _Value, _Who, _Where) -> erlang:nif_error(nif_not_loaded).
trigger_nif(_Label) -> erlang:nif_error(nif_not_loaded).
%% @private The capture figures of a session.
-spec flight_info_nif(session() | []) -> map() | {error, not_running}.
flight_info_nif(_Session) -> erlang:nif_error(nif_not_loaded).
%% @private A call-latency trigger of a flight session: the resource that
%% holds it, and the tracer state (a small integer) of a meta trace pattern
%% on MFA (beamtrace_flight sets it).
-spec flight_call_trigger_nif(session(), mfa(), pos_integer()) ->
          {ok, reference(), pos_integer()} | {error, term()}.
flight_call_trigger_nif(_Session, _MFA, _BoundNs) -> erlang:nif_error(nif_not_loaded).
%% @private Frees a call trigger's entries of processes dead in a call
%% older than OlderMs; its figures.
-spec flight_call_sweep_nif(reference(), non_neg_integer()) -> map().
flight_call_sweep_nif(_Trigger, _OlderMs) -> erlang:nif_error(nif_not_loaded).

