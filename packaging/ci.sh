#!/usr/bin/env bash
# Builds the container image and runs it for real: what CI runs (.ci/run), and what a
# developer runs the same way on a machine with a Docker engine:
#
#   bash packaging/ci.sh              # everything: build, then run (below)
#   bash packaging/ci.sh build        # 1 and 2 only (.ci/run builds before the test suite,
#                                     # whose tests/packaging/image_test.ts runs the image)
#   bash packaging/ci.sh run          # 3 and 4 only, on the image built before
#   bash packaging/ci.sh --real ...   # the Dockerfile's own bases (denoland/deno, node)
#
# 1. the base images: the Dockerfile's, or stand-ins built from Debian's packages and npm
#    (packaging/stand-ins.sh; also the postgres stand-in for compose's replicas profile)
# 2. `docker build` of the Dockerfile (legacy builder, host network), timed, with its size
# 3. packaging/smoke.ts: the three programs in containers on the host's network
# 4. packaging/compose_smoke.ts: compose.yaml with compose.host.yaml, up to down -v
#
# Needs a running engine (`docker info`); CI starts one with --iptables=false --bridge=none, so
# every container uses the host's network. Every container and volume it starts is removed;
# the images stay (a second run reuses them; `docker rmi` them to start over).
set -euo pipefail
cd "${0%/*}/.." || exit 1

if command -v deno >/dev/null 2>&1; then DENO=(deno); else DENO=(npx --yes deno@2); fi
IMAGE=${NET_IMAGE:-net-consumer:$(sed -n 's/^  "version": "\(.*\)",$/\1/p' deno.json)}
now() { date +%s; }
took() { echo "packaging: $1 took $(($(now) - $2)) s"; }

REAL=0
[ "${1:-}" = --real ] && { REAL=1; shift; }
WHAT=${1:-all}
case "$WHAT" in
  all | build | run) ;;
  *) echo "usage: bash packaging/ci.sh [--real] [all|build|run]" >&2; exit 64 ;;
esac

docker info >/dev/null 2>&1 || { echo "packaging: no Docker engine answers (docker info)" >&2; exit 1; }

POSTGRES_IMAGE=()
[ "$REAL" = 1 ] || POSTGRES_IMAGE=(--postgres-image net-consumer-stand-in/postgres:bookworm)

if [ "$WHAT" != run ]; then
  BUILD_ARGS=()
  if [ "$REAL" = 0 ]; then
    t=$(now)
    read -r -a BUILD_ARGS < <(bash packaging/stand-ins.sh | tail -1)
    took "stand-in base images" "$t"
  fi
  t=$(now)
  DOCKER_BUILDKIT=0 docker build --network host -q "${BUILD_ARGS[@]}" -t "$IMAGE" . >/dev/null
  took "docker build" "$t"
  echo "packaging: $IMAGE is $(docker image inspect "$IMAGE" --format '{{.Size}}' | awk '{printf "%.0f", $1/1000000}') MB"
  docker image prune -f >/dev/null
fi

if [ "$WHAT" != build ]; then
  docker image inspect "$IMAGE" >/dev/null 2>&1 ||
    { echo "packaging: no image $IMAGE: run bash packaging/ci.sh build first" >&2; exit 1; }
  t=$(now)
  "${DENO[@]}" run -A packaging/smoke.ts --image "$IMAGE"
  took "smoke" "$t"

  t=$(now)
  NET_IMAGE=$IMAGE "${DENO[@]}" run -A packaging/compose_smoke.ts "${POSTGRES_IMAGE[@]}"
  took "compose" "$t"
fi
