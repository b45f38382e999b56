#!/usr/bin/env bash
# copy_tree.sh DEST: copies the project's sources into DEST (made if
# needed), without build outputs, for builds that must start from scratch
# (the OTP chroots, the clang and dependency tests). In a git checkout:
# tracked and untracked files, not the ignored ones. Elsewhere (a copy made
# by this script, as inside the chroots): every file but the outputs
# .gitignore names; keep the two lists in step.
set -euo pipefail
dest=$1
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dest"
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -co --exclude-standard | tar --null -T - -cf -
else
    tar --exclude=./.git --exclude=./priv --exclude=./ebin --exclude=./_build --exclude=./test/out \
        --exclude=./bench/out --exclude=./beamtrace-traces --exclude='*.o' --exclude='*.d' \
        --exclude='*.beam' --exclude='*.so' --exclude=erl_crash.dump -cf - .
fi | tar -xf - -C "$dest"
