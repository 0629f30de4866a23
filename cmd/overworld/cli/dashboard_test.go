package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDashboardBadInput: every malformed flag exits 2 with a message
// naming it, before any node is asked; an unreachable node exits 1.
func TestDashboardBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dashboard"}, "--cluster is required"},
		{[]string{"dashboard", "--cluster", "ftp://x:1"}, "--cluster"},
		{[]string{"dashboard", "--cluster", "http://x:1/metrics"}, "--cluster"},
		{[]string{"dashboard", "--cluster", "127.0.0.1:1", "--header", "no colon"}, "--header"},
		{[]string{"dashboard", "--cluster", "127.0.0.1:1", "--listen", "nohost"}, "--listen"},
		{[]string{"dashboard", "--cluster", "127.0.0.1:1", "stray"}, "unknown command"},
	} {
		code, _, stderr := runCLI(t, "", c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want 2 naming %s", c.args, code, stderr, c.want)
		}
	}
	// A node that answers, but is not an overworld admin endpoint.
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	code, _, stderr := runCLI(t, "", "dashboard", "--cluster", srv.URL)
	if code != 1 || !strings.Contains(stderr, "dashboard/info.json") {
		t.Errorf("a server without a dashboard: exit %d, %q; want 1 naming dashboard/info.json", code, stderr)
	}
}
