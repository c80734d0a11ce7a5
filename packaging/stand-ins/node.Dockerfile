# Stand-in for node:<version>-bookworm-slim, for machines that cannot pull it
# (packaging/stand-ins.sh builds it): Debian bookworm with the same Node.js release (the binary
# of npm's node-linux-<arch> package, which is the official build) and npm's own `npm` package
# in the places the official image has them. The build machine's CA bundle is trusted, as
# behind any TLS-inspecting proxy.
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
  && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
  && node --version && npm --version
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    npm_config_cafile=/etc/ssl/certs/ca-certificates.crt \
    npm_config_update_notifier=false
CMD ["node"]
