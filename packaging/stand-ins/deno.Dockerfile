# Stand-in for denoland/deno:<version> (Debian variant), for machines that cannot pull it
# (packaging/stand-ins.sh builds it). What the project relies on is the same: Debian bookworm,
# the same deno release (the npm package's binary), /tini, the `deno` user (uid 1993, no home),
# DENO_DIR=/deno-dir/ owned by it. The build machine's CA bundle is trusted, as behind any
# TLS-inspecting proxy.
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
COPY deno /usr/bin/deno
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN ln -s /usr/bin/tini /tini \
  && useradd --uid 1993 --user-group deno \
  && mkdir /deno-dir/ \
  && chown deno:deno /deno-dir/ \
  && deno --version
ENV DENO_DIR=/deno-dir/ \
    DENO_INSTALL_ROOT=/usr/local \
    DENO_TLS_CA_STORE=system
ENTRYPOINT ["/tini", "--", "deno"]
CMD ["--version"]
