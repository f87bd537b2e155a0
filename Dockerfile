# Regent: a static binary on an empty base image.
# Build: docker build -t regent .
# The build command is the one scripts/static-check proves (docs/operations.md, "Static binary").
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN RUSTFLAGS='-C target-feature=+crt-static --cfg getrandom_backend="linux_getrandom"' \
    cargo build --release --locked --target x86_64-unknown-linux-gnu \
 && cp target/x86_64-unknown-linux-gnu/release/regent /regent

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /regent /regent
USER 65532:65532
EXPOSE 6632
HEALTHCHECK --interval=10s --timeout=3s CMD ["/regent", "healthcheck"]
ENTRYPOINT ["/regent"]
CMD ["serve"]
