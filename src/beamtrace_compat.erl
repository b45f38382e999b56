%% @doc Can beamtrace load on a node? The verdicts `beamtrace record' gives
%% before shipping anything, on what the target said (its OTP release, NIF
%% API, system architecture, word size, OS) and on its C library
%% (beamtrace_elf:libc/0, run there), against the ELF of the NIF library
%% to ship (beamtrace_elf:elf_file/1). Pure functions: each answers ok or
%% {error, Text}, Text saying what does not fit and how to get a build that
%% does.
-module(beamtrace_compat).

-export([check_facts/2, check_libc/2, nif_load_text/1]).

%% @doc ok, or {error, Text}: can a NIF library with this ELF (elf/1's map)
%% and beams compiled by this OTP load on a node with these facts?
-spec check_facts(map(), map()) -> ok | {error, iodata()}.
check_facts(#{os := Os} = F, Elf) when Os =/= {unix, linux} ->
    check_facts_os(F, Elf);
check_facts(F, Elf) ->
    Release = to_int(maps:get(otp_release, F)),
    {OurMajor, OurMinor} = nif_api(erlang:system_info(nif_version)),
    {Major, Minor} = nif_api(maps:get(nif_version, F)),
    Arch = maps:get(arch, F),
    Cpu = hd(string:split(Arch, "-")),
    Machine = maps:get(machine, Elf),
    if
        Release < 25 ->
            {error, io_lib:format("it runs OTP ~s; beamtrace needs OTP 25 or later", [maps:get(otp_release, F)])};
        Major =/= OurMajor; Minor < OurMinor ->
            {error, io_lib:format("its NIF API is ~s, the NIF library here was built for ~b.~b "
                                  "(OTP ~s): build beamtrace with that node's OTP",
                                  [maps:get(nif_version, F), OurMajor, OurMinor,
                                   erlang:system_info(otp_release)])};
        true ->
            case cpu_machine(Cpu) of
                M when M =/= unknown, M =/= Machine ->
                    {error, io_lib:format("it runs on ~s (~s); the NIF library here is built for "
                                          "~s: build beamtrace on an ~s host",
                                          [Cpu, Arch, beamtrace_elf:machine_name(Machine), Cpu])};
                _ ->
                    case {to_int(maps:get(wordsize, F)) * 8, maps:get(class, Elf)} of
                        {Same, Same} -> ok;
                        {W, C} -> {error, io_lib:format("it is a ~b-bit VM; the NIF library "
                                                        "here is ~b-bit", [W, C])}
                    end
            end
    end.

check_facts_os(F, _Elf) ->
    {error, io_lib:format("it runs on ~0p; beamtrace's NIF library is built for Linux",
                          [maps:get(os, F)])}.

%% @doc ok, or {error, Text}: do the target's C library (beamtrace_elf:
%% libc/0's map) and the NIF library (elf/1's map) fit?
-spec check_libc(map(), map()) -> ok | {error, iodata()} | {unknown, term()}.
check_libc(#{libc := musl, path := P}, _Elf) ->
    {error, io_lib:format("its VM runs on musl libc (~s: Alpine?); the NIF library here is "
                          "built for glibc: build beamtrace on a musl system", [P])};
check_libc(#{libc := glibc, elf := #{machine := LM, verdef := Defs}}, Elf) ->
    Need = lists:usort(lists:append([Vs || {Lib, Vs} <- maps:get(verneed, Elf),
                                           is_glibc_lib(Lib)])),
    Missing = [V || V <- Need, not lists:member(V, Defs)],
    Ours = maps:get(machine, Elf),
    if
        LM =/= Ours ->
            {error, io_lib:format("its C library is built for ~s; the NIF library here for ~s",
                                  [beamtrace_elf:machine_name(LM),
                                   beamtrace_elf:machine_name(Ours)])};
        Missing =/= [] ->
            Has = newest_glibc(Defs),
            {error, io_lib:format("the NIF library needs ~s of glibc; the node's glibc provides "
                                  "up to ~s: build beamtrace on a system with glibc ~s or older",
                                  [lists:join(", ", Missing), Has,
                                   string:prefix(binary_to_list(Has), "GLIBC_")])};
        true ->
            ok
    end;
check_libc(#{libc := glibc, elf := {error, Why}, path := P}, _Elf) ->
    {error, io_lib:format("cannot read its C library ~s: ~0p", [P, Why])};
check_libc(#{libc := unknown} = L, _Elf) ->
    %% No Linux-like /proc: the load itself will tell.
    {unknown, maps:get(why, L, none)}.

is_glibc_lib(Lib) ->
    lists:member(Lib, [<<"libc.so.6">>, <<"libpthread.so.0">>, <<"libdl.so.2">>,
                       <<"libm.so.6">>, <<"librt.so.1">>]).

newest_glibc(Defs) ->
    Vs = [{[to_int(X) || X <- string:lexemes(string:prefix(binary_to_list(D), "GLIBC_"), ".")], D}
          || D <- Defs, is_list(string:prefix(binary_to_list(D), "GLIBC_2"))],
    case lists:sort(Vs) of
        [] -> <<"none">>;
        Sorted -> element(2, lists:last(Sorted))
    end.

cpu_machine("x86_64") -> 62;
cpu_machine("amd64") -> 62;
cpu_machine("aarch64") -> 183;
cpu_machine("arm64") -> 183;
cpu_machine("i386") -> 3;
cpu_machine("i486") -> 3;
cpu_machine("i586") -> 3;
cpu_machine("i686") -> 3;
cpu_machine("riscv64") -> 243;
cpu_machine("s390x") -> 22;
cpu_machine("powerpc64" ++ _) -> 21;
cpu_machine("arm" ++ _) -> 40;
cpu_machine(_) -> unknown.

nif_api(V) ->
    [Ma, Mi | _] = string:lexemes(V, "."),
    {to_int(Ma), to_int(Mi)}.

to_int(I) when is_integer(I) -> I;
to_int(S) when is_list(S) ->
    case string:to_integer(S) of
        {N, _} when is_integer(N) -> N;
        _ -> 0
    end.

nif_load_text({load_failed, Text}) when is_list(Text) ->
    case string:find(Text, "failed to map segment") of
        nomatch -> Text;
        _ -> Text ++ " (the private directory is on a noexec file system: give --remote-tmp "
                     "DIR on one that allows executables)"
    end;
nif_load_text(Why) ->
    io_lib:format("~0p", [Why]).
