# syntax=docker/dockerfile:1
# MIO's container image: a static binary on distroless (CA certificates,
# tzdata, no shell), running as a non-root user. Build with `make image`
# (which passes VERSION and COMMIT); see docs/deploy.md.

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/mio ./cmd/mio \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/mio /usr/local/bin/mio
# MIO_DATA_DIR holds file:// blobs when MIO_BLOB_URL is not set: mount a
# volume there (or use gs://). The admin listener must leave loopback in a
# container; keep it off the public network (see docs/deploy.md).
COPY --from=build --chown=65532:65532 /out/data /var/lib/mio
ENV MIO_ENV=prod \
    MIO_HTTP_ADDR=:8080 \
    MIO_ADMIN_ADDR=:9090 \
    MIO_DATA_DIR=/var/lib/mio
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["mio"]
CMD ["serve"]
