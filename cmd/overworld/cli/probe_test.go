package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestProbe: 200 exits 0 with the answer's first line; another status
// exits 1 naming it; a bad URL or timeout is a user error (2).
func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "not connected to the rendezvous (node 1)\n")
			return
		}
		io.WriteString(w, "ok\nmore\n")
	}))
	defer srv.Close()
	if code, out, errs := run(t, "", "probe", srv.URL+"/healthz"); code != 0 || out != "ok\n" || errs != "" {
		t.Errorf("healthy: %d %q %q", code, out, errs)
	}
	if code, out, errs := run(t, "", "probe", srv.URL+"/readyz"); code != 1 || out != "" || !strings.Contains(errs, "503") ||
		!strings.Contains(errs, "not connected to the rendezvous") {
		t.Errorf("not ready: %d %q %q", code, out, errs)
	}
	for _, args := range [][]string{{"probe", "127.0.0.1:7180/readyz"}, {"probe", "ftp://h/x"}, {"probe"},
		{"probe", "--timeout", "0s", srv.URL}, {"probe", "--timeout", "2m", srv.URL}} {
		if code, out, errs := run(t, "", args...); code != 2 || out != "" || strings.Count(errs, "\n") > 2 {
			t.Errorf("%v: %d %q %q, want a one-line user error", args, code, out, errs)
		}
	}
}
