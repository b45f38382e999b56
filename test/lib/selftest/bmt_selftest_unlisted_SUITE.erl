%% A fixture for test/lib/run.sh: tests Common Test would not run, one not
%% listed in all/0 and one in the old 0-arity form; the runner must fail
%% on them, not skip them silently.
-module(bmt_selftest_unlisted_SUITE).

-export([all/0, listed_test/1, forgotten_test/1, old_style_test/0]).

all() -> [listed_test].

listed_test(_Config) -> ok.

forgotten_test(_Config) -> ok.

old_style_test() -> ok.
