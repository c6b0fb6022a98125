# tooltap: multi-stage build. The builder compiles a release binary; the runtime image holds only
# that binary, its example config and recordings folder, and runs as an unprivileged user.
# rustls uses the `ring` provider with bundled webpki roots, so the runtime needs no OpenSSL and
# no system CA store (an extra CA bundle for private gateways is mounted and named in the config).

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# gcc is needed by ring and zstd-sys; the slim image has it through build-essential's subset.
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
# The manifest names test and bench targets, so the whole tree is copied (.dockerignore trims it).
COPY . .
# Stripped: the release profile keeps line tables for local profiling (about 87 MB); the image
# needs none of it (about 18 MB).
RUN CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo build --release --locked --bin tooltap

FROM debian:bookworm-slim AS runtime
# The same container as `scripts/image` builds without Docker (tests/it/image checks the two
# agree): user 10001, the binary at /usr/local/bin, the example config at /etc/tooltap, the
# recordings volume owned by the user.
RUN groupadd --system --gid 10001 tooltap \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/tooltap --create-home tooltap \
    && install -d -o 10001 -g 10001 /var/lib/tooltap/recordings
COPY --from=build /src/target/release/tooltap /usr/local/bin/tooltap
COPY config/tooltap.toml /etc/tooltap/tooltap.toml
WORKDIR /var/lib/tooltap
# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 10001:10001
# 8787: the proxy; 9787: the admin listener (metrics, /healthz, /readyz)
EXPOSE 8787 9787
VOLUME ["/var/lib/tooltap/recordings"]
# Listening on all interfaces and recording to the volume are the container's defaults through
# the environment, so any arguments (`docker run IMAGE proxy --upstream X`) keep them; flags
# still override them. A config file mounted at /etc/tooltap/tooltap.toml is read.
ENV TOOLTAP_CONFIG=/etc/tooltap/tooltap.toml TOOLTAP_LISTEN=0.0.0.0:8787 TOOLTAP_ADMIN_LISTEN=0.0.0.0:9787 TOOLTAP_RECORDINGS=/var/lib/tooltap/recordings
ENTRYPOINT ["/usr/local/bin/tooltap"]
CMD ["proxy"]
