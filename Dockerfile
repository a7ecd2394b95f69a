# Dockerfile — the locklab server image, used by docker-compose.yml for
# app1..app3.
#
# Two stages. The build stage is Debian bookworm with the -dev packages and
# CMake, the same packages bench/stack installs for a native build, and
# builds only the `locklab` target (Release). The runtime stage is
# bookworm-slim with just the shared libraries that binary loads, so the
# image carries no compiler and no headers. Debian in both stages means the
# container links against the very library versions the native stack and
# CI test.
#
# The server runs as an unprivileged user. Its arguments come from the
# compose file (`command:`), which points it at the mariadb, redis and
# zookeeper and etcd services by name. The health check speaks HTTP through bash's
# /dev/tcp so the image needs no curl.

FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        cmake make gcc libc6-dev pkg-config \
        libmicrohttpd-dev libhiredis-dev libmariadb-dev \
        libzookeeper-mt-dev libjansson-dev libcurl4-openssl-dev libevent-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build /build --target locklab -j"$(nproc)"

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        libmicrohttpd12 libhiredis0.14 libmariadb3 libzookeeper-mt2 libjansson4 libcurl4 \
        libevent-core-2.1-7 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --no-create-home --shell /usr/sbin/nologin locklab
COPY --from=build /build/locklab /usr/local/bin/locklab
USER locklab
EXPOSE 8000
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=5 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8000 && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/locklab"]
CMD ["--listen", "0.0.0.0", "--port", "8000"]
