package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ClusterNode is one node of a cluster dashboard: how the dashboard shows
// it, and its admin endpoint's base URL (http://host:port).
type ClusterNode struct {
	DashboardNode
	Admin string
}

// NodeInfo asks the admin endpoint at admin (http://host:port) for its
// dashboard description and returns the node it serves (ID, city and
// coordinates), with Admin set. header (may be nil) is sent with the
// request: the credentials of an authenticated admin endpoint.
func NodeInfo(ctx context.Context, admin string, header http.Header) (ClusterNode, error) {
	admin = strings.TrimRight(admin, "/")
	info, err := Info(ctx, admin, header)
	if err != nil {
		return ClusterNode{}, err
	}
	for _, n := range info.Nodes {
		if n.ID == info.Self && info.Self != 0 {
			n.Base = nil
			return ClusterNode{DashboardNode: n, Admin: admin}, nil
		}
	}
	return ClusterNode{}, fmt.Errorf("%s/dashboard/info.json names no node of its own", admin)
}

// Info reads the dashboard description (/dashboard/info.json) of the
// admin endpoint at admin, sending header with the request.
func Info(ctx context.Context, admin string, header http.Header) (DashboardInfo, error) {
	admin = strings.TrimRight(admin, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/dashboard/info.json", nil)
	if err != nil {
		return DashboardInfo{}, fmt.Errorf("%s: %w", admin, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return DashboardInfo{}, fmt.Errorf("%s: %w", admin, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return DashboardInfo{}, fmt.Errorf("%s/dashboard/info.json: %s", admin, resp.Status)
	}
	var info DashboardInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&info); err != nil {
		return DashboardInfo{}, fmt.Errorf("%s/dashboard/info.json: %w", admin, err)
	}
	return info, nil
}

// proxied are the admin paths a cluster dashboard forwards: what the page
// reads, nothing that changes a node.
var proxied = map[string]bool{"metrics": true, "debug/world": true}

// ClusterDashboard serves the dashboard for several nodes from one origin:
// /dashboard, /dashboard.js and /dashboard/info.json (every node, polled
// under /node/ID/), and GET /node/ID/metrics and /node/ID/debug/world
// forwarded to that node's admin endpoint with header (the credentials of
// authenticated admin endpoints; may be nil), or else with the request's
// own Authorization header. worldW × worldH is the game world's extent.
func ClusterDashboard(title string, nodes []ClusterNode, worldW, worldH float64, header http.Header) http.Handler {
	mux := http.NewServeMux()
	info := DashboardInfo{Title: title, Every: 1000}
	info.World.W, info.World.H = worldW, worldH
	admin := map[uint32]string{}
	for _, n := range nodes {
		d := n.DashboardNode
		d.Base = Base(fmt.Sprintf("/node/%d", n.ID))
		info.Nodes = append(info.Nodes, d)
		admin[n.ID] = strings.TrimRight(n.Admin, "/")
	}
	Dashboard(mux, func() DashboardInfo { return info }, nil)
	client := &http.Client{Timeout: 10 * time.Second}
	mux.HandleFunc("GET /node/{id}/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
		base, ok := admin[uint32(id)]
		if err != nil || !ok || !proxied[r.PathValue("rest")] {
			http.NotFound(w, r)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, base+"/"+r.PathValue("rest"), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if a := r.Header.Get("Authorization"); a != "" {
			req.Header.Set("Authorization", a)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, fmt.Sprintf("node %d: %v", id, err), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/dashboard", http.StatusFound) })
	return mux
}
