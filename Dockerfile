# Builds the three ODP services into one image; docker-compose.yml picks the
# binary per service.
FROM rust:1.88-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends build-essential && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --bins -p odp-api-server -p odp-pipeline -p odp-profiler-service

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates procps && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/odp-api-server /src/target/release/odp-pipeline /src/target/release/odp-profiler-service /usr/local/bin/
USER root
