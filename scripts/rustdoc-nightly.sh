#!/bin/sh
# rustdoc with its nightly features, as docs.rs runs it (scripts/test.sh's docs step): RUSTC_BOOTSTRAP
# reaches rustdoc alone, so cargo and the build scripts that probe the compiler (thiserror's) see
# the stable toolchain they always see, and the docs share the target folder of every other build.
RUSTC_BOOTSTRAP=1 exec rustdoc "$@"
