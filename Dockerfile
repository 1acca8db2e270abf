# The edge service as a container image, built from the release archive that `npm pack` writes
# (edge-service-v<version>-linux-<arch>.tar.gz: one bundled program and SQLite for that platform;
# see docs/guide.md, "Publishing a release"). The build context is the directory holding it:
#   docker build -f Dockerfile --build-arg VERSION=0.2.0 -t edge-service:0.2.0 <pack destination>
#   docker buildx build --platform linux/amd64,linux/arm64 ...   (one archive per architecture)
#   docker run -e EDGE_API_KEY=... -v edge-data:/data -p 8080:8080 edge-service:0.2.0
# It listens on all interfaces, so it needs an API key (EDGE_API_KEY, or a named admin key made
# with `edge-service keys create`); EDGE_SECRETS_KEY seals secrets at rest; EDGE_DATABASE_URL
# (postgres://...) instead of /data for replicas on PostgreSQL.
FROM node:22-slim

ARG VERSION=0.2.0
# Set by buildx (amd64, arm64): the archive of the image's own platform.
ARG TARGETARCH
# ADD unpacks a local tar.gz: /opt/edge-service/{edge-service,edge-service.js,node_modules}.
ADD edge-service-v${VERSION}-linux-${TARGETARCH}.tar.gz /opt/edge-service/

# The SQLite data directory, owned by the unprivileged user that runs the service.
RUN mkdir /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 8080

# /readyz over plain HTTP, else over TLS (a container run with --tls-cert/--tls-key or EDGE_TLS_*):
# a probe on loopback that sends nothing secret, so the certificate (issued for the service's
# name) is not verified here; a mutual-TLS server answers probes without a client certificate.
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "const ask = (m, o) => new Promise((ok, no) => require(m).get({ host: '127.0.0.1', port: 8080, path: '/readyz', timeout: 2000, ...o }, (r) => { r.resume(); ok(r.statusCode); }).on('error', no).on('timeout', function () { this.destroy(new Error('timeout')); })); ask('http', {}).catch(() => ask('https', { rejectUnauthorized: false })).then((c) => process.exit(c === 200 ? 0 : 1), () => process.exit(1));"]

# glibc returns freed memory to the system only above a trim threshold that it raises as large
# blocks are freed; fixed here, the memory a flood of connections took is given back once V8 has
# collected it (docs/operating.md, "Timeouts and deadlines").
ENV MALLOC_TRIM_THRESHOLD_=131072

# node itself as PID 1: the service handles SIGTERM (finishes in-flight requests, closes the
# store, exits 0), so `docker stop` ends it cleanly within its default 10 s.
STOPSIGNAL SIGTERM
CMD ["node", "/opt/edge-service/edge-service.js", "serve", "--host", "0.0.0.0", "--port", "8080", "--data", "/data"]
