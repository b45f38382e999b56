#!/usr/bin/env bash
# One Debian release in a chroot, for the OTP version matrix (test/otp/matrix.sh).
#
#   test/otp/chroot.sh SUITE ensure           make the chroot layers if absent
#   test/otp/chroot.sh SUITE run LAYER CMD... run CMD in LAYER (base | full)
#
# Layers, under _build/chroots/SUITE/ (gitignored, reused when present):
#   base/   debootstrap --variant=minbase with only what the README says a
#           build needs: erlang-base, erlang-dev, gcc, make, libc6-dev. No
#           sys/sdt.h, no lttng-ust, no pkg-config, no python.
#   full/   base plus the test tools (babeltrace2, python3, lttng, bpftrace,
#           systemtap-sdt-dev, ...), as an overlay: upper/ holds only what
#           apt-get added on top of base/, so base stays minimal.
# A layer is complete when its .bmt-ready stamp holds its package list; an
# interrupted or outdated layer is made again from scratch.
#
# Mounts: everything runs inside a private mount namespace (the script
# re-executes itself under `unshare --mount`), so no mount is ever visible
# on the host and all of them vanish with the namespace even if the script
# is killed; an EXIT trap also kills what is left running in the chroot (by
# pid, found by its root directory) and unmounts in reverse order. The
# chroot gets its own /proc, /sys, a /dev tmpfs holding only null, zero,
# full, random, urandom and tty (bound from the host) plus its own devpts
# and /dev/shm, and tmpfs /tmp and /run. The project is bound at
# /beamtrace from BMT_SRC (a copy the caller made).
#
# Needs root, debootstrap and network access to the Debian mirror
# (BMT_MIRROR, default http://deb.debian.org/debian) when a layer is made.
set -euo pipefail
suite=$1 action=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
top=${BMT_CHROOTS:-$root/_build/chroots}/$suite
mirror=${BMT_MIRROR:-http://deb.debian.org/debian}
base_pkgs="erlang-base,erlang-dev,gcc,make,libc6-dev"
# The test groups' tools. erlang-os-mon: the demo; mount, util-linux: the
# lttng and usdt groups' private namespaces; rebar3, elixir, git: the deps
# group (rebar3 brings erlang-common-test, which runs the Erlang groups'
# suites); chromium is left out (the analyses group says so when it skips
# the report's rendering).
full_pkgs="erlang-runtime-tools erlang-eunit erlang-os-mon erlang-tools python3 procps \
mount util-linux pkg-config binutils babeltrace2 systemtap-sdt-dev liblttng-ust-dev lttng-tools bpftrace \
rebar3 elixir git openssl time"
chroot_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

if [ "$(id -u)" != 0 ]; then
    echo "chroot.sh: needs root (debootstrap, chroot, mounts)" >&2
    exit 2
fi
if [ -z "${BMT_CHROOT_NS:-}" ]; then
    exec env BMT_CHROOT_NS=1 unshare --mount --propagation private bash "$0" "$suite" "$action" "$@"
fi

# One run per chroot at a time: the exit trap kills every process whose
# root is this chroot, which must all be this run's. A second run waits.
mkdir -p "$(dirname "$top")"
exec 9>"$top.lock"
if ! flock -n 9; then
    echo "# $suite chroot busy (another test/otp/chroot.sh run): waiting" >&2
    flock 9
fi

mounted=()
mnt() { # mount ARGS... TARGET: remembers TARGET for the exit trap
    mount "$@"
    mounted+=("${!#}")
}
# Processes whose root is DIR were started by us in the chroot (a session
# daemon, a node a test left behind): kill them by pid before unmounting.
kill_inside() {
    local dir=$1 p r
    for p in /proc/[0-9]*; do
        r=$(readlink "$p/root" 2>/dev/null) || continue
        if [ "$r" = "$dir" ]; then
            echo "# killing pid ${p#/proc/} left in the $suite chroot: $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | head -c 80)" >&2
            kill -KILL "${p#/proc/}" 2>/dev/null || true
        fi
    done
}
cleanup() {
    local i
    [ -d "$top/full" ] && kill_inside "$top/full"
    [ -d "$top/base" ] && kill_inside "$top/base"
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
    done
    mounted=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The special filesystems of a chroot at DIR.
mount_system() {
    local dir=$1 d
    mnt -t proc -o nosuid,nodev,noexec proc "$dir/proc"
    mnt -t sysfs -o nosuid,nodev,noexec sysfs "$dir/sys"
    mnt -t tmpfs -o mode=755,nosuid bmt-dev "$dir/dev"
    for d in null zero full random urandom tty; do
        touch "$dir/dev/$d"
        mnt --bind "/dev/$d" "$dir/dev/$d"
    done
    mkdir -p "$dir/dev/pts" "$dir/dev/shm"
    mnt -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$dir/dev/pts"
    ln -s pts/ptmx "$dir/dev/ptmx"
    ln -s /proc/self/fd "$dir/dev/fd"
    mnt -t tmpfs -o mode=1777,nosuid,nodev bmt-shm "$dir/dev/shm"
    mnt -t tmpfs -o mode=1777,nosuid,nodev bmt-tmp "$dir/tmp"
    mnt -t tmpfs -o mode=755,nosuid,nodev bmt-run "$dir/run"
}

in_chroot() { # DIR CMD...
    local dir=$1
    shift
    chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb PATH="$chroot_path" \
        ${BMT_CHROOT_ENV:-} "$@" 9>&-
}

ready() { # DIR PACKAGES: the layer at DIR is complete and has PACKAGES
    [ -f "$1/.bmt-ready" ] && [ "$(cat "$1/.bmt-ready")" = "$2" ]
}

ensure_base() {
    local dir=$top/base t0
    ready "$dir" "$base_pkgs" && return 0
    command -v debootstrap >/dev/null || { echo "chroot.sh: debootstrap not installed (apt-get install debootstrap)" >&2; exit 2; }
    rm -rf "$top"
    mkdir -p "$top"
    t0=$(date +%s)
    echo "# $suite: debootstrap --variant=minbase --include=$base_pkgs" >&2
    if ! debootstrap --variant=minbase --include="$base_pkgs" "$suite" "$dir" "$mirror" \
            >"$top/debootstrap.log" 2>&1; then
        tail -20 "$top/debootstrap.log" >&2
        echo "chroot.sh: debootstrap $suite failed (log: $top/debootstrap.log)" >&2
        exit 1
    fi
    rm -rf "$dir/var/cache/apt/archives/"*.deb
    echo "$base_pkgs" >"$dir/.bmt-ready"
    echo "# $suite: base chroot made in $(($(date +%s) - t0)) s, $(du -sh "$dir" | cut -f1)" >&2
}

mount_full() {
    mkdir -p "$top/upper" "$top/work" "$top/full"
    mnt -t overlay bmt-overlay -o "lowerdir=$top/base,upperdir=$top/upper,workdir=$top/work" "$top/full"
}

ensure_full() {
    local t0
    ready "$top/upper" "$full_pkgs" && return 0
    rm -rf "$top/upper" "$top/work"
    t0=$(date +%s)
    mount_full
    mount_system "$top/full"
    cp /etc/resolv.conf "$top/full/etc/resolv.conf" 2>/dev/null || true
    echo "# $suite: apt-get install $full_pkgs" >&2
    # shellcheck disable=SC2086
    # Check-Valid-Until=false: sid's Release file is valid for a week, and a
    # mirror frozen at a snapshot (as some CI networks are) serves it expired;
    # the signatures are still checked.
    if ! in_chroot "$top/full" sh -c "apt-get -o Acquire::Check-Valid-Until=false update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $full_pkgs &&
            apt-get clean" \
            >"$top/apt.log" 2>&1; then
        tail -20 "$top/apt.log" >&2
        echo "chroot.sh: apt-get install in the $suite chroot failed (log: $top/apt.log)" >&2
        exit 1
    fi
    cleanup
    echo "$full_pkgs" >"$top/upper/.bmt-ready"
    echo "# $suite: test packages installed in $(($(date +%s) - t0)) s, $(du -sh "$top/upper" | cut -f1)" >&2
}

case $action in
ensure)
    ensure_base
    ensure_full
    ;;
run)
    layer=$1
    shift
    ensure_base
    ensure_full
    case $layer in
    base) dir=$top/base ;;
    full) mount_full; dir=$top/full ;;
    *) echo "chroot.sh: layer is base or full, not $layer" >&2; exit 2 ;;
    esac
    mount_system "$dir"
    mkdir -p "$dir/beamtrace"
    if [ -n "${BMT_SRC:-}" ]; then
        mnt --bind "$BMT_SRC" "$dir/beamtrace"
    fi
    set +e
    in_chroot "$dir" "$@"
    rc=$?
    set -e
    exit $rc
    ;;
*)
    echo "usage: test/otp/chroot.sh SUITE ensure | run base|full CMD..." >&2
    exit 2
    ;;
esac
