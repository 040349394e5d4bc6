#!/usr/bin/env bash
# Builds the C library of hintq and installs it under a prefix:
#
#   <prefix>/lib/libhintq.so.<version>          the shared library, SONAME libhintq.so.0.<minor>
#   <prefix>/lib/libhintq.so.0.<minor>          -> libhintq.so.<version> (found at run time)
#   <prefix>/lib/libhintq.so                    -> libhintq.so.0.<minor> (found by -lhintq)
#   <prefix>/lib/libhintq.a                     the static library
#   <prefix>/include/hintq.h                    the header
#   <prefix>/lib/pkgconfig/hintq.pc             for pkg-config --cflags --libs hintq
#   <prefix>/lib/pkgconfig/hintq-static.pc      for pkg-config --static --cflags --libs hintq-static
#
# Usage: crates/hintq-capi/install.sh --prefix DIR [--libdir DIR] [--profile release|dev]
# DESTDIR, if set, is put before every installed path (for packagers); the .pc names the
# prefix without it. Cargo's CARGO_TARGET_DIR is honoured.
set -euo pipefail

usage() {
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-2}"
}

prefix="" libdir="" profile=release
while (($#)); do
    case $1 in
        --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
        --prefix=*) prefix=${1#*=}; shift ;;
        --libdir) libdir=${2:?--libdir needs a directory}; shift 2 ;;
        --libdir=*) libdir=${1#*=}; shift ;;
        --profile) profile=${2:?--profile needs a name}; shift 2 ;;
        --profile=*) profile=${1#*=}; shift ;;
        -h | --help) usage 0 ;;
        *) echo "install.sh: unknown argument $1" >&2; usage ;;
    esac
done
[ -n "$prefix" ] || usage
case $prefix in /*) ;; *) prefix=$(cd "$prefix" 2>/dev/null && pwd || echo "$PWD/$prefix") ;; esac
libdir=${libdir:-$prefix/lib}
includedir=$prefix/include
destdir=${DESTDIR:-}

here=$(cd "$(dirname "$0")" && pwd)
manifest=$here/../../Cargo.toml
cargo build --quiet --manifest-path "$manifest" -p hintq-capi --profile "$profile"
target=${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps --manifest-path "$manifest" |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')}
built=$target/$([ "$profile" = dev ] && echo debug || echo "$profile")

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$manifest" | head -n 1)
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
if [ "$major" = 0 ]; then soname=libhintq.so.0.$minor; else soname=libhintq.so.$major; fi
# The SONAME build.rs gave the library must be the one the links below name.
if command -v readelf >/dev/null && ! readelf -d "$built/libhintq.so" | grep -q "SONAME.*\[$soname\]"; then
    echo "install.sh: $built/libhintq.so lacks SONAME $soname" >&2
    exit 1
fi

install -d "$destdir$libdir/pkgconfig" "$destdir$includedir"
install -m 0755 "$built/libhintq.so" "$destdir$libdir/libhintq.so.$version"
ln -sfn "libhintq.so.$version" "$destdir$libdir/$soname"
ln -sfn "$soname" "$destdir$libdir/libhintq.so"
install -m 0644 "$built/libhintq.a" "$destdir$libdir/libhintq.a"
install -m 0644 "$here/include/hintq.h" "$destdir$includedir/hintq.h"
# Two .pc files from one template (as build.rs makes them): shared and static linking.
for pc in "hintq -lhintq" "hintq-static -l:libhintq.a"; do
    read -r name link <<<"$pc"
    sed -e "s|@NAME@|$name|" -e "s|@LINK@|$link|" -e "s|@LIBDIR@|$libdir|" -e "s|@INCLUDEDIR@|$includedir|" \
        -e "s|@VERSION@|$version|" "$here/hintq.pc.in" >"$destdir$libdir/pkgconfig/$name.pc"
done
echo "installed hintq $version under $destdir$prefix"
