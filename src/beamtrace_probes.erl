%% @doc User probes: OTP's dyntrace:p/pn and user_trace_s1/i4s4, which
%% beamtrace:p/N, pn/N, user_trace_s1/1 and user_trace_i4s4/9 are
%% (beamtrace documents them). Integers come first, then strings (iodata of
%% at most 1024 bytes), at most 4 of each. A probe returns true when some
%% sink listened, false when none did (nothing is evaluated then), and
%% raises badarg for a string that is too long or not iodata. The NIFs are
%% beamtrace's (its library is loaded for that module); a probe carries the
%% caller's tag (beamtrace_tags).
-module(beamtrace_probes).

-export([user_trace_s1/1, user_trace_i4s4/9,
         p/0, p/1, p/2, p/3, p/4, p/5, p/6, p/7, p/8,
         pn/1, pn/2, pn/3, pn/4, pn/5, pn/6, pn/7, pn/8, pn/9]).

-import(beamtrace, [user_probe_wanted/2, user_trace_s1_nif/2, user_trace_i4s4_nif/9,
                    user_trace_n_nif/10]).
-import(beamtrace_tags, [get_tag_data/0]).

%% @doc beamtrace:user_trace_s1/1.
-spec user_trace_s1(iodata()) -> boolean().
user_trace_s1(Message) ->
    user_probe_wanted(s1, 0) andalso user_trace_s1_nif(tag_for_probe(), Message).

%% @doc beamtrace:user_trace_i4s4/9.
user_trace_i4s4(Tag, I1, I2, I3, I4, S1, S2, S3, S4) ->
    user_probe_wanted(i4s4, 0) andalso
        user_trace_i4s4_nif(Tag, I1, I2, I3, I4, S1, S2, S3, S4).

%% OTP's dispatch, clause by clause: up to 4 integers, then up to 4 strings;
%% any other shape is a function_clause (p("Hello", 1) is not a probe).
%% Guards in the heads cost next to nothing, so a probe nobody listens to
%% costs the guards and one cheap NIF call.
-define(I(X), is_integer(X)).
-define(S(X), not is_integer(X)).
-spec p() -> boolean().

p() ->
    i4s4([], [], [], [], [], [], [], []).

p(I1) when ?I(I1) ->
    i4s4(I1, [], [], [], [], [], [], []);
p(S1) when ?S(S1) ->
    i4s4([], [], [], [], S1, [], [], []).

p(I1, I2) when ?I(I1), ?I(I2) ->
    i4s4(I1, I2, [], [], [], [], [], []);
p(I1, S1) when ?I(I1), ?S(S1) ->
    i4s4(I1, [], [], [], S1, [], [], []);
p(S1, S2) when ?S(S1), ?S(S2) ->
    i4s4([], [], [], [], S1, S2, [], []).

p(I1, I2, I3) when ?I(I1), ?I(I2), ?I(I3) ->
    i4s4(I1, I2, I3, [], [], [], [], []);
p(I1, I2, S1) when ?I(I1), ?I(I2), ?S(S1) ->
    i4s4(I1, I2, [], [], S1, [], [], []);
p(I1, S1, S2) when ?I(I1), ?S(S1), ?S(S2) ->
    i4s4(I1, [], [], [], S1, S2, [], []);
p(S1, S2, S3) when ?S(S1), ?S(S2), ?S(S3) ->
    i4s4([], [], [], [], S1, S2, S3, []).

p(I1, I2, I3, I4) when ?I(I1), ?I(I2), ?I(I3), ?I(I4) ->
    i4s4(I1, I2, I3, I4, [], [], [], []);
p(I1, I2, I3, S1) when ?I(I1), ?I(I2), ?I(I3), ?S(S1) ->
    i4s4(I1, I2, I3, [], S1, [], [], []);
p(I1, I2, S1, S2) when ?I(I1), ?I(I2), ?S(S1), ?S(S2) ->
    i4s4(I1, I2, [], [], S1, S2, [], []);
p(I1, S1, S2, S3) when ?I(I1), ?S(S1), ?S(S2), ?S(S3) ->
    i4s4(I1, [], [], [], S1, S2, S3, []);
