# syntax=docker/dockerfile:1
#
# One image for the three programs of @net/consumer; the first argument selects one
# (packaging/entrypoint.sh):
#
#   docker build -t net-consumer .
#   docker run --rm -p 127.0.0.1:8088:8088 -e NET_EVM_RPC_URL=… -e NET_EVM_REGISTRY=… \
#     -e NET_EVM_STAKING=… -e NET_EVM_EMISSION=… -e NET_EVM_ESCROW=… net-consumer   # indexer
#   docker run --rm net-consumer daemon --help
#   docker run --rm net-consumer devnet --help
#
# `docker compose up indexer` (compose.yaml) runs the indexer against a local devnet.
#
# NOT BUILT ON OUR MACHINES: they have no Docker engine. tests/packaging/dockerfile_test.ts
# checks what can be checked without one (pins, user, health check, copied files, entry
# point); docs/deploy.md says what was not run.

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
# The binary lives in the per-platform package (linux-amd64 or linux-arm64) that npm picks;
# the wrapper's postinstall is not needed. The version check fails the build on a mismatch.
RUN npm install --no-audit --no-fund --ignore-scripts --loglevel=error "@foundry-rs/anvil@${ANVIL_VERSION}" \
  && cp node_modules/@foundry-rs/anvil-linux-*/bin/anvil /usr/local/bin/anvil \
  && /usr/local/bin/anvil --version | grep -qx "anvil Version: ${ANVIL_VERSION}"

# --- the runtime ----------------------------------------------------------------------------
FROM ${DENO_IMAGE} AS runtime

LABEL org.opencontainers.image.title="net-consumer" \
      org.opencontainers.image.description="The indexer, the consumer daemon and the reference network of @net/consumer" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0"

ENV DENO_NO_UPDATE_CHECK=1 \
    DENO_NO_PROMPT=1 \
    NET_ANVIL_BIN=/usr/local/bin/anvil \
    NET_ANVIL_RUNTIME=binary \
    NET_STATS_BIND=0.0.0.0:8088 \
    NET_DATA_DIR=/var/lib/net-consumer/daemon

# anvil needs glibc >= 2.35 and libgcc_s: the Debian base of the Deno image has both; the
# version check runs it here, on the runtime's own libraries.
COPY --from=anvil /usr/local/bin/anvil /usr/local/bin/anvil
RUN /usr/local/bin/anvil --version \
  && mkdir -p /app /var/lib/net-consumer \
  && chown deno:deno /app /var/lib/net-consumer

WORKDIR /app
# The non-root user of the Deno image (uid 1993). Sources stay root-owned (read-only to it);
# it owns node_modules, DENO_DIR (/deno-dir) and the state directories.
USER deno

# Dependencies in their own layer: rebuilt only when deno.json or deno.lock change. One RUN
# fills DENO_DIR and node_modules together, so their files are hard links, stored once.
COPY deno.json deno.lock ./
RUN deno install --frozen

# The sources (.dockerignore keeps tests, benchmarks and local state out).
COPY . .
# Resolves every entry point against the lock (fails on drift); nothing is downloaded here.
RUN deno cache --frozen indexer/main.ts daemon/main.ts devnet/main.ts packaging/healthcheck.ts

# The indexer (NET_STATS_BIND), the daemon (NET_DAEMON_BIND, set it to 0.0.0.0:11435 to
# publish it; beyond loopback it requires an API key: NET_DAEMON_API_KEY, or the one it
# generates into $NET_DATA_DIR/api-key), the devnet's chain, routers, gateways and providers.
EXPOSE 8088 11435 8545 8601 8602 8701 8702 8801 8802 8803

# Readiness of the indexer (200 while it serves fresh data, 503 otherwise). compose.yaml
# gives the daemon and the devnet their own checks.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["deno", "run", "--no-config", "--allow-net=127.0.0.1:8088", "packaging/healthcheck.ts", "http://127.0.0.1:8088/health"]

# tini (from the Deno image) is PID 1: it reaps children and forwards signals.
ENTRYPOINT ["/tini", "--", "sh", "/app/packaging/entrypoint.sh"]
CMD ["indexer"]
