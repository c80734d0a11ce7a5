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
# the images stay (the image, its anvil stage, the stand-ins: a second run reuses them; `docker
# rmi` them to start over).
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

# build_tagged <tag> <docker build flags…>: builds the Dockerfile as <tag> (legacy builder,
# host network), then removes the image that had the tag before, if this build replaced it.
build_tagged() {
  local tag=$1 before after
  shift
  before=$(docker image inspect "$tag" --format '{{.Id}}' 2>/dev/null || true)
  DOCKER_BUILDKIT=0 docker build --network host -q "$@" -t "$tag" . >/dev/null
  after=$(docker image inspect "$tag" --format '{{.Id}}')
  if [ -n "$before" ] && [ "$before" != "$after" ]; then
    docker rmi "$before" >/dev/null 2>&1 || echo "packaging: kept the previous $tag ($before): in use"
  fi
}

if [ "$WHAT" != run ]; then
  BUILD_ARGS=()
  if [ "$REAL" = 0 ]; then
    t=$(now)
    read -r -a BUILD_ARGS < <(bash packaging/stand-ins.sh | tail -1)
    took "stand-in base images" "$t"
  fi
  # The Dockerfile's anvil stage is built and tagged first (the full build then finds it in
  # the cache): the legacy builder would leave it untagged, and this script removes no image
  # but the ones it replaces under its own tags (no `image prune`: a developer's other
  # untagged images are none of its business).
  ANVIL_STAGE=${IMAGE%:*}-anvil-stage:$(sed -n 's/^ARG ANVIL_VERSION=//p' Dockerfile)
  t=$(now)
  build_tagged "$ANVIL_STAGE" --target anvil "${BUILD_ARGS[@]}"
  build_tagged "$IMAGE" "${BUILD_ARGS[@]}"
  took "docker build" "$t"
  echo "packaging: $IMAGE is $(docker image inspect "$IMAGE" --format '{{.Size}}' | awk '{printf "%.0f", $1/1000000}') MB"
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
