# Regent: a static binary on an empty base image.
# Build: docker build -t regent .
FROM rust:1-bookworm AS build
RUN rustup target add x86_64-unknown-linux-musl && apt-get update && apt-get install -y --no-install-recommends musl-tools && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --target x86_64-unknown-linux-musl \
 && cp target/x86_64-unknown-linux-musl/release/regent /regent

FROM scratch
COPY --from=build /regent /regent
USER 65532:65532
EXPOSE 6632
HEALTHCHECK --interval=10s --timeout=3s CMD ["/regent", "healthcheck"]
ENTRYPOINT ["/regent"]
CMD ["serve"]
