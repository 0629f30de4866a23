package live

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/wire"
)

// refusalCounts counts the peers refused in the node-to-node TLS
// handshake, by reason.
type refusalCounts struct {
	noCert, notMember, revoked, invalid atomic.Int64
}

func (r *refusalCounts) count(err error) {
	switch {
	case errors.Is(err, pki.ErrNotMember):
		r.notMember.Add(1)
	case errors.Is(err, pki.ErrRevoked):
		r.revoked.Add(1)
	case err != nil && strings.Contains(err.Error(), "no certificate"):
		r.noCert.Add(1)
	default:
		r.invalid.Add(1)
	}
}

var descPeerRefused = prometheus.NewDesc("overworld_peer_refusals_total",
	"Peers refused in the node-to-node TLS handshake, by reason: no_certificate, not_member (a valid certificate of a node not admitted to the cluster), revoked, invalid (another CA, expired, wrong usage, or naming another node than dialled).",
	[]string{"reason"}, nil)

func (r *refusalCounts) Describe(ch chan<- *prometheus.Desc) { ch <- descPeerRefused }

func (r *refusalCounts) Collect(ch chan<- prometheus.Metric) {
	for _, c := range []struct {
		reason string
		v      *atomic.Int64
	}{{"no_certificate", &r.noCert}, {"not_member", &r.notMember}, {"revoked", &r.revoked}, {"invalid", &r.invalid}} {
		ch <- prometheus.MustNewConstMetric(descPeerRefused, prometheus.CounterValue, float64(c.v.Load()), c.reason)
	}
}

// authorized wraps an admin handler. With an admin secret configured, a
// request must carry "Authorization: Bearer SECRET" (else 401). Without
// one, a sensitive path (every object's position, handoffs) answers only
// clients on a loopback address (else 403), and the others (metrics)
// answer anyone. Refusals are counted.
func (d *Daemon) authorized(h http.Handler, sensitive bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case d.adminKey != nil:
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), d.adminKey) != 1 {
				d.counters.AdminRefused.Add(1)
				w.Header().Set("WWW-Authenticate", `Bearer realm="overworld admin"`)
				http.Error(w, "unauthorized: this endpoint needs the admin bearer secret", http.StatusUnauthorized)
				return
			}
		case sensitive && !loopback(r.RemoteAddr):
			d.counters.AdminRefused.Add(1)
			http.Error(w, "forbidden: without listen.admin_token_file this endpoint answers loopback clients only", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Members returns the set of node IDs this node admits as peers (its
// static peer list and itself at start). A membership service may change
// it; call Revalidate after removing a node.
func (d *Daemon) Members() *Members { return d.members }

// Revalidate closes the accepted peer connections of nodes no longer
// admitted or whose certificate was revoked by node ID, and returns how
// many it closed.
func (d *Daemon) Revalidate() int {
	return d.mesh.CloseAccepted(d.members.Admitted)
}

// Reload reads the certificates again (what SIGHUP does): the node's
// certificate and the CA (tls.node_cert, tls.ca_cert), the revocation
// list (tls.revoked) and the WebSocket endpoint's certificate
// (tls.player_cert). Handshakes from now on use them; peers whose node a
// new revocation list names are disconnected. On an error nothing of
// that file changes, and the error says which file failed.
func (d *Daemon) Reload() error {
	var errs []error
	if err := d.ident.Reload(d.cfg.TLS.NodeCert, d.cfg.TLS.CACert, time.Now()); err != nil {
		errs = append(errs, fmt.Errorf("tls.node_cert/ca_cert: %w", err))
	}
	if d.cfg.TLS.Revoked != "" {
		if rv, err := pki.LoadRevocations(d.cfg.TLS.Revoked); err != nil {
			errs = append(errs, fmt.Errorf("tls.revoked: %w", err))
		} else {
			d.ident.SetRevocations(rv)
			d.revoked.Store(rv)
		}
	}
	if d.players != nil && d.players.wsCert != nil {
		if err := d.players.wsCert.reload(); err != nil {
			errs = append(errs, fmt.Errorf("tls.player_cert: %w", err))
		}
	}
	closed := d.mesh.CloseAccepted(func(id wire.NodeID) bool {
		rv := d.revoked.Load()
		return d.members.Admitted(id) && (rv == nil || !rv.RevokesNode(id))
	})
	d.log.Info("certificates reloaded", "errors", len(errs), "peers_disconnected", closed)
	return errors.Join(errs...)
}
