%% Byte-for-byte comparison of bmt_term_text (c_src/nif/nif_term_text.c) with
%% the VM's own enif_snprintf("%T"), over fixed edge cases and thousands of
%% random terms, at many truncation sizes; one case per kind of term. The
%% test NIF (term_text_test_nif.c with nif_term_text.c, the atom and binary
%% writers it calls, and nif_term_peek.c) is built by
%% init_per_suite with the C compiler ($CC, else cc). The random terms come
%% from a seed printed in the log and in any failure; BMT_TERM_TEXT_SEED=N
%% replays it. end_per_suite logs the speed of both printers on sample
%% messages (information, not a check).
-module(bmt_term_text_SUITE).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2,
         end_per_testcase/2]).
-export([fixed_edge_cases/1, random_atoms/1, random_integers/1, random_binaries/1,
         random_strings/1, random_maps/1, random_nested_terms/1, deep_nesting/1]).
-export([compare/2, theirs/2, bench/2, bench/3]).

%% Improper lists are among the terms printed, on purpose (dialyzer).
-dialyzer({no_improper_lists, [fixed_terms/1, flat_tuple_boundaries/1]}).

-define(SIZES, [1, 2, 3, 4, 7, 16, 64, 256, 1024, 4096, 65536, 65537]).

%% ok | {mismatch, {Which, Ours}, Theirs}
compare(_Term, _Size) -> erlang:nif_error(not_loaded).
%% The oracle's text, truncated to Size-1 bytes.
theirs(_Term, _Size) -> erlang:nif_error(not_loaded).
%% {OurNsPerCall, SnprintfNsPerCall} with a Size-byte buffer.
bench(_Term, _N, _Size) -> erlang:nif_error(not_loaded).
bench(Term, N) -> bench(Term, N, 1024).

%%% Common Test

suite() -> [{timetrap, {seconds, 300}}].

all() ->
    [fixed_edge_cases, random_atoms, random_integers, random_binaries, random_strings,
     random_maps, random_nested_terms, deep_nesting].

init_per_suite(Config) ->
    Priv = proplists:get_value(priv_dir, Config),
    Root = bmt_test_lib:root(),
    Inc = filename:join([code:root_dir(), "erts-" ++ erlang:system_info(version), "include"]),
    So = filename:join(Priv, "term_text_test_nif.so"),
    Cc = os:getenv("CC", "cc"),
    Args = ["-std=gnu11", "-O2", "-g", "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes",
            "-Wmissing-prototypes", "-Werror", "-fPIC", "-shared", "-I" ++ Inc,
            "-I" ++ filename:join(Root, "c_src"), "-o", So,
            filename:join(Root, "test/erl/term_text_test_nif.c"),
            filename:join(Root, "c_src/nif/nif_term_text.c"),
            filename:join(Root, "c_src/nif/nif_atom_text.c"),
            filename:join(Root, "c_src/nif/nif_binary_text.c"),
            filename:join(Root, "c_src/nif/nif_term_peek.c")],
    case bmt_test_lib:cmd(os:find_executable(Cc), Args) of
        {0, _, _} -> ok;
        {Status, Out, Err} -> error({build_test_nif_failed, Cc, Status, Out, Err})
    end,
    ok = erlang:load_nif(filename:rootname(So), 0),
    Seed = case os:getenv("BMT_TERM_TEXT_SEED") of
               false -> erlang:phash2(os:timestamp());
               S -> list_to_integer(S)
           end,
    io:format("seed ~p (replay: BMT_TERM_TEXT_SEED=~p make test-erl T=~s)~n", [Seed, Seed, ?MODULE]),
    [{seed, Seed} | Config].

end_per_suite(_Config) ->
    speed().

