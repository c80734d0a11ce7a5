# syntax=docker/dockerfile:1
#
# One image for the three programs of @net/consumer; the first argument selects one
# (packaging/entrypoint.sh):
#
#   docker build -t net-consumer:0.1.0 .
#   docker run --rm -p 127.0.0.1:8088:8088 -e NET_EVM_RPC_URL=… -e NET_EVM_REGISTRY=… \
#     -e NET_EVM_STAKING=… -e NET_EVM_EMISSION=… -e NET_EVM_ESCROW=… net-consumer:0.1.0   # indexer
#   docker run --rm net-consumer:0.1.0 daemon --help
#   docker run --rm net-consumer:0.1.0 devnet --help
#
# `docker compose up indexer` (compose.yaml) runs the indexer against a local devnet.
#
# Built and smoke-tested by `bash packaging/ci.sh` (CI runs it): on machines that cannot pull
# the two base images below it builds stand-ins for them first (packaging/stand-ins.sh) and
# passes them as DENO_IMAGE and NODE_IMAGE; docs/deploy.md says what was run and what was not.

# The Deno the project is developed and tested with (2.9.6), pinned to the digest of the
# image's multi-architecture index. Bump both together with the project's Deno.
ARG DENO_IMAGE=denoland/deno:2.9.6@sha256:2014dc167ece617ef7e7ba40631ac2234c59e75ce693e7cc2dc2602b3c87859d
# Node only to install anvil with npm, the same package and version as tools/setup.ts.
ARG NODE_IMAGE=node:24.19.0-bookworm-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df

# --- anvil: the local chain of the devnet ----------------------------------------------------
FROM ${NODE_IMAGE} AS anvil
# Keep equal to ANVIL_VERSION in tools/setup.ts (a test checks it).
ARG ANVIL_VERSION=1.7.1
WORKDIR /opt/anvil
# The binary lives in the per-platform package (linux-amd64 or linux-arm64), installed by
# name: the wrapper package and its postinstall are not needed, and npm skips an optional
# platform dependency whose `engines` the build's node does not meet. The version check fails
# the build on a mismatch.
RUN case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac \
  && npm install --no-audit --no-fund --ignore-scripts --loglevel=error "@foundry-rs/anvil-linux-${arch}@${ANVIL_VERSION}" \
  && cp "node_modules/@foundry-rs/anvil-linux-${arch}/bin/anvil" /usr/local/bin/anvil \
  && /usr/local/bin/anvil --version | grep -qx "anvil Version: ${ANVIL_VERSION}"

# --- the runtime ----------------------------------------------------------------------------
FROM ${DENO_IMAGE} AS runtime

LABEL org.opencontainers.image.title="net-consumer" \
      org.opencontainers.image.description="The indexer, the consumer daemon and the reference network of @net/consumer" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0"

# NET_STATS_DATA_DIR: the indexer's settlement history (embedded store) and NET_DATA_DIR: the
# daemon's state, both on the volume below, so a plain `docker run` of either keeps them.
ENV DENO_NO_UPDATE_CHECK=1 \
    DENO_NO_PROMPT=1 \
    NET_ANVIL_BIN=/usr/local/bin/anvil \
    NET_STATS_BIND=0.0.0.0:8088 \
    NET_STATS_DATA_DIR=/var/lib/net-consumer/indexer \
    NET_DATA_DIR=/var/lib/net-consumer/daemon

# anvil needs glibc >= 2.35 and libgcc_s: the Debian base of the Deno image has both; the
# version check runs it here, on the runtime's own libraries.
COPY --from=anvil /usr/local/bin/anvil /usr/local/bin/anvil
RUN /usr/local/bin/anvil --version \
  && mkdir -p /app /var/lib/net-consumer/indexer /var/lib/net-consumer/daemon /var/lib/net-consumer/devnet \
  && chown -R deno:deno /app /var/lib/net-consumer

WORKDIR /app
# The non-root user of the Deno image (uid 1993). Sources stay root-owned (read-only to it);
# it owns DENO_DIR (/deno-dir) and the state directory.
USER deno

# The run-time dependencies only (deno.runtime.json and its lock: no test oracles, browser
# driver, compiler or container tooling; tools/runtime_deps.ts), in their own layer: rebuilt
# only when they change. They go to DENO_DIR (the run-time config has no node_modules); files
# no program loads (type declarations, source maps, the CommonJS and type trees of viem and
# ox, which are loaded as ES modules) are deleted in the same step, so no layer keeps them.
COPY deno.runtime.json deno.runtime.lock packaging/prune-npm-cache.sh ./
RUN deno install --config deno.runtime.json --frozen \
  && sh prune-npm-cache.sh "$DENO_DIR/npm"

# The sources (.dockerignore keeps tests, benchmarks and local state out).
COPY . .
# Resolves every entry point against the run-time lock (fails on drift) and compiles them,
# with the process the indexer's embedded store starts (`deno run` of it, outside the import graph);
# nothing is downloaded here.
RUN deno cache --config deno.runtime.json --frozen indexer/main.ts daemon/main.ts devnet/main.ts \
    indexer/store/_embedded_process.ts \
  && deno cache --no-config packaging/healthcheck.ts

# The state directory: a volume, so a read-only root filesystem (`docker run --read-only`)
# still has it, and `docker run` without -v gets a writable one.
VOLUME /var/lib/net-consumer

# The indexer (NET_STATS_BIND), the daemon (NET_DAEMON_BIND, set it to 0.0.0.0:11435 to
# publish it; beyond loopback it requires an API key: NET_DAEMON_API_KEY, or the one it
# generates into $NET_DATA_DIR/api-key), the devnet's chain, routers, gateways and providers.
EXPOSE 8088 11435 8545 8601 8602 8701 8702 8801 8802 8803

# Readiness of the indexer wherever NET_STATS_BIND puts it: 200 from /health (fresh data
# served) and a usable settlement history. compose.yaml gives the daemon and the devnet
# their own checks (packaging/healthcheck.ts --daemon, the devnet's gateway).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["deno", "run", "--no-config", "--allow-net", "--allow-env=NET_STATS_BIND", "packaging/healthcheck.ts", "--indexer"]

# tini (from the Deno image) is PID 1: it reaps children and forwards signals.
ENTRYPOINT ["/tini", "--", "sh", "/app/packaging/entrypoint.sh"]
CMD ["indexer"]
