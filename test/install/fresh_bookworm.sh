#!/usr/bin/env bash
# The README's two install lines in a fresh Debian bookworm, as a user (or
# CI's container) runs them: what each installs (packages, disk), and that
# what it promises works there.
#
#   1. a fresh chroot: debootstrap --variant=minbase (what a debian:bookworm
#      container holds), copied from a pristine one kept beside it;
#   2. the README's build line; packages and MB added; then `make`,
#      `make demo`, `make install` and examples/riak_p99.sh (a recording
#      from outside, with the installed command) must work with it alone;
#   3. the README's test line on top; packages and MB added; then
#      `make test`'s groups named by FRESH_GROUPS (default: build docs
#      install deps cli analyses e2e) must pass.
#
# Not part of `make test`: it needs root, debootstrap and the Debian mirror,
# and takes 10 to 30 minutes. Run it when the install lines change:
#
#   bash test/install/fresh_bookworm.sh [CHROOT_DIR]
#
# CHROOT_DIR defaults to $BMT_CHROOTS/bookworm-fresh (BMT_CHROOTS defaults
# to _build/chroots); its pristine copy CHROOT_DIR.pristine is made on first
# use and reused. BMT_MIRROR overrides the mirror. Prints TAP lines and the
# figures as "# figures:" comments.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
top=${1:-${BMT_CHROOTS:-$root/_build/chroots}/bookworm-fresh}
mirror=${BMT_MIRROR:-http://deb.debian.org/debian}
groups=${FRESH_GROUPS:-"build docs install deps cli analyses e2e"}
TAP_PREFIX="fresh bookworm: "
. "$root/test/lib/tap.sh"

if [ "$(id -u)" != 0 ]; then
    echo "fresh_bookworm.sh: needs root (debootstrap, chroot, mounts)" >&2
    exit 2
fi
if [ -z "${BMT_FRESH_NS:-}" ]; then
    exec env BMT_FRESH_NS=1 unshare --mount --propagation private bash "$0" "$@"
fi

# ---- the README's lines ----
build_line=$(bash "$root/tools/install_lines.sh" build) || exit 1
test_line=$(bash "$root/tools/install_lines.sh" test) || exit 1

# ---- a fresh chroot ----
pristine=$top.pristine
if [ ! -f "$pristine/.bmt-ready" ]; then
    command -v debootstrap >/dev/null || { echo "fresh_bookworm.sh: apt-get install debootstrap" >&2; exit 2; }
    rm -rf "$pristine"
    echo "# debootstrap --variant=minbase bookworm $pristine"
    debootstrap --variant=minbase bookworm "$pristine" "$mirror" >"$top.debootstrap.log" 2>&1 ||
        { tail -20 "$top.debootstrap.log"; echo "fresh_bookworm.sh: debootstrap failed" >&2; exit 1; }
    # What a debian:bookworm container's sources hold.
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s-security bookworm-security main\n' \
        "$mirror" "$mirror" "$mirror" >"$pristine/etc/apt/sources.list"
    rm -rf "$pristine/var/cache/apt/archives/"*.deb
    touch "$pristine/.bmt-ready"
fi
rm -rf "$top"
cp -a "$pristine" "$top"
# As a container gets them: name servers, and its own host name resolvable.
cp /etc/resolv.conf "$top/etc/resolv.conf"
cp /etc/hosts "$top/etc/hosts"

# Mounts live in this private namespace only; they go with it.
mount -t proc proc "$top/proc"
mount -t sysfs sysfs "$top/sys"
mount -t tmpfs -o mode=755 fresh-dev "$top/dev"
for d in null zero full random urandom tty; do
    touch "$top/dev/$d"
    mount --bind "/dev/$d" "$top/dev/$d"
done
mkdir -p "$top/dev/pts" "$top/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$top/dev/pts"
ln -s pts/ptmx "$top/dev/ptmx"
ln -s /proc/self/fd "$top/dev/fd"
mount -t tmpfs -o mode=1777 fresh-shm "$top/dev/shm"
mount -t tmpfs -o mode=1777 fresh-tmp "$top/tmp"
# Processes left in the chroot (a node a test left running) end with it.
kill_inside() {
    local p r
    for p in /proc/[0-9]*; do
        r=$(readlink "$p/root" 2>/dev/null) || continue
        [ "$r" = "$top" ] && kill -KILL "${p#/proc/}" 2>/dev/null
    done
    return 0
}
trap kill_inside EXIT

in_chroot() {
    chroot "$top" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive bash -c "$1"
}
packages() { in_chroot "dpkg-query -f '\${Status}\n' -W | grep -c 'install ok installed'"; }
used_mb() { du -sxm "$top" | cut -f1; }

# The tree under test, without build outputs.
bash "$root/tools/copy_tree.sh" "$top/beamtrace"
log=$top.logs
rm -rf "$log" && mkdir -p "$log"

# ---- the build line ----
p0=$(packages) m0=$(used_mb)
in_chroot "$build_line && apt-get clean" >"$log/apt-build.log" 2>&1
rc=$?
check "the README's build line installs" '[ "$rc" -eq 0 ]' || show "$log/apt-build.log"
p1=$(packages) m1=$(used_mb)
echo "# figures: build line: $((p1 - p0)) packages, $((m1 - m0)) MB"
in_chroot "cd /beamtrace && make" >"$log/make.log" 2>&1
rc=$?
check "make builds with the build line alone (NIF, LTTng provider, command)" \
    '[ "$rc" -eq 0 ] && [ -f "$top/beamtrace/priv/beamtrace_nif.so" ] && [ -f "$top/beamtrace/priv/beamtrace_lttng.so" ] && ! grep -q SKIP "$log/make.log"' ||
    show "$log/make.log"
in_chroot "cd /beamtrace && make demo" >"$log/demo.log" 2>&1
rc=$?
check "make demo: the registrations of sasl and os_mon" \
    '[ "$rc" -eq 0 ] && grep -q "name = \"os_mon_sup\"" "$log/demo.log"' || show "$log/demo.log"
in_chroot "cd /beamtrace && make install" >"$log/install.log" 2>&1
rc=$?
check "make install into /usr/local, man pages included" \
    '[ "$rc" -eq 0 ] && [ -x "$top/usr/local/bin/beamtrace" ] && [ -f "$top/usr/local/share/man/man1/beamtrace-calls.1" ]' ||
    show "$log/install.log"
in_chroot "cd /tmp && BEAMTRACE=/usr/local/bin/beamtrace bash /beamtrace/examples/riak_p99.sh /tmp/p99" >"$log/p99.log" 2>&1
rc=$?
check "examples/riak_p99.sh: the installed command records a node from outside and answers" \
    '[ "$rc" -eq 0 ] && grep -q "kv_store:merge/1" "$log/p99.log" && grep -q "^clients: " "$log/p99.log"' ||
    show "$log/p99.log"
kill_inside

# ---- the test line ----
in_chroot "$test_line && apt-get clean" >"$log/apt-test.log" 2>&1
rc=$?
check "the README's test line installs" '[ "$rc" -eq 0 ]' || show "$log/apt-test.log"
p2=$(packages) m2=$(used_mb)
echo "# figures: test line: $((p2 - p1)) more packages, $((m2 - m1)) MB"
echo "# figures: both lines: $((p2 - p0)) packages, $((m2 - m0)) MB over the minbase chroot ($m0 MB, $p0 packages)"
# shellcheck disable=SC2016
in_chroot "cd /beamtrace && TEST_GROUPS='$groups' bash test/run_all.sh" >"$log/tests.log" 2>&1
rc=$?
tail -1 "$log/tests.log" | sed 's/^/# groups '"${groups// /,}"': /'
check "make test's groups pass with the test line ($groups)" '[ $rc -eq 0 ]' ||
    grep -E '^not ok|SKIP' "$log/tests.log" | sed 's/^/#   /'
grep -E '# SKIP' "$log/tests.log" | sed 's/^/#   skipped there: /' || true
echo "# logs in $log"
exit $((tap_failures > 0))
