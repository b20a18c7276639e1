#!/usr/bin/env bash
# fetch-kernel.sh - fetch and unpack Debian's sched_ext-capable kernel for VM tests.
#
# Downloads the newest `linux-image-cloud-amd64` of Debian sid through a
# PRIVATE apt configuration (own sources, lists and cache under
# ~/.cache/scx_fairquota/apt/<suite>; the system's apt state is not touched and
# nothing is installed), unpacks the kernel image, config and modules into
# ~/.cache/scx_fairquota/kernel/<kernel-release>/root, decompresses the
# modules, runs depmod, and checks the result (CONFIG_SCHED_CLASS_EXT=y,
# overlay module, BTF usable by libbpf for sched_ext).
#
# Usage: scripts/fetch-kernel.sh [--refresh] [--offline]
#   --refresh   always re-read the archive's package lists
#   --offline   do not use the network; use the cached `current` kernel
# Env:   KERNEL_SUITE    (default sid)        KERNEL_FLAVOUR (default cloud-amd64)
#        KERNEL_MIRROR   (default: the Debian URI of this machine's apt sources)
#        LISTS_MAX_AGE   seconds before package lists are re-read (default 3600)
#
# Output: progress on stderr; the LAST stdout line is the kernel directory,
# which contains `vmlinuz`, `config`, `root/`, `debs/`, `release` (uname -r)
# and `package-version`. ~/.cache/scx_fairquota/kernel/current links to it.
set -euo pipefail

me=fetch-kernel
say() { echo "$me: $*" >&2; }
warn() { echo "$me: WARNING: $*" >&2; }
die() { echo "$me: ERROR: $*" >&2; exit 1; }

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${HOME}/.cache/scx_fairquota"
APT_DIR="$CACHE/apt/${KERNEL_SUITE:-sid}"   # one private apt state per suite
KERNELS="$CACHE/kernel"
SUITE="${KERNEL_SUITE:-sid}"
FLAVOUR="${KERNEL_FLAVOUR:-cloud-amd64}"
META="linux-image-$FLAVOUR"
LISTS_MAX_AGE="${LISTS_MAX_AGE:-3600}"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

refresh=0 offline=0
for arg in "$@"; do
    case "$arg" in
        --refresh) refresh=1 ;;
        --offline) offline=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $arg (try --help)" ;;
    esac
done

for tool in apt-get apt-cache dpkg-deb xz depmod python3; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run scripts/setup-host.sh)"
done
[ -r "$KEYRING" ] || die "$KEYRING missing (install debian-archive-keyring)"

# ---- helpers ---------------------------------------------------------------

# A kernel directory is usable when the unpack finished and its files are there.
kernel_ok() {
    local d="$1"
    [ -f "$d/.complete" ] && [ -f "$d/release" ] && [ -f "$d/vmlinuz" ] && [ -f "$d/config" ] ||
        return 1
    local rel; rel="$(cat "$d/release")"
    [ -f "$d/root/usr/lib/modules/$rel/modules.dep" ] || [ -f "$d/root/lib/modules/$rel/modules.dep" ]
}

# Print the kernel directory as the last stdout line and point `current` at it.
finish() {
    local rel="$1"
    ln -sfn "$rel" "$KERNELS/current"
    say "kernel $rel (package $(cat "$KERNELS/$rel/package-version")) ready"
    say "  vmlinuz: $KERNELS/$rel/vmlinuz"
    say "  config:  $KERNELS/$rel/config"
    echo "$KERNELS/$rel"
    exit 0
}

# Fall back to the previously fetched kernel (network trouble), or fail.
use_cached_or_die() {
    local why="$1"
    if [ -L "$KERNELS/current" ] && kernel_ok "$KERNELS/current"; then
        warn "$why; using the cached kernel $(readlink "$KERNELS/current")"
        finish "$(readlink "$KERNELS/current")"
    fi
    die "$why, and no cached kernel in $KERNELS"
}

