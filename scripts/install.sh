#!/usr/bin/env bash
# install.sh - install (or remove) scx_fairquota and its systemd unit on a
# host.
#
#   scripts/install.sh                 build if needed, then install:
#       PREFIX/bin/scx_fairquota, /etc/systemd/system/scx_fairquota.service,
#       /etc/default/scx_fairquota (kept if it exists: it is the host's
#       configuration), PREFIX/share/doc/scx_fairquota/operations.md
#   scripts/install.sh --uninstall     stop and disable the unit, remove
#       all of the above except /etc/default/scx_fairquota
#   scripts/install.sh --uninstall --purge   ... and the default file too
#
# Options: --prefix DIR (default /usr/local), --destdir DIR (stage into DIR,
# as packagers do; no systemctl calls then), --no-build (use the binary in
# target/release as it is).
# After installing: systemctl enable --now scx_fairquota
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

me=install
die() { echo "$me: error: $*" >&2; exit 1; }

prefix=/usr/local destdir= uninstall=0 purge=0 build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --destdir) destdir="${2:?--destdir needs a directory}"; shift 2 ;;
        --uninstall) uninstall=1; shift ;;
        --purge) purge=1; shift ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done
case "$prefix" in /*) ;; *) die "--prefix must be an absolute path, not '$prefix'" ;; esac
if [ -z "$destdir" ] && [ "$(id -u)" -ne 0 ]; then
    die "installing into / needs root: run it with sudo (or stage with --destdir DIR)"
fi

bin="$destdir$prefix/bin/scx_fairquota"
unit="$destdir/etc/systemd/system/scx_fairquota.service"
defaults="$destdir/etc/default/scx_fairquota"
doc="$destdir$prefix/share/doc/scx_fairquota"
# systemctl only on the live system, and only if systemd runs it.
live=0
if [ -z "$destdir" ] && [ -d /run/systemd/system ]; then live=1; fi

if [ "$uninstall" -eq 1 ]; then
    if [ "$live" -eq 1 ]; then
        systemctl disable --now scx_fairquota.service 2>/dev/null || true
    fi
    rm -f "$bin" "$unit"
    rm -rf "$doc"
    [ "$purge" -eq 1 ] && rm -f "$defaults"
    [ "$live" -eq 1 ] && systemctl daemon-reload
    echo "$me: removed scx_fairquota$([ "$purge" -eq 1 ] || echo " (kept $defaults)")"
    exit 0
fi

if [ "$build" -eq 1 ]; then
    scripts/build.sh
fi
[ -x target/release/scx_fairquota ] || die "target/release/scx_fairquota is missing: run scripts/build.sh"

install -D -m 0755 target/release/scx_fairquota "$bin"
install -d -m 0755 "$(dirname "$unit")"
sed "s|^ExecStart=/usr/local/bin/|ExecStart=$prefix/bin/|;
     s|file:/usr/local/share/|file:$prefix/share/|" dist/scx_fairquota.service > "$unit"
chmod 0644 "$unit"
if [ -e "$defaults" ]; then
    echo "$me: keeping the existing $defaults"
else
    install -D -m 0644 dist/scx_fairquota.default "$defaults"
fi
install -D -m 0644 docs/operations.md "$doc/operations.md"
[ "$live" -eq 1 ] && systemctl daemon-reload
echo "$me: installed $bin and $unit"
[ "$live" -eq 1 ] && echo "$me: start it with: systemctl enable --now scx_fairquota"
exit 0
