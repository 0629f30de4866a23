package player

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestWSGarbage sends bytes that cannot start HTTP or TLS, and a request
// line that is not HTTP, to a WebSocket endpoint: the first is closed
// without an answer and counted, the second gets the HTTP server's 400.
func TestWSGarbage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tb := newTestbed(t, ctx, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, wrapped := tb.g.WSServer(ctx, ln)
	go func() { _ = srv.Serve(wrapped) }()
	defer srv.Close()
	answer := func(b []byte) string {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil && err != io.EOF {
			t.Fatalf("%q: %v", b, err)
		}
		return line
	}
	for i, b := range [][]byte{{0x00, 'G', 'E', 'T'}, {0xff, 0x16}, []byte("get / HTTP/1.1\r\n\r\n"), {'\r', '\n'}} {
		if got := answer(b); got != "" {
			t.Errorf("%q: answered %q, want the connection closed", b, got)
		}
		if n := tb.g.Stats().HTTPErrors; n != int64(i+1) {
			t.Errorf("%q: %d counted, want %d", b, n, i+1)
		}
	}
	if got := answer([]byte("NOT HTTP AT ALL\r\n\r\n")); !strings.HasPrefix(got, "HTTP/1.1 400") {
		t.Errorf("a request line that is not HTTP: answered %q, want a 400", got)
	}
}
