%% @doc The C library of this node and the ELF files `beamtrace record'
%% checks: which libc the VM runs on (from /proc/self/maps), and an ELF
%% file's class, machine and symbol versions (defined and needed), read
%% with binary matching. Pure Erlang, shipped to the target with
%% beamtrace_remote (its agent answers `libc' with it) before anything
%% else; beamtrace_compat compares the two sides.
-module(beamtrace_elf).

-export([libc/0, elf/1, elf_file/1, machine_name/1]).

%% @doc What the C library this VM runs on is: `#{libc => glibc | musl |
%% unknown, path => File, elf => elf/1's map}', from /proc/self/maps.
-spec libc() -> map().
libc() ->
    case file:read_file("/proc/self/maps") of
        {ok, Maps} ->
            Paths = lists:usort([P || L <- binary:split(Maps, <<"\n">>, [global]),
                                      P <- [map_path(L)], P =/= <<>>]),
            case [P || P <- Paths, is_musl(P)] of
                [P | _] -> #{libc => musl, path => P};
                [] ->
                    case [P || P <- Paths, is_glibc(P)] of
                        [P | _] -> #{libc => glibc, path => P, elf => elf_file(P)};
                        [] -> #{libc => unknown}
                    end
            end;
        {error, Why} ->
            #{libc => unknown, why => Why}
    end.

map_path(Line) ->
    case binary:split(Line, <<"/">>) of
        [_, Rest] -> <<"/", Rest/binary>>;
        _ -> <<>>
    end.

is_musl(P) ->
    binary:match(filename:basename(P), [<<"ld-musl">>, <<"libc.musl">>]) =/= nomatch.

is_glibc(P) ->
    B = filename:basename(P),
    B =:= <<"libc.so.6">> orelse binary:match(B, <<"libc-2.">>) =/= nomatch.

%% @doc elf/1 of a file: reads its header, section headers, version
%% sections and their string tables only.
-spec elf_file(file:name_all()) -> map() | {error, term()}.
elf_file(Path) ->
    case file:open(Path, [read, raw, binary]) of
        {ok, F} ->
            try elf(fun(Off, Len) ->
                            case file:pread(F, Off, Len) of
                                {ok, B} when byte_size(B) =:= Len -> B;
                                _ -> throw(truncated)
                            end
                    end)
            catch throw:Why -> {error, Why};
                  error:Why -> {error, {bad_elf, Why}}
            after file:close(F)
            end;
        {error, Why} ->
            {error, {Why, Path}}
    end.

%% @doc An ELF file's class, byte order, machine, the symbol versions it
%% defines (`verdef', e.g. a libc's "GLIBC_2.36") and needs (`verneed':
%% [{Library, [Version]}]). Read is fun(Offset, Length) -> binary().
-spec elf(fun((non_neg_integer(), pos_integer()) -> binary())) -> map().
elf(Read) ->
    case Read(0, 52) of
        <<16#7f, "ELF", Class, Data, _/binary>> = H when (Class =:= 1 orelse Class =:= 2),
                                                        (Data =:= 1 orelse Data =:= 2) ->
            E = case Data of 1 -> little; 2 -> big end,
            Hdr = case Class of
                      2 -> Read(0, 64);
                      1 -> H
                  end,
            {Machine, ShOff, ShEntSize, ShNum} = header(Class, E, Hdr),
            Sections = [section(Class, E, Read(ShOff + I * ShEntSize, ShEntSize))
                        || I <- lists:seq(0, ShNum - 1)],
            Str = fun(Link) ->
                          {_, Off, Size, _, _} = lists:nth(Link + 1, Sections),
                          Read(Off, Size)
                  end,
            #{class => Class * 32, endian => E, machine => Machine,
              verdef => lists:append([verdef(E, Read(Off, Size), Str(Link), Info)
                                      || {16#6ffffffd, Off, Size, Link, Info} <- Sections]),
              verneed => lists:append([verneed(E, Read(Off, Size), Str(Link), Info)
                                       || {16#6ffffffe, Off, Size, Link, Info} <- Sections])};
        _ ->
            throw(not_elf)
    end.

header(2, E, <<_:16/binary, _Type:2/binary, Rest/binary>>) ->
    <<Machine:16, _Version:32, _Entry:64, _PhOff:64, ShOff:64, _Flags:32, _EhSize:16,
      _PhEntSize:16, _PhNum:16, ShEntSize:16, ShNum:16, _/binary>> = swap(E, Rest, 2),
    {Machine, ShOff, ShEntSize, ShNum};
header(1, E, <<_:16/binary, _Type:2/binary, Rest/binary>>) ->
    <<Machine:16, _Version:32, _Entry:32, _PhOff:32, ShOff:32, _Flags:32, _EhSize:16,
      _PhEntSize:16, _PhNum:16, ShEntSize:16, ShNum:16, _/binary>> = swap(E, Rest, 1),
    {Machine, ShOff, ShEntSize, ShNum}.

%% {Type, Offset, Size, Link, Info}
section(2, little, <<_Name:32/little, Type:32/little, _Flags:64/little, _Addr:64/little,
                     Off:64/little, Size:64/little, Link:32/little, Info:32/little, _/binary>>) ->
    {Type, Off, Size, Link, Info};
section(2, big, <<_Name:32, Type:32, _Flags:64, _Addr:64, Off:64, Size:64, Link:32, Info:32,
                  _/binary>>) ->
    {Type, Off, Size, Link, Info};
section(1, little, <<_Name:32/little, Type:32/little, _Flags:32/little, _Addr:32/little,
                     Off:32/little, Size:32/little, Link:32/little, Info:32/little, _/binary>>) ->
    {Type, Off, Size, Link, Info};
section(1, big, <<_Name:32, Type:32, _Flags:32, _Addr:32, Off:32, Size:32, Link:32, Info:32,
                  _/binary>>) ->
    {Type, Off, Size, Link, Info}.

%% The header fields after e_type, as big-endian, whatever the file's
%% order: each field is reversed for a little-endian file.
swap(big, Bin, _Class) ->
    Bin;
swap(little, Bin, Class) ->
    Sizes = case Class of
                2 -> [2, 4, 8, 8, 8, 4, 2, 2, 2, 2, 2, 2];
                1 -> [2, 4, 4, 4, 4, 4, 2, 2, 2, 2, 2, 2]
            end,
    swap_fields(Sizes, Bin, []).

swap_fields([], _Rest, Acc) ->
    iolist_to_binary(lists:reverse(Acc));
swap_fields([N | Ns], Bin, Acc) ->
    <<F:N/binary, Rest/binary>> = Bin,
    swap_fields(Ns, Rest, [list_to_binary(lists:reverse(binary_to_list(F))) | Acc]).

u16(little, <<V:16/little>>) -> V;
u16(big, <<V:16>>) -> V.
u32(little, <<V:32/little>>) -> V;
u32(big, <<V:32>>) -> V.

cstr(Str, Off) ->
    <<_:Off/binary, Rest/binary>> = Str,
    [S | _] = binary:split(Rest, <<0>>),
    S.

%% Verdef entries: vd_version, vd_flags, vd_ndx, vd_cnt (16 bits), vd_hash,
%% vd_aux, vd_next (32); the first Verdaux (vda_name, vda_next) names it.
verdef(_E, _Sec, _Str, 0) ->
    [];
verdef(E, Sec, Str, Count) ->
    verdef_at(E, Sec, Str, 0, Count).

verdef_at(_E, _Sec, _Str, _Off, 0) ->
    [];
verdef_at(E, Sec, Str, Off, N) ->
    <<_:Off/binary, _Ver:2/binary, Flags:2/binary, _Ndx:2/binary, _Cnt:2/binary,
      _Hash:4/binary, Aux:4/binary, Next:4/binary, _/binary>> = Sec,
    AuxOff = Off + u32(E, Aux),
    <<_:AuxOff/binary, Name:4/binary, _/binary>> = Sec,
    %% VER_FLG_BASE (1): the file's own name, not a version.
    Here = case u16(E, Flags) band 1 of
               1 -> [];
               0 -> [cstr(Str, u32(E, Name))]
           end,
    case u32(E, Next) of
        0 -> Here;
        D -> Here ++ verdef_at(E, Sec, Str, Off + D, N - 1)
    end.

%% Verneed entries: vn_version, vn_cnt (16), vn_file, vn_aux, vn_next (32);
%% Vernaux: vna_hash (32), vna_flags, vna_other (16), vna_name, vna_next (32).
verneed(_E, _Sec, _Str, 0) ->
    [];
verneed(E, Sec, Str, Count) ->
    verneed_at(E, Sec, Str, 0, Count).

verneed_at(_E, _Sec, _Str, _Off, 0) ->
    [];
verneed_at(E, Sec, Str, Off, N) ->
    <<_:Off/binary, _Ver:2/binary, Cnt:2/binary, File:4/binary, Aux:4/binary, Next:4/binary,
      _/binary>> = Sec,
    Names = vernaux(E, Sec, Str, Off + u32(E, Aux), u16(E, Cnt)),
    Here = {cstr(Str, u32(E, File)), Names},
    case u32(E, Next) of
        0 -> [Here];
        D -> [Here | verneed_at(E, Sec, Str, Off + D, N - 1)]
    end.

vernaux(_E, _Sec, _Str, _Off, 0) ->
    [];
vernaux(E, Sec, Str, Off, N) ->
    <<_:Off/binary, _Hash:4/binary, _Flags:2/binary, _Other:2/binary, Name:4/binary,
      Next:4/binary, _/binary>> = Sec,
    Here = cstr(Str, u32(E, Name)),
    case u32(E, Next) of
        0 -> [Here];
        D -> [Here | vernaux(E, Sec, Str, Off + D, N - 1)]
    end.

%% @doc A readable name for an ELF e_machine value.
-spec machine_name(non_neg_integer()) -> string().
machine_name(3) -> "x86 (i386)";
machine_name(62) -> "x86_64";
machine_name(40) -> "arm";
machine_name(183) -> "aarch64";
machine_name(243) -> "riscv";
machine_name(21) -> "ppc64";
machine_name(22) -> "s390x";
machine_name(N) -> "ELF machine " ++ integer_to_list(N).
