#!/usr/bin/env bash
# What io_uring's receives are worth alone: the same hintq binary serving a 1 KB file twice,
# with the ring receiving (A, the default) and without (B, --uring-receive off). See ab.sh for
# the method, the pinning and the variables it takes.
#
# Usage: crates/hintq-serve/bench/uring-recv-ab.sh [env: as ab.sh]
set -euo pipefail
BACKEND=uring A_ARGS="" B_ARGS="--uring-receive off" exec "$(dirname "$0")/ab.sh"