# The Debian archive URI of this machine's apt sources (deb822 and one-line).
find_mirror() {
    local f files=()
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && files+=("$f")
    done
    [ "${#files[@]}" -gt 0 ] || return 0
    awk '
        # one-line format: deb [options] URI suite components
        FILENAME ~ /\.list$/ && /^[ \t]*deb[ \t]/ {
            line = $0; gsub(/\[[^]]*\]/, "", line); split(line, f, /[ \t]+/)
            for (i = 1; i <= length(f); i++) if (f[i] ~ /:\/\//) { print f[i]; break }
            next
        }
        # deb822 format: URIs: lines of enabled "deb" stanzas
        FILENAME ~ /\.sources$/ {
            if (FNR == 1 || $0 ~ /^[ \t]*$/) { flush(); }
            if ($0 ~ /^#/) next
            if (tolower($1) == "types:" && $0 ~ /[ \t]deb([ \t]|$)/) isdeb = 1
            if (tolower($1) == "enabled:" && tolower($2) == "no") disabled = 1
            if (tolower($1) == "uris:") for (i = 2; i <= NF; i++) uris = uris " " $i
        }
        function flush(  n, u, i) {
            if (isdeb && !disabled) { n = split(uris, u, " "); for (i = 1; i <= n; i++) print u[i] }
            isdeb = 0; disabled = 0; uris = ""
        }
        END { flush() }
    ' "${files[@]}" 2>/dev/null | grep -E '/debian/?$' | head -n1 || true
}

mkdir -p "$KERNELS"
# One fetch at a time; a failed unpack is removed.
exec 9>"$KERNELS/.lock"
if ! flock -n 9; then
    say "waiting for another fetch-kernel.sh to finish"
    flock 9
fi
tmp=""
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT

# ---- offline mode -----------------------------------------------------------
if [ "$offline" = 1 ]; then
    if ! { [ -L "$KERNELS/current" ] && kernel_ok "$KERNELS/current"; }; then
        die "--offline given but no cached kernel in $KERNELS (run without --offline once)"
    fi
    finish "$(readlink "$KERNELS/current")"
fi

# ---- private apt configuration ------------------------------------------------
MIRROR="${KERNEL_MIRROR:-$(find_mirror)}"
if [ -z "$MIRROR" ]; then
    MIRROR=http://deb.debian.org/debian
    say "no Debian URI found in /etc/apt sources; using $MIRROR"
fi
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
SOURCES="$APT_DIR/debian.sources"
cat > "$SOURCES.new" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE
Components: main
Signed-By: $KEYRING
EOF
# Lists from another suite/mirror would be wrong: start afresh if the source changed.
if ! cmp -s "$SOURCES.new" "$SOURCES"; then
    rm -rf "$APT_DIR/lists" && mkdir -p "$APT_DIR/lists/partial"
    mv "$SOURCES.new" "$SOURCES"
else
    rm -f "$SOURCES.new"
fi
# Read after the system configuration (-c), so it can drop the system's hooks:
# they would act on the system's apt cache, not on this private one.
APT_CONF="$APT_DIR/apt.conf"
{
    echo '#clear APT::Update::Pre-Invoke;'
    echo '#clear APT::Update::Post-Invoke;'
    echo '#clear APT::Update::Post-Invoke-Success;'
    echo '#clear DPkg::Pre-Invoke;'
    echo '#clear DPkg::Post-Invoke;'
    echo 'Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";'
    echo 'Acquire::Languages "none";'
    # Some images (docker-clean) disable apt's binary caches; this one is private.
    echo 'Dir::Cache::pkgcache "pkgcache.bin";'
    echo 'Dir::Cache::srcpkgcache "";'
    echo 'Acquire::http::Timeout "30";'
    echo 'Acquire::Retries "1";'
    # _apt cannot write into root's home: download as root instead of warning.
    if [ "$(id -u)" -eq 0 ]; then echo 'APT::Sandbox::User "root";'; fi
} > "$APT_CONF"
APT_OPTS=(
    -c "$APT_CONF"
    -o "Dir::Etc::SourceList=$SOURCES"
    -o "Dir::Etc::SourceParts=-"
    -o "Dir::State::Lists=$APT_DIR/lists"
    -o "Dir::Cache=$APT_DIR/cache"
    -o "Dir::State::status=/dev/null"
)
apt_q() { apt-cache "${APT_OPTS[@]}" "$@"; }

# ---- refresh the package lists (if old) ---------------------------------------
stamp="$APT_DIR/lists/.updated"
age=$(( $(date +%s) - $(stat -c %Y "$stamp" 2>/dev/null || echo 0) ))
if [ "$refresh" = 1 ] || [ "$age" -ge "$LISTS_MAX_AGE" ]; then
    say "reading $SUITE package lists from $MIRROR"
    if apt-get "${APT_OPTS[@]}" -q update >"$APT_DIR/update.log" 2>&1 &&
        ! grep -qE '^(E: |W: (Failed to fetch|Some index files))' "$APT_DIR/update.log"; then
        touch "$stamp"
    else
        warn "apt-get update failed:"; sed 's/^/    /' "$APT_DIR/update.log" | tail -n 5 >&2
        [ -f "$stamp" ] || use_cached_or_die "the $SUITE archive is unreachable"
        warn "continuing with the package lists from $(date -r "$stamp")"
    fi
else
    say "$SUITE package lists are ${age}s old, not re-reading them (--refresh forces it)"
fi

# ---- resolve the kernel release through the metapackage ------------------------
# $META depends on linux-image-<release>; that one depends on the packages
# that hold the files (currently linux-binary-, linux-base-, linux-modules-<release>).
depends_of() {
    apt_q depends --no-pre-depends --no-recommends --no-suggests --no-conflicts \
        --no-breaks --no-replaces --no-enhances "$1" 2>/dev/null |
        sed -n 's/^ *|\{0,1\}Depends: \([^< ]*\)$/\1/p'
}
release="$(depends_of "$META" | sed -n "s/^linux-image-\(.*-$FLAVOUR\)$/\1/p" | head -n1)"
[ -n "$release" ] || use_cached_or_die "could not resolve $META in $SUITE to a linux-image-<version> package"
image_pkg="linux-image-$release"
pkg_version="$(apt_q show "$image_pkg" 2>/dev/null | sed -n 's/^Version: //p' | head -n1)"
say "$SUITE $META -> $image_pkg ($pkg_version)"

dir="$KERNELS/$release"
if kernel_ok "$dir" && [ "$(cat "$dir/package-version")" = "$pkg_version" ]; then
    say "already unpacked in $dir"
    finish "$release"
fi

# ---- download -----------------------------------------------------------------
# The image package plus every dependency built for this release.
pkgs=("$image_pkg")
while read -r dep; do
    [[ "$dep" == *"-$release" && "$dep" != "$image_pkg" ]] && pkgs+=("$dep")
done < <(depends_of "$image_pkg" | sort -u)
say "downloading: ${pkgs[*]}"
tmp="$KERNELS/.$release.tmp"
rm -rf "$tmp"
mkdir -p "$tmp/debs" "$tmp/root"
if ! (cd "$tmp/debs" && apt-get "${APT_OPTS[@]}" -q download "${pkgs[@]}") >"$tmp/download.log" 2>&1; then
    sed 's/^/    /' "$tmp/download.log" | tail -n 5 >&2
    rm -rf "$tmp"
    use_cached_or_die "downloading the $release packages failed"
fi

# ---- unpack -------------------------------------------------------------------
for deb in "$tmp"/debs/*.deb; do
    dpkg-deb -x "$deb" "$tmp/root"
done
# Debian's new layout keeps everything in usr/lib/modules/<release>; older
# packages used boot/vmlinuz-<release>, boot/config-<release> and lib/modules.
moddir="$tmp/root/usr/lib/modules/$release"
[ -d "$moddir" ] || moddir="$tmp/root/lib/modules/$release"
vmlinuz="" config=""
for f in "$moddir/vmlinuz" "$tmp/root/boot/vmlinuz-$release"; do
    [ -f "$f" ] && { vmlinuz="$f"; break; }
done
for f in "$moddir/config" "$tmp/root/boot/config-$release"; do
    [ -f "$f" ] && { config="$f"; break; }
done
[ -n "$vmlinuz" ] || die "no vmlinuz found in ${pkgs[*]} ($pkg_version)"
[ -n "$config" ] || die "no kernel config found in ${pkgs[*]} ($pkg_version)"
[ -d "$moddir/kernel" ] || die "no modules in ${moddir#"$tmp/root/"}: did the chain lose linux-modules-$release?"

# ---- verify ---------------------------------------------------------------------
grep -qx 'CONFIG_SCHED_CLASS_EXT=y' "$config" ||
    die "$image_pkg $pkg_version ($SUITE) is built without CONFIG_SCHED_CLASS_EXT=y: it cannot run sched_ext schedulers"
for opt in CONFIG_DEBUG_INFO_BTF CONFIG_VIRTIO_FS CONFIG_FUSE_FS; do
    grep -qx "$opt=y" "$config" || warn "$opt=y is not set in $image_pkg $pkg_version; the VM tests may not work"
done
overlay="$(find "$moddir" -name 'overlay.ko*' -print -quit)"
[ -n "$overlay" ] || grep -qx 'CONFIG_OVERLAY_FS=y' "$config" ||
    die "no overlay module in linux-modules-$release $pkg_version: the guest would have a read-only /tmp and /etc"

say "checking the kernel's BTF"
if ! python3 "$SCRIPT_DIR/check-kernel-btf.py" "$vmlinuz" >&2; then
    die "$image_pkg $pkg_version from $SUITE has BTF that libbpf cannot use for sched_ext (see above)"
fi

# The guest's busybox insmod rejects compressed modules: decompress them all.
n_xz="$(find "$moddir" -name '*.ko.xz' | wc -l)"
say "decompressing $n_xz modules"
find "$moddir" -name '*.ko.xz' -print0 | xargs -0 -r xz -d
find "$moddir" -name '*.ko.zst' -print0 | xargs -0 -r zstd -d -q --rm
depmod -b "${moddir%/lib/modules/*}" "$release"   # base: root/usr (or root)
[ -f "$moddir/modules.dep" ] || die "depmod did not create modules.dep"

# ---- install into the cache ------------------------------------------------------
echo "$release" > "$tmp/release"
echo "$pkg_version" > "$tmp/package-version"
ln -sfn "root/${vmlinuz#"$tmp/root/"}" "$tmp/vmlinuz"
ln -sfn "root/${config#"$tmp/root/"}" "$tmp/config"
touch "$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
tmp=""
finish "$release"
