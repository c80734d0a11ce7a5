# Stand-in for postgres:<version>-bookworm, for machines that cannot pull it
# (packaging/stand-ins.sh builds it): Debian bookworm's PostgreSQL server behind an entry point
# that reads the official image's variables (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB,
# PGDATA, and PGPORT for the port).
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
RUN apt-get update -qq \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
  && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
  && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
  && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
USER postgres
STOPSIGNAL SIGINT
ENTRYPOINT ["sh", "/usr/local/bin/postgres-entrypoint.sh"]
