package player

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// TestDialQUICVerifies dials a real QUIC listener on 127.0.0.1: with the
// node's certificate as the root the handshake succeeds, with another it
// fails.
func TestDialQUICVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	server, err := SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := SelfSignedTLS("127.0.0.1")
	ln, err := quic.ListenAddr("127.0.0.1:0", server, QUICConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			qc, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go func() { _, _ = qc.AcceptStream(ctx) }()
		}
	}()
	roots := func(c *tls.Config) *tls.Config {
		p := x509.NewCertPool()
		cert, _ := x509.ParseCertificate(c.Certificates[0].Certificate[0])
		p.AddCert(cert)
		return &tls.Config{RootCAs: p, ServerName: "127.0.0.1"}
	}
	conn, err := DialQUIC(ctx, ln.Addr().String(), roots(server))
	if err != nil {
		t.Fatalf("dial with the node's certificate as root: %v", err)
	}
	_ = conn.Close()
	if _, err := DialQUIC(ctx, ln.Addr().String(), roots(other)); err == nil {
		t.Fatal("dial accepted a certificate from another root")
	}
}
