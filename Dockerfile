# The overworld container image: the static binary on an empty base (no
# shell, no libc, no CA bundle: the binary needs none; every data set is
# embedded in it). Build the binary on the host first, then the image:
#
#   CGO_ENABLED=0 go build -trimpath -o bin/overworld ./cmd/overworld && docker build -t overworld .
#
# The node reads its configuration from /etc/overworld/node.toml (mount it
# with the CA certificate, the node's certificate and the coordinator's
# public key); see docs/deploy.md and deploy/compose/.
FROM scratch
COPY bin/overworld /overworld
# A numeric non-root user: the image has no /etc/passwd to name one.
USER 65532:65532
# node-to-node QUIC, membership gossip (TCP and UDP), player QUIC (UDP) and
# WebSocket (TCP), admin HTTP (TCP).
EXPOSE 7100/udp 7101/tcp 7101/udp 7102/udp 7103/tcp 7180/tcp
# Readiness: the admin endpoint's /readyz (frames run, peers reached);
# Kubernetes probes /healthz and /readyz over HTTP directly.
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/overworld", "probe", "--timeout", "2s", "http://127.0.0.1:7180/readyz"]
ENTRYPOINT ["/overworld"]
CMD ["node", "--config", "/etc/overworld/node.toml"]
