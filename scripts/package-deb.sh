#!/usr/bin/env bash
# Builds bulwark's Debian package with dpkg-deb, Debian's own tool: nothing to
# install beyond dpkg (dpkg-shlibdeps from dpkg-dev and lintian are used when
# present).
#
#   scripts/package-deb.sh [--profile NAME | --binary PATH] [--out DIR]
#                          [--compression xz|gzip|zstd|none] [--lintian]
#
#   --profile NAME   build with `cargo build --profile NAME -p bulwark` first
#                    (default: release)
#   --binary PATH    package this already built binary instead of building one
#                    (the tests package the debug binary they already have)
#   --out DIR        where bulwark_VERSION_ARCH.deb goes (default: target/debian)
#   --compression Z  dpkg-deb's compressor (default: xz)
#   --lintian        run lintian on the result; its errors fail the script
#
# Environment: DEB_MAINTAINER (default "bulwark developers
# <bulwark@example.invalid>"); SOURCE_DATE_EPOCH (default: the last commit's
# time) dates the changelog and every file, so equal inputs give equal bytes.
#
# The last line of the output is the package's path. What goes where, and
# why, is in docs/installation.md; the maintainer scripts, the copyright file
# and the shipped configuration are in dist/debian/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
profile=release
binary=""
out="${CARGO_TARGET_DIR:-$root/target}/debian"
compression=xz
run_lintian=false

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile="${2:?--profile needs a name}"; shift 2 ;;
        --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
        --out) out="${2:?--out needs a directory}"; shift 2 ;;
        --compression) compression="${2:?--compression needs a name}"; shift 2 ;;
        --lintian) run_lintian=true; shift ;;
        -h | --help) usage ;;
        *) echo "package-deb.sh: unknown argument $1" >&2; usage ;;
    esac
done

for tool in dpkg-deb dpkg strip gzip md5sum; do
    command -v "$tool" >/dev/null || { echo "package-deb.sh: $tool is needed" >&2; exit 1; }
done

# The version is the workspace's ([workspace.package] in Cargo.toml).
version="$(awk '
    /^\[/ { in_ws = ($0 == "[workspace.package]") }
    in_ws && /^version *=/ { gsub(/.*= *"|".*/, ""); print; exit }
' "$root/Cargo.toml")"
[ -n "$version" ] || { echo "package-deb.sh: no version in $root/Cargo.toml" >&2; exit 1; }

if [ -z "$binary" ]; then
    echo "==> cargo build --profile $profile -p bulwark" >&2
    (cd "$root" && cargo build --profile "$profile" -p bulwark)
    case "$profile" in dev | test) dir=debug ;; bench) dir=release ;; *) dir="$profile" ;; esac
    binary="${CARGO_TARGET_DIR:-$root/target}/$dir/bulwark"
fi
[ -x "$binary" ] || { echo "package-deb.sh: $binary is not an executable" >&2; exit 1; }
# A stale binary would be packaged under the wrong version: refuse it.
reported="$("$binary" version)"
if [ "$reported" != "bulwark $version" ]; then
    echo "package-deb.sh: $binary reports \`$reported\`, the workspace is $version" >&2
    exit 1
fi

arch="$(dpkg --print-architecture)"
maintainer="${DEB_MAINTAINER:-bulwark developers <bulwark@example.invalid>}"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH="$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)"
fi
export SOURCE_DATE_EPOCH

# Where systemd on this distribution looks (bookworm: /lib/systemd/system,
# later releases: /usr/lib/systemd/system).
systemd_dir() {
    pkg-config --variable="$1" systemd 2>/dev/null || echo "$2"
}
unit_dir="$(systemd_dir systemdsystemunitdir /usr/lib/systemd/system)"
sysusers_dir="$(systemd_dir sysusersdir /usr/lib/sysusers.d)"
tmpfiles_dir="$(systemd_dir tmpfilesdir /usr/lib/tmpfiles.d)"

work="$(mktemp -d "${TMPDIR:-/tmp}/bulwark-deb.XXXXXX")"
trap 'rm -rf "$work"' EXIT
stage="$work/bulwark_${version}_${arch}"
umask 022

# The binary, stripped as dh_strip does (release builds carry line tables).
install -d "$stage/usr/sbin"
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    -o "$stage/usr/sbin/bulwark" "$binary"
chmod 0755 "$stage/usr/sbin/bulwark"

# systemd: the unit (installed, never enabled: see postinst), the user and
# the directories.
install -D -m 0644 "$root/dist/systemd/bulwark.service" "$stage$unit_dir/bulwark.service"
install -D -m 0644 "$root/dist/systemd/bulwark.sysusers" "$stage$sysusers_dir/bulwark.conf"
install -D -m 0644 "$root/dist/systemd/bulwark.tmpfiles" "$stage$tmpfiles_dir/bulwark.conf"

