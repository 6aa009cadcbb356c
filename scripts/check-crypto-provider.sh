#!/usr/bin/env bash
# The workspace uses exactly one rustls crypto provider, ring. If aws-lc-rs
# ever enters the dependency graph, rustls panics at runtime in any process
# that did not install a default first; fail the build instead.
set -euo pipefail
if cargo tree --workspace -e normal,build,dev -i aws-lc-rs >/dev/null 2>&1; then
  echo "aws-lc-rs is in the dependency graph; ferrometal uses ring only:" >&2
  cargo tree --workspace -e normal,build,dev -i aws-lc-rs >&2
  exit 1
fi
echo "crypto provider: ring only"
