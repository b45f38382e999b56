%% beamtrace:start/1's streaming options (docs/streaming.md), listed once:
%% start/1 accepts them, beamtrace_record passes them to each node's trace.
-define(RELAYD_OPTS, [relayd, live, local, relayd_session, relayd_buffer]).
