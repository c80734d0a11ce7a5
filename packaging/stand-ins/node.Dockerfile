# Stand-in for node:<version>-bookworm-slim, for machines that cannot pull it
# (packaging/stand-ins.sh builds it): Debian bookworm's nodejs and npm. The build machine's CA
# bundle is trusted, as behind any TLS-inspecting proxy.
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN apt-get update -qq \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null \
  && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
  && node --version && npm --version
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    npm_config_cafile=/etc/ssl/certs/ca-certificates.crt
CMD ["node"]
