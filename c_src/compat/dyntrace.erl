%% @doc OTP's `dyntrace' module, backed by beamtrace, for a stock VM.
%%
%% Not on the code path by default (it lives in beamtrace's priv/compat, so
%% it never shadows OTP's runtime_tools module by accident):
%% `beamtrace:install_dyntrace()' loads it into a running node, and
%% `beamtrace:uninstall_dyntrace()' restores OTP's. Existing code calling
%% dyntrace:p/N and `{tracer, dyntrace, []}' users then work unchanged: the
%% tracer callbacks are beamtrace's (through priv/dyntrace_nif.so) and feed
%% the same sinks as `{tracer, beamtrace, []}'.
-module(dyntrace).

-export([available/0, user_trace_s1/1, user_trace_i4s4/9,
         p/0, p/1, p/2, p/3, p/4, p/5, p/6, p/7, p/8,
         pn/1, pn/2, pn/3, pn/4, pn/5, pn/6, pn/7, pn/8, pn/9,
         put_tag/1, get_tag/0, get_tag_data/0, spread_tag/1, restore_tag/1]).


-on_load(load_nif/0).

%% The erl_tracer callbacks: exported, declared NIFs, and their stubs.
-include("beamtrace_tracer.hrl").

load_nif() ->
    Beamtrace = code:which(beamtrace),
    Priv = filename:join(filename:dirname(filename:dirname(Beamtrace)), "priv"),
    erlang:load_nif(filename:join(Priv, "dyntrace_nif"),
                    {filename:join(Priv, "beamtrace_nif.so"), beamtrace:'$shared_state'()}).

available() -> beamtrace:available().
user_trace_s1(Message) -> beamtrace:user_trace_s1(Message).
user_trace_i4s4(Tag, I1, I2, I3, I4, S1, S2, S3, S4) ->
    beamtrace:user_trace_i4s4(Tag, I1, I2, I3, I4, S1, S2, S3, S4).
p() -> beamtrace:p().
p(A) -> beamtrace:p(A).
p(A, B) -> beamtrace:p(A, B).
p(A, B, C) -> beamtrace:p(A, B, C).
p(A, B, C, D) -> beamtrace:p(A, B, C, D).
p(A, B, C, D, E) -> beamtrace:p(A, B, C, D, E).
p(A, B, C, D, E, F) -> beamtrace:p(A, B, C, D, E, F).
p(A, B, C, D, E, F, G) -> beamtrace:p(A, B, C, D, E, F, G).
p(A, B, C, D, E, F, G, H) -> beamtrace:p(A, B, C, D, E, F, G, H).
pn(L) -> beamtrace:pn(L).
pn(L, A) -> beamtrace:pn(L, A).
pn(L, A, B) -> beamtrace:pn(L, A, B).
pn(L, A, B, C) -> beamtrace:pn(L, A, B, C).
pn(L, A, B, C, D) -> beamtrace:pn(L, A, B, C, D).
pn(L, A, B, C, D, E) -> beamtrace:pn(L, A, B, C, D, E).
pn(L, A, B, C, D, E, F) -> beamtrace:pn(L, A, B, C, D, E, F).
pn(L, A, B, C, D, E, F, G) -> beamtrace:pn(L, A, B, C, D, E, F, G).
pn(L, A, B, C, D, E, F, G, H) -> beamtrace:pn(L, A, B, C, D, E, F, G, H).
put_tag(Data) -> beamtrace:put_tag(Data).
get_tag() -> beamtrace:get_tag().
get_tag_data() -> beamtrace:get_tag_data().
spread_tag(On) -> beamtrace:spread_tag(On).
restore_tag(State) -> beamtrace:restore_tag(State).