%% Each case from its own seed derived from the suite's, so one case alone
%% replays the same terms.
init_per_testcase(Case, Config) ->
    Seed = proplists:get_value(seed, Config),
    rand:seed(exsss, {Seed, Seed bxor 16#5bd1e995, erlang:phash2(Case)}),
    Config.

end_per_testcase(_Case, _Config) -> ok.

fixed_edge_cases(Config) -> with_port(fun(Port) -> check(Config, fixed_terms(Port)) end).
random_atoms(Config) -> check(Config, [gen_atom() || _ <- lists:seq(1, 1500)]).
random_integers(Config) -> check(Config, [gen_int() || _ <- lists:seq(1, 1000)]).
random_binaries(Config) -> check(Config, [gen_bin() || _ <- lists:seq(1, 1500)]).
random_strings(Config) -> check(Config, [gen_string() || _ <- lists:seq(1, 1500)]).
random_maps(Config) -> check(Config, [gen_map() || _ <- lists:seq(1, 300)]).
random_nested_terms(Config) ->
    with_port(fun(Port) -> check(Config, [gen_term(4, Port) || _ <- lists:seq(1, 3000)]) end).
deep_nesting(Config) -> check(Config, deep_terms()).

with_port(Fun) ->
    Port = open_port({spawn, "true"}, []),
    try Fun(Port) after catch port_close(Port) end.

%% Every comparison identical, else the first eight that differ and the
%% seed to replay them.
check(Config, Terms) ->
    case run_group(Terms) of
        {Count, []} ->
            io:format("~p terms, ~p comparisons, all identical~n", [length(Terms), Count]);
        {Count, Bad} ->
            error({differ, #{seed => proplists:get_value(seed, Config),
                             differ => length(Bad), comparisons => Count,
                             first => [#{term => T, size => S, ours => Ours, theirs => Theirs}
                                       || {T, S, {mismatch, Ours, Theirs}}
                                              <- lists:sublist(lists:reverse(Bad), 8)]}})
    end.

%% Compares every term at every size in ?SIZES and at sizes around its own
%% text length and a random cut, so each truncation point gets exercised.
run_group(Terms) ->
    lists:foldl(
      fun(T, {C, B}) ->
              Full = byte_size(theirs(T, 1 bsl 20)),
              Sizes = lists:usort(?SIZES ++ [Full, Full + 1, Full + 2,
                                             max(1, Full - 1),
                                             rand:uniform(Full + 2)]),
              lists:foldl(
                fun(S, {C1, B1}) ->
                        case compare(T, S) of
                            ok -> {C1 + 1, B1};
                            M -> {C1 + 1, [{T, S, M} | B1]}
                        end
                end, {C, B}, Sizes)
      end, {0, []}, Terms).

%% ---- fixed cases -------------------------------------------------------

fixed_terms(Port) ->
    Big = lists:seq(1, 40),
    LargeMap = maps:from_list([{K, K * 2} || K <- lists:seq(1, 100)]),
    Shrunk = maps:without(lists:seq(1, 68), LargeMap),       % 32 keys left
    Shrunk33 = maps:without(lists:seq(1, 67), LargeMap),     % 33 keys left
    Bin = list_to_binary(lists:seq(0, 255)),
    <<_:3, Unaligned:20/binary, _/bitstring>> = <<0:3, Bin/binary, 0:5>>,
    <<_:5, UnalignedPrintable:10/binary, _/bitstring>> =
        <<0:5, "hello\"quot", 0:3>>,
    <<_:3, UnalignedBits:13/bitstring, _/bitstring>> = <<0:3, Bin/binary>>,
    [[], {}, <<>>, #{}, "", '', a, 'A', '_', aB9_@, 'a@b', 'a b', 'a\'b',
     'a\\b', 'a\nb', 'a\tb\rc\fd\be\vf', 'a\0b', 'a\1b', 'a\37b', 'a\177b',
     list_to_atom([97, 128, 159, 160]), list_to_atom([223, 255, 247, 215]),
     list_to_atom([233, 192]), list_to_atom([192]), list_to_atom([247]),
     list_to_atom([16#3b1, 16#3b2]), list_to_atom([97, 16#3b1]),
     list_to_atom([97, 16#4e2d, 16#6587]), list_to_atom([97, 16#1F600]),
     list_to_atom([97, 16#7FF]), list_to_atom([97, 16#100]),
     list_to_atom(lists:duplicate(255, $z)),
     list_to_atom(lists:duplicate(255, 0)),
     list_to_atom(lists:duplicate(255, 16#1F600)),
     true, false, undefined, nil, ok, 'EXIT', '$gen_call',
     0, 1, -1, 255, 256, 134217727, 134217728, -134217728,
     576460752303423487, 576460752303423488, -576460752303423488,
     -576460752303423489, 9223372036854775807, 9223372036854775808,
     -9223372036854775808, -9223372036854775809, 18446744073709551615,
     18446744073709551616, 1 bsl 200, -(1 bsl 200), 1 bsl 4000,
     0.0, -0.0, 1.0, -1.5, 3.14159, 1.0e300, -1.0e-300, 5.0e-324,
     1.7976931348623157e308, 123456789.0,
     self(), list_to_pid("<0.0.0>"), list_to_pid("<0.32767.8191>"),
     spawn(fun() -> ok end), Port, hd(erlang:ports()),
     remote_pid(), remote_port(), remote_ref(),
     make_ref(), erlang:monitor(process, self()),
     fun() -> ok end, fun lists:map/2, fun erlang:'+'/2, closure(42),
     <<"hello">>, <<"a\"b">>, <<"\\">>, <<"\n">>, <<" ">>, <<"~">>,
     <<127>>, <<31>>, <<1, 2, 3>>, <<0>>, <<255>>, Bin,
     binary:copy(<<"x">>, 1000), binary:copy(<<"\"">>, 300),
     binary:copy(<<200>>, 1000), binary:part(Bin, 65, 26),
     Unaligned, UnalignedPrintable, UnalignedBits,
     <<1:1>>, <<5:3>>, <<1, 2, 3:4>>, <<"abc", 1:2>>, <<0:7>>,
     "a", "hello world", "a\"b", "a\\b", "a\nb", "tab\there", "cr\r",
     [0], [7], [31], [127], [128], [159], [160], [255], [256], [-1],
     [$a | $b], [$a, $b | <<"c">>], [[]], [[], []], [a | b], [1, 2 | 3],
     [$a, 1.0], [$a, a], [$a, self()], [16#3b1], [1 bsl 70],
     lists:seq(32, 126), lists:seq(160, 255), lists:seq(0, 300),
     lists:duplicate(5000, $x), lists:seq(1, 3000),
     {a}, {a, b}, {{}}, {[], <<>>, #{}}, {self(), ping, 42},
     {'$gen_call', {self(), make_ref()}, {get, key}},
     list_to_tuple(Big), list_to_tuple(lists:seq(1, 2000)),
     #{a => 1}, #{1 => a, b => 2, "s" => <<"v">>, {t} => [l]},
     maps:from_list([{K, K} || K <- lists:seq(1, 32)]),
     maps:from_list([{K, K} || K <- lists:seq(1, 33)]),
     LargeMap, Shrunk, Shrunk33, maps:remove(100, LargeMap),
     #{#{a => 1} => #{b => 2}}, #{1.0 => 1, 1 => 2},
     [LargeMap], {Shrunk}]
    ++ one_bad_byte_binaries() ++ flat_tuple_boundaries(Port) ++ digit_boundaries().

%% Every decimal length's edges with every leading digit (M * 10^K - 1,
%% M * 10^K, M * 10^K + 1 and 123.. of each length, both signs), alone and
%% in a message tuple: the digit paths of small integers (up to eight
%% digits, then the long path) and of bignums.
digit_boundaries() ->
    Ints = lists:usort([S * (M * pow10(K) + D) || K <- lists:seq(0, 20), M <- lists:seq(1, 9),
                                                  D <- [-1, 0, 1], S <- [1, -1]]
                       ++ [S * list_to_integer(lists:sublist("12345678909876543210", N))
                           || N <- lists:seq(1, 20), S <- [1, -1]]),
    Ints ++ [{self(), ping, I} || I <- Ints].

pow10(0) -> 1;
pow10(K) -> 10 * pow10(K - 1).

%% The shallow renderer for a tuple of immediates (nif_term_text.c,
%% put_flat_tuple) and where it hands over to the general printer: 8 and 9
%% elements, every immediate kind (atoms quoted or not, small integers at
%% their bounds, local pids and ports) and one non-immediate in each
%% position (bignum, float, binary, map, list, improper list, nested tuple,
%% remote pid, ref, fun). Each also runs at every truncation size.
flat_tuple_boundaries(Port) ->
    Imm = [ok, 'Quoted atom', '', 0, -1, 42, (1 bsl 59) - 1, -(1 bsl 59), self(), Port],
    Other = [1 bsl 60, -(1 bsl 60), 1.5, <<"b">>, <<>>, #{k => v}, [1], "s", [a | b], {x},
             {}, remote_pid(), make_ref(), fun() -> ok end],
    [list_to_tuple(lists:sublist(Imm, N)) || N <- lists:seq(1, 10)]
    ++ [list_to_tuple(lists:duplicate(N, ping)) || N <- [7, 8, 9]]
    ++ [list_to_tuple(lists:sublist(Imm, 3) ++ [X]) || X <- Other]
    ++ [list_to_tuple([X | lists:sublist(Imm, 3)]) || X <- Other]
    ++ [{self(), ping, 42}, {self(), {ping, 42}}, {Port, {command, <<"x">>}}].

%% Printable 40-byte binaries with one boundary byte at every position, so
%% the word-at-a-time printable check is tested at every lane and tail.
one_bad_byte_binaries() ->
    Base = binary:copy(<<"abcdefgh">>, 5),
    [<<(binary:part(Base, 0, P))/binary, V,
       (binary:part(Base, P + 1, 40 - P - 1))/binary>>
     || P <- lists:seq(0, 39), V <- [0, 31, 32, 34, 126, 127, 128, 160, 255]].

closure(X) -> fun(Y) -> X + Y end.

%% Remote identifiers via the external term format: NEW_PID_EXT (88),
%% V4_PORT_EXT (120) and NEWER_REFERENCE_EXT (90) on node 'n@h'.
remote_pid() ->
    binary_to_term(<<131, 88, 119, 3, "n@h", 7:32, 3:32, 1234:32>>).
remote_port() ->
    binary_to_term(<<131, 120, 119, 3, "n@h", 99:64, 1234:32>>).
remote_ref() ->
    binary_to_term(<<131, 90, 3:16, 119, 3, "n@h", 1234:32, 1:32, 2:32, 3:32>>).

deep_terms() ->
    Nest = fun Loop(_F, 0, Acc) -> Acc;
               Loop(F, N, Acc) -> Loop(F, N - 1, F(Acc, N))
           end,
    Tup = Nest(fun(A, _) -> {A} end, 1000, x),
    Lst = Nest(fun(A, _) -> [A] end, 1000, x),
    Mix = Nest(fun(A, N) -> case N rem 3 of
                                0 -> {N, A};
                                1 -> [A, N];
                                _ -> #{N => A}
                            end end, 3000, <<"leaf">>),
    Tail = Nest(fun(A, N) -> [N | A] end, 100000, tail),
    [Tup, Lst, Mix, Tail, {Tup, Lst}, [Mix | Mix]].

%% ---- random generators ------------------------------------------------

pick(L) -> lists:nth(rand:uniform(length(L)), L).

gen_atom() ->
    Len = case rand:uniform(10) of
              1 -> 0;
              2 -> rand:uniform(255);
              _ -> rand:uniform(12)
          end,
    Chars = [gen_atom_char() || _ <- lists:seq(1, Len)],
    Cs = case rand:uniform(3) of
             1 -> [pick(lists:seq($a, $z)) | tl_or_empty(Chars)];
             _ -> Chars
         end,
    list_to_atom(lists:sublist(Cs, 255)).

tl_or_empty([]) -> [];
tl_or_empty([_ | T]) -> T.

gen_atom_char() ->
    case rand:uniform(20) of
        N when N =< 8 -> pick(lists:seq($a, $z));
        9 -> pick(lists:seq($A, $Z));
        10 -> pick(lists:seq($0, $9));
        11 -> pick("_@ .-'\\\"");
        12 -> rand:uniform(32) - 1;
        13 -> pick([127, 128, 140, 159]);
        14 -> 159 + rand:uniform(97);
        15 -> pick([192, 215, 222, 223, 247, 255]);
        16 -> pick([16#3b1, 16#100, 16#7FF, 16#800, 16#4e2d, 16#FFFD,
                    16#1F600, 16#10FFFF]);
        _ -> pick(lists:seq($a, $z) ++ "_")
    end.

gen_int() ->
    case rand:uniform(6) of
        1 -> rand:uniform(256) - 1;
        2 -> rand:uniform(1 bsl 30) - (1 bsl 29);
        3 -> rand:uniform(1 bsl 62) - (1 bsl 61);
        4 -> B = pick([27, 28, 59, 60, 63, 64, 65]),
             (1 bsl B) + rand:uniform(5) - 3;
        5 -> -(1 bsl pick([27, 28, 59, 60, 63, 64, 65])) + rand:uniform(5) - 3;
        6 -> (rand:uniform(1 bsl 300)) * pick([1, -1])
    end.

gen_bytes(N, printable) -> [31 + rand:uniform(95) || _ <- lists:seq(1, N)];
gen_bytes(N, any) -> [rand:uniform(256) - 1 || _ <- lists:seq(1, N)];
gen_bytes(N, mostly) ->
    [case rand:uniform(50) of 1 -> pick([0, 10, 31, 127, 128, 255]);
         _ -> 31 + rand:uniform(95) end || _ <- lists:seq(1, N)].

gen_bin() ->
    N = case rand:uniform(4) of 1 -> 0; 2 -> rand:uniform(2000); _ -> rand:uniform(40) end,
    Bin = list_to_binary(gen_bytes(N, pick([printable, printable, any, mostly]))),
    case rand:uniform(5) of
        1 when N > 2 -> % aligned sub-binary
            S = rand:uniform(N - 1), binary:part(Bin, S, rand:uniform(N - S));
        2 -> % unaligned sub-binary, whole bytes
            Off = rand:uniform(7),
            <<_:Off, B:N/binary, _/bitstring>> = <<0:Off, Bin/binary, 0:8>>, B;
        3 -> % bitstring
            Bits = rand:uniform(7),
            <<Bin/binary, (rand:uniform(256) - 1):Bits>>;
        4 -> % unaligned bitstring
            Off = rand:uniform(7), Bits = rand:uniform(7) + N * 8,
            <<_:Off, B:Bits/bitstring, _/bitstring>> = <<0:Off, Bin/binary, 255:8>>, B;
        _ -> Bin
    end.

gen_string() ->
    N = case rand:uniform(5) of 1 -> rand:uniform(1000); _ -> rand:uniform(30) end,
    case rand:uniform(6) of
        1 -> gen_bytes(N, printable);
        2 -> gen_bytes(N, mostly);
        3 -> [pick([$\n, $\t, $\r, $\s, $", $\\, $a, 160, 233, 255]) || _ <- lists:seq(1, N)];
        4 -> gen_bytes(N, printable) ++ [pick([256, 16#3b1, -1, 1.0, a, <<>>, []])];
        5 -> gen_bytes(N, printable) ++ pick([$x, <<"t">>, a]); % improper
        6 -> [pick([0, 7, 8, 11, 12, 27, 31, 127, 128, 159]) | gen_bytes(N, printable)]
    end.

gen_map() ->
    N = case rand:uniform(4) of 1 -> rand:uniform(100); _ -> rand:uniform(34) - 1 end,
    M = maps:from_list([{gen_term(1, undefined), gen_term(2, undefined)}
                        || _ <- lists:seq(1, N)]),
    case rand:uniform(3) of
        1 -> maps:without(lists:sublist(maps:keys(M), rand:uniform(N + 1) - 1), M);
        _ -> M
    end.

gen_term(0, Port) -> gen_leaf(Port);
gen_term(D, Port) ->
    case rand:uniform(10) of
        1 -> list_to_tuple([gen_term(D - 1, Port) || _ <- lists:seq(1, rand:uniform(5) - 1)]);
        2 -> [gen_term(D - 1, Port) || _ <- lists:seq(1, rand:uniform(5) - 1)];
        3 -> [gen_term(D - 1, Port) | gen_term(D - 1, Port)];
        4 -> maps:from_list([{gen_term(D - 1, Port), gen_term(D - 1, Port)}
                             || _ <- lists:seq(1, rand:uniform(4) - 1)]);
        _ -> gen_leaf(Port)
    end.

gen_leaf(Port) ->
    case rand:uniform(16) of
        1 -> gen_atom();
        2 -> gen_int();
        3 -> gen_bin();
        4 -> gen_string();
        5 -> rand:uniform() * math:pow(10, rand:uniform(600) - 300) * pick([1, -1]);
        6 -> pick([self(), list_to_pid("<0.1.0>"), remote_pid()]);
        7 when Port =/= undefined -> pick([Port, remote_port()]);
        8 -> pick([make_ref(), remote_ref()]);
        9 -> pick([fun() -> ok end, fun lists:map/2, closure(rand:uniform(9))]);
        10 -> pick([[], {}, <<>>, #{}, '', ok]);
        _ -> pick([a, 'B', ok, 1, -7, "str", <<"bin">>])
    end.

%% ---- speed -----------------------------------------------------------

speed() ->
    N = 200000,
    Samples = [{"{self(), ping, 42}", {self(), ping, 42}},
               {"{'$gen_call', {self(), make_ref()}, {get, key}}",
                {'$gen_call', {self(), make_ref()}, {get, key}}},
               {"1 KiB printable binary", binary:copy(<<"abcdefgh">>, 128)},
               {"1 KiB non-printable binary", list_to_binary([X rem 256 || X <- lists:seq(1, 1024)])},
               {"self()", self()},
               {"atom ok", ok}],
    [begin
         {Ours, Theirs} = bench(T, N, 256),
         {Ours4, Theirs4} = bench(T, N div 10, 8192),
         io:format("speed ~s: ours ~.1f ns, enif_snprintf ~.1f ns (x~.1f) "
                   "[256-byte buffer]; ~.1f vs ~.1f ns (x~.1f) [8 KiB]~n",
                   [Name, Ours, Theirs, Theirs / Ours,
                    Ours4, Theirs4, Theirs4 / Ours4])
     end || {Name, T} <- Samples],
    ok.
