%% The state of one node's recording and the words its steps share:
%% beamtrace_record and the modules of its steps (beamtrace_record_connect,
%% beamtrace_record_session, beamtrace_record_cleanup) include it.

%% Where a worker's output goes (a pid) instead of stdout.
-define(SINK, beamtrace_record_sink).

-define(CHUNK_BYTES, (1 bsl 20)).
-define(PROGRESS_MS, 500).
%% Streaming to lttng-relayd (beamtrace:start/1's options), and the
%% controller's clock for a streamed trace.
-include("beamtrace_relayd.hrl").
-define(STREAM_OPTS, [clock | ?RELAYD_OPTS]).
-define(STATE, beamtrace_record_state).

-define(EXIT_OK, 0).
-define(EXIT_FAIL, 1).
-define(EXIT_USAGE, 2).
-define(EXIT_INTERRUPTED, 130).

-record(r, {opts :: map(),
            node :: node(),
            ref :: reference(),
            lock :: pid() | undefined,
            agent :: pid() | undefined,
            agent_mon :: reference() | undefined,
            shipped = [] :: [module()],
            dir :: string() | undefined,       %% private directory on the target
            nif_dir :: string() | undefined,   %% the NIF library's, on the target
            trace_dir :: binary() | undefined, %% on the target
            backend :: atom(),
            calls = [] :: list()}).
