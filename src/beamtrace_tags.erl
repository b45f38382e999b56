%% @doc User tags: beamtrace:put_tag/1, get_tag/0, get_tag_data/0,
%% spread_tag/1 and restore_tag/1 (OTP's dyntrace tag API), which are these
%% (beamtrace documents them). beamtrace_probes reads the tag a probe
%% carries with get_tag_data/0.
%%
%% User tags: a binary per process that travels with its messages while
%% the process is "spreading", as OTP's dt_* BIFs did on VMs built with
%% dynamic tracing. The tag a process set itself (permanent) lives in its
%% process dictionary; spreading rides in the sequential trace token's
%% label, the slot OTP used, so the VM carries it through every message
%% and a receiver adopts it. (This shares the token with other seq_trace
%% users: setting a label of your own replaces the tag.)
-module(beamtrace_tags).

-export([put_tag/1, get_tag/0, get_tag_data/0, spread_tag/1, restore_tag/1]).

-define(TAG_KEY, '$beamtrace_tag').
-define(PERMANENT, 1).
-define(SPREADING, 2).

%% @doc Sets this process's tag (chardata, stored as UTF-8) and returns the
%% previous one; `undefined' clears it.
-spec put_tag(undefined | unicode:chardata()) -> binary() | undefined.
put_tag(undefined) ->
    Old = get_tag_data(),
    erase(?TAG_KEY),
    clear_token(),
    Old;
put_tag(Data) ->
    Tag = case unicode:characters_to_binary(Data) of
              Bin when is_binary(Bin) -> Bin;
              _ -> erlang:error(badarg, [Data])
          end,
    Old = get_tag_data(),
    Spreading = spreading(),
    put(?TAG_KEY, {?PERMANENT bor Spreading, Tag}),
    Spreading =/= 0 andalso set_token(Tag),
    Old.

%% @doc The tag this process set with put_tag/1, or undefined.
-spec get_tag() -> binary() | undefined.
get_tag() ->
    case get(?TAG_KEY) of
        {Flags, Tag} when Flags band ?PERMANENT =/= 0 -> Tag;
        _ -> undefined
    end.

%% @doc The tag in effect: set here, or received from a spreading sender.
-spec get_tag_data() -> binary() | undefined.
get_tag_data() ->
    case get(?TAG_KEY) of
        {_, Tag} -> Tag;
        undefined -> token_tag()
    end.

%% @doc Starts (true) or stops (false) attaching this process's tag to the
%% messages it sends; returns the previous state for restore_tag/1.
-spec spread_tag(boolean()) -> {non_neg_integer(), binary() | []}.
spread_tag(On) when is_boolean(On) ->
    State = tag_state(),
    case State of
        {_, []} ->
            ok;
        {Flags, Tag} when On ->
            put(?TAG_KEY, {Flags bor ?SPREADING, Tag}),
            set_token(Tag);
        {Flags, Tag} ->
            put(?TAG_KEY, {Flags band bnot ?SPREADING, Tag}),
            clear_token()
    end,
    State;
spread_tag(Other) ->
    erlang:error(badarg, [Other]).

%% @doc Restores a state spread_tag/1 returned (in this or another process).
-spec restore_tag({non_neg_integer(), binary() | []}) -> true.
restore_tag({_Flags, []}) ->
    erase(?TAG_KEY),
    clear_token(),
    true;
restore_tag({Flags, Tag} = State) when is_integer(Flags), Flags >= 0, is_binary(Tag) ->
    Kept = Flags band (?PERMANENT bor ?SPREADING),
    put(?TAG_KEY, {Kept, Tag}),
    case Kept band ?SPREADING of
        0 -> clear_token();
        _ -> set_token(Tag)
    end,
    State =/= undefined;
restore_tag(Other) ->
    erlang:error(badarg, [Other]).

tag_state() ->
    case get(?TAG_KEY) of
        {Flags, Tag} -> {Flags, Tag};
        undefined ->
            case token_tag() of
                undefined -> {0, []};
                Tag -> {?SPREADING, Tag}
            end
    end.

spreading() ->
    case tag_state() of
        {Flags, _} -> Flags band ?SPREADING
    end.

token_tag() ->
    case seq_trace:get_token(label) of
        {label, {?TAG_KEY, Tag}} -> Tag;
        _ -> undefined
    end.

set_token(Tag) ->
    seq_trace:set_token(label, {?TAG_KEY, Tag}).

clear_token() ->
    case seq_trace:get_token(label) of
        {label, {?TAG_KEY, _}} -> seq_trace:set_token([]);
        _ -> ok
    end.