p(S1, S2, S3, S4) when ?S(S1), ?S(S2), ?S(S3), ?S(S4) ->
    i4s4([], [], [], [], S1, S2, S3, S4).

p(I1, I2, I3, I4, S1) when ?I(I1), ?I(I2), ?I(I3), ?I(I4), ?S(S1) ->
    i4s4(I1, I2, I3, I4, S1, [], [], []);
p(I1, I2, I3, S1, S2) when ?I(I1), ?I(I2), ?I(I3), ?S(S1), ?S(S2) ->
    i4s4(I1, I2, I3, [], S1, S2, [], []);
p(I1, I2, S1, S2, S3) when ?I(I1), ?I(I2), ?S(S1), ?S(S2), ?S(S3) ->
    i4s4(I1, I2, [], [], S1, S2, S3, []);
p(I1, S1, S2, S3, S4) when ?I(I1), ?S(S1), ?S(S2), ?S(S3), ?S(S4) ->
    i4s4(I1, [], [], [], S1, S2, S3, S4).

p(I1, I2, I3, I4, S1, S2) when ?I(I1), ?I(I2), ?I(I3), ?I(I4), ?S(S1), ?S(S2) ->
    i4s4(I1, I2, I3, I4, S1, S2, [], []);
p(I1, I2, I3, S1, S2, S3) when ?I(I1), ?I(I2), ?I(I3), ?S(S1), ?S(S2), ?S(S3) ->
    i4s4(I1, I2, I3, [], S1, S2, S3, []);
p(I1, I2, S1, S2, S3, S4) when ?I(I1), ?I(I2), ?S(S1), ?S(S2), ?S(S3), ?S(S4) ->
    i4s4(I1, I2, [], [], S1, S2, S3, S4).

p(I1, I2, I3, I4, S1, S2, S3) when ?I(I1), ?I(I2), ?I(I3), ?I(I4), ?S(S1), ?S(S2), ?S(S3) ->
    i4s4(I1, I2, I3, I4, S1, S2, S3, []);
p(I1, I2, I3, S1, S2, S3, S4) when ?I(I1), ?I(I2), ?I(I3), ?S(S1), ?S(S2), ?S(S3), ?S(S4) ->
    i4s4(I1, I2, I3, [], S1, S2, S3, S4).

p(I1, I2, I3, I4, S1, S2, S3, S4)
  when ?I(I1), ?I(I2), ?I(I3), ?I(I4), ?S(S1), ?S(S2), ?S(S3), ?S(S4) ->
    i4s4(I1, I2, I3, I4, S1, S2, S3, S4).

%% @doc beamtrace:pn/1 to pn/9.

pn(L) ->
    n(L, [], [], [], [], [], [], [], []).

pn(L, I1) when ?I(I1) ->
    n(L, I1, [], [], [], [], [], [], []);
pn(L, S1) when ?S(S1) ->
    n(L, [], [], [], [], S1, [], [], []).

pn(L, I1, I2) when ?I(I1), ?I(I2) ->
    n(L, I1, I2, [], [], [], [], [], []);
pn(L, I1, S1) when ?I(I1), ?S(S1) ->
    n(L, I1, [], [], [], S1, [], [], []);
pn(L, S1, S2) when ?S(S1), ?S(S2) ->
    n(L, [], [], [], [], S1, S2, [], []).

pn(L, I1, I2, I3) when ?I(I1), ?I(I2), ?I(I3) ->
    n(L, I1, I2, I3, [], [], [], [], []);
pn(L, I1, I2, S1) when ?I(I1), ?I(I2), ?S(S1) ->
    n(L, I1, I2, [], [], S1, [], [], []);
pn(L, I1, S1, S2) when ?I(I1), ?S(S1), ?S(S2) ->
    n(L, I1, [], [], [], S1, S2, [], []);
pn(L, S1, S2, S3) when ?S(S1), ?S(S2), ?S(S3) ->
    n(L, [], [], [], [], S1, S2, S3, []).

