#!/usr/bin/env bash
# Release build of momopay: one static binary with its version, commit and
# build date, which "momopay version" prints.
#
#   deploy/build.sh [OUTPUT]             # default dist/momopay, for this machine
#   GOOS=linux GOARCH=arm64 deploy/build.sh dist/momopay-linux-arm64
#
# VERSION (default: git describe, e.g. v1.2.0 or v1.2.0-3-gabc1234-dirty),
# COMMIT (default: git rev-parse HEAD) and BUILD_DATE (default: now, UTC)
# override what is recorded. Reproducible: the same commit and BUILD_DATE
# give the same binary (-trimpath, no cgo).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-dist/momopay}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
commit=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
if [ -z "${COMMIT:-}" ] && [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  commit="$commit-dirty"
fi
date=${BUILD_DATE:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}

pkg=github.com/momopay/momopay/internal/app
mkdir -p "$(dirname "$out")"
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
  -ldflags "-s -w -X $pkg.Version=$version -X $pkg.Commit=$commit -X $pkg.Date=$date" \
  -o "$out" ./cmd/momopay
echo "built $out: momopay $version (commit $commit, built $date)"
