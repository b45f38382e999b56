%% A fixture for test/lib/run.sh: a suite whose init_per_suite fails.
-module(bmt_selftest_bad_SUITE).

-export([all/0, init_per_suite/1, end_per_suite/1, never_runs/1]).

all() -> [never_runs].

init_per_suite(_Config) -> error(setup_failed).

end_per_suite(_Config) -> ok.

never_runs(_Config) -> ok.
