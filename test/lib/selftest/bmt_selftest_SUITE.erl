%% A fixture for test/lib/run.sh, not a test of beamtrace: one case of each
%% outcome the TAP hook (bmt_tap_cth) must report, and a group its
%% init_per_group skips. test/lib/run.sh checks the exact TAP lines.
-module(bmt_selftest_SUITE).

-export([all/0, groups/0, suite/0, init_per_group/2, end_per_group/2]).
-export([passes/1, fails/1, skips/1, hangs/1, crashes/1, in_group/1]).

suite() -> [{timetrap, {seconds, 2}}].

all() -> [passes, fails, skips, hangs, crashes, {group, skipped_group}].

groups() -> [{skipped_group, [], [in_group]}].

init_per_group(skipped_group, _Config) -> {skip, "the group's reason"}.

end_per_group(_Group, _Config) -> ok.

passes(_Config) -> ok.

fails(_Config) -> {fail, "a failing case"}.

skips(_Config) -> {skip, "the case's reason"}.

hangs(_Config) -> receive never -> ok end.

crashes(_Config) -> exit(self(), kill).

in_group(_Config) -> ok.
