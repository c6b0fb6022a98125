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
# Stripped: the release profile keeps line tables for local profiling (98.7 MB); the image needs
# none of it (about 15 MB).
RUN CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo build --release --locked --bin tooltap

FROM debian:bookworm-slim AS runtime
RUN useradd --system --uid 10001 --home-dir /var/lib/tooltap --create-home tooltap
COPY --from=build /src/target/release/tooltap /usr/local/bin/tooltap
COPY config/tooltap.toml /etc/tooltap/tooltap.toml
WORKDIR /var/lib/tooltap
USER tooltap
# 8787: the proxy; 9787: the admin listener (metrics, health)
EXPOSE 8787 9787
# Listening on all interfaces is the container's default through the environment, so any
# arguments (`docker run IMAGE proxy --upstream X`) keep it; --listen still overrides it.
ENV TOOLTAP_LISTEN=0.0.0.0:8787
ENTRYPOINT ["tooltap"]
CMD ["proxy"]