pn(L, I1, I2, I3, I4) when ?I(I1), ?I(I2), ?I(I3), ?I(I4) ->
    n(L, I1, I2, I3, I4, [], [], [], []);
pn(L, I1, I2, I3, S1) when ?I(I1), ?I(I2), ?I(I3), ?S(S1) ->
    n(L, I1, I2, I3, [], S1, [], [], []);
pn(L, I1, I2, S1, S2) when ?I(I1), ?I(I2), ?S(S1), ?S(S2) ->
    n(L, I1, I2, [], [], S1, S2, [], []);
pn(L, I1, S1, S2, S3) when ?I(I1), ?S(S1), ?S(S2), ?S(S3) ->
    n(L, I1, [], [], [], S1, S2, S3, []);
pn(L, S1, S2, S3, S4) when ?S(S1), ?S(S2), ?S(S3), ?S(S4) ->
    n(L, [], [], [], [], S1, S2, S3, S4).

pn(L, I1, I2, I3, I4, S1) when ?I(I1), ?I(I2), ?I(I3), ?I(I4), ?S(S1) ->
    n(L, I1, I2, I3, I4, S1, [], [], []);
pn(L, I1, I2, I3, S1, S2) when ?I(I1), ?I(I2), ?I(I3), ?S(S1), ?S(S2) ->
    n(L, I1, I2, I3, [], S1, S2, [], []);
pn(L, I1, I2, S1, S2, S3) when ?I(I1), ?I(I2), ?S(S1), ?S(S2), ?S(S3) ->
    n(L, I1, I2, [], [], S1, S2, S3, []);
pn(L, I1, S1, S2, S3, S4) when ?I(I1), ?S(S1), ?S(S2), ?S(S3), ?S(S4) ->
    n(L, I1, [], [], [], S1, S2, S3, S4).

pn(L, I1, I2, I3, I4, S1, S2) when ?I(I1), ?I(I2), ?I(I3), ?I(I4), ?S(S1), ?S(S2) ->
    n(L, I1, I2, I3, I4, S1, S2, [], []);
pn(L, I1, I2, I3, S1, S2, S3) when ?I(I1), ?I(I2), ?I(I3), ?S(S1), ?S(S2), ?S(S3) ->
    n(L, I1, I2, I3, [], S1, S2, S3, []);
pn(L, I1, I2, S1, S2, S3, S4) when ?I(I1), ?I(I2), ?S(S1), ?S(S2), ?S(S3), ?S(S4) ->
    n(L, I1, I2, [], [], S1, S2, S3, S4).

pn(L, I1, I2, I3, I4, S1, S2, S3) when ?I(I1), ?I(I2), ?I(I3), ?I(I4), ?S(S1), ?S(S2), ?S(S3) ->
    n(L, I1, I2, I3, I4, S1, S2, S3, []);
pn(L, I1, I2, I3, S1, S2, S3, S4) when ?I(I1), ?I(I2), ?I(I3), ?S(S1), ?S(S2), ?S(S3), ?S(S4) ->
    n(L, I1, I2, I3, [], S1, S2, S3, S4).

pn(L, I1, I2, I3, I4, S1, S2, S3, S4)
  when ?I(I1), ?I(I2), ?I(I3), ?I(I4), ?S(S1), ?S(S2), ?S(S3), ?S(S4) ->
    n(L, I1, I2, I3, I4, S1, S2, S3, S4).

i4s4(I1, I2, I3, I4, S1, S2, S3, S4) ->
    user_probe_wanted(i4s4, 0) andalso
        user_trace_i4s4_nif(tag_for_probe(), I1, I2, I3, I4, S1, S2, S3, S4).

n(Label, I1, I2, I3, I4, S1, S2, S3, S4) ->
    user_probe_wanted(n, Label) andalso
        user_trace_n_nif(Label, tag_for_probe(), I1, I2, I3, I4, S1, S2, S3, S4).

%% Absent slots and tags are [] (the NIF compares its word: no call into
%% the VM per slot); an atom in a slot is absent too, as OTP took `undef'.
tag_for_probe() ->
    case get_tag_data() of
        undefined -> [];
        Tag -> Tag
    end.