# The configuration, a conffile: postinst gives it to root:bulwark, 0640.
install -D -m 0644 "$root/dist/debian/bulwark.toml" "$stage/etc/bulwark/bulwark.toml"

# Man pages and completions, generated from the CLI definition by the binary.
"$binary" generate-docs --out "$work/generated" >/dev/null
install -d "$stage/usr/share/man/man8"
for page in "$work"/generated/man/*.8; do
    gzip -9n <"$page" >"$stage/usr/share/man/man8/$(basename "$page").gz"
done
install -D -m 0644 "$work/generated/completions/bulwark.bash" \
    "$stage/usr/share/bash-completion/completions/bulwark"
install -D -m 0644 "$work/generated/completions/_bulwark" \
    "$stage/usr/share/zsh/vendor-completions/_bulwark"
install -D -m 0644 "$work/generated/completions/bulwark.fish" \
    "$stage/usr/share/fish/vendor_completions.d/bulwark.fish"

# /usr/share/doc/bulwark: copyright, changelog, the operator's documentation.
doc="$stage/usr/share/doc/bulwark"
install -D -m 0644 "$root/dist/debian/copyright" "$doc/copyright"
{
    printf 'bulwark (%s) unstable; urgency=medium\n\n' "$version"
    printf '  * Release %s, built from the bulwark workspace by\n' "$version"
    printf '    scripts/package-deb.sh.\n\n'
    printf ' -- %s  %s\n' "$maintainer" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$doc/changelog.gz"
for page in "$root"/docs/*.md; do
    case "$(basename "$page")" in testing.md) continue ;; esac # for contributors
    gzip -9n <"$page" >"$doc/$(basename "$page").gz"
done
chmod 0644 "$doc"/*

# DEBIAN/: maintainer scripts, conffiles, md5sums, control.
install -d "$stage/DEBIAN"
for script in postinst prerm postrm; do
    install -m 0755 "$root/dist/debian/$script" "$stage/DEBIAN/$script"
done
echo /etc/bulwark/bulwark.toml >"$stage/DEBIAN/conffiles"
chmod 0644 "$stage/DEBIAN/conffiles"
# dpkg keeps its own checksums of conffiles: md5sums lists the other files.
(cd "$stage" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' |
    LC_ALL=C sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"

# Depends: the shared libraries the binary links (dpkg-shlibdeps, when
# dpkg-dev is installed; else the C library and libgcc, which a Rust binary
# needs), and adduser for postinst (--comment is new in 3.130).
shlibs="libc6, libgcc-s1"
if command -v dpkg-shlibdeps >/dev/null; then
    mkdir -p "$work/shlibdeps/debian"
    printf 'Source: bulwark\n\nPackage: bulwark\nArchitecture: any\n' \
        >"$work/shlibdeps/debian/control"
    if computed="$(cd "$work/shlibdeps" &&
        dpkg-shlibdeps -O -e"$stage/usr/sbin/bulwark" 2>"$work/shlibdeps.log")"; then
        shlibs="$(sed -n 's/^shlibs:Depends=//p' <<<"$computed")"
    else
        cat "$work/shlibdeps.log" >&2
        echo "package-deb.sh: dpkg-shlibdeps failed; Depends: $shlibs" >&2
    fi
fi
installed_size="$(du -s -k --apparent-size --exclude=DEBIAN "$stage" | cut -f1)"
homepage="$(awk '
    /^\[/ { in_ws = ($0 == "[workspace.package]") }
    in_ws && /^repository *=/ { gsub(/.*= *"|".*/, ""); print; exit }
' "$root/Cargo.toml")"
cat >"$stage/DEBIAN/control" <<EOF
Package: bulwark
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: ${shlibs:+$shlibs, }adduser (>= 3.130)
Section: net
Priority: optional
Homepage: $homepage
Description: authoritative DNS server that no packet can crash
 bulwark answers DNS queries for the zones it is given, from master files or
 from primaries by zone transfer, over UDP and TCP; it signs them with DNSSEC
 and serves them to secondaries. Its answers are checked against Knot DNS.
 .
 This package installs the server, a hardened systemd unit (installed but not
 enabled), a configuration that serves no zone, man pages and shell
 completions, and creates the system user bulwark.
EOF
chmod 0644 "$stage/DEBIAN/control"

# Every file dated SOURCE_DATE_EPOCH; dpkg-deb dates the archive members by it.
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$out"
deb="$out/bulwark_${version}_${arch}.deb"
dpkg-deb --build --root-owner-group "-Z$compression" "$stage" "$deb" >&2

if $run_lintian; then
    command -v lintian >/dev/null || { echo "package-deb.sh: lintian is not installed" >&2; exit 1; }
    echo "==> lintian $deb" >&2
    lintian --fail-on error --info "$deb" >&2
fi

echo "$deb"
