package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live/agones"
	"github.com/overworld/overworld/live/plane"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"
)

const chartDir = "overworld"

// obj is one rendered Kubernetes object.
type obj map[string]any

func (o obj) kind() string { s, _ := o["kind"].(string); return s }
func (o obj) name() string { return str(o, "metadata", "name") }

// get walks o along path (map keys, or list indexes as ints).
func get(o any, path ...any) any {
	if v, ok := o.(obj); ok {
		o = map[string]any(v)
	}
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := o.(map[string]any)
			if !ok {
				return nil
			}
			o = m[k]
		case int:
			l, ok := o.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			o = l[k]
		}
	}
	return o
}

func str(o any, path ...any) string { s, _ := get(o, path...).(string); return s }

func num(o any, path ...any) float64 { f, _ := get(o, path...).(float64); return f }

// renderRaw renders the chart with values over its defaults, as release
// "ow" in namespace "games": template name → text.
func renderRaw(values map[string]any) (map[string]string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "ow", Namespace: "games", IsInstall: true, Revision: 1},
		chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, vals)
}

func renderErr(values map[string]any) error {
	_, err := renderRaw(values)
	return err
}

// render renders the chart (renderRaw) and returns its objects by kind.
func render(t *testing.T, values map[string]any) map[string][]obj {
	t.Helper()
	out, err := renderRaw(values)
	if err != nil {
		t.Fatalf("the chart does not render: %v", err)
	}
	byKind := map[string][]obj{}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(out[n], "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var o obj
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("%s: not YAML: %v\n%s", n, err, doc)
			}
			if o == nil {
				continue
			}
			if o.kind() == "" || o.name() == "" {
				t.Fatalf("%s: an object without kind or name:\n%s", n, doc)
			}
			byKind[o.kind()] = append(byKind[o.kind()], o)
		}
	}
	return byKind
}

// TestLint: Helm's linter finds no error in the chart.
func TestLint(t *testing.T) {
	l := lint.All(chartDir, nil, "games", false)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		}
	}
}

// TestRenderDefaults renders the default values and checks every object.
func TestRenderDefaults(t *testing.T) {
	objs := render(t, nil)
	counts := map[string]int{}
	for k, l := range objs {
		counts[k] = len(l)
	}
	want := map[string]int{"ConfigMap": 5, "Fleet": 3, "FleetAutoscaler": 2, "Deployment": 1, "Service": 3, "ServiceAccount": 1,
		"Role": 1, "RoleBinding": 1, "PodMonitor": 1, "ServiceMonitor": 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("kinds %v, want %v", counts, want)
	}

	// The rendezvous' one-replica Fleet, then one scaling Fleet per region.
	for i, f := range objs["Fleet"] {
		fleet := []string{"rendezvous", "eu-west", "us-east"}[i]
		region := []string{"eu-west", "eu-west", "us-east"}[i]
		enrolls := fleet != "rendezvous"
		if f.name() != "ow-"+fleet || str(f, "apiVersion") != "agones.dev/v1" {
			t.Errorf("fleet %s (%s)", f.name(), str(f, "apiVersion"))
		}
		if want := map[bool]float64{false: 1, true: 2}[enrolls]; num(f, "spec", "replicas") != want {
			t.Errorf("fleet %s: %v replicas, want %v", f.name(), get(f, "spec", "replicas"), want)
		}
		// The region labels the fleet, its GameServers and their pods
		// (the node's agent labels its GameServer agones.dev/sdk-region
		// too, from its configuration: see TestConfigsParse).
		for _, path := range [][]any{{"metadata"}, {"spec", "template", "metadata"}, {"spec", "template", "spec", "template", "metadata"}} {
			if got := str(get(f, path...), "labels", "overworld.dev/region"); got != region {
				t.Errorf("fleet %s: %v labelled region %q, want %q", f.name(), path, got, region)
			}
		}
		spec := get(f, "spec", "template", "spec")
		ports := map[string]string{}
		for _, p := range get(spec, "ports").([]any) {
			ports[str(p, "name")] = fmt.Sprintf("%v/%s/%s", num(p, "containerPort"), str(p, "protocol"), str(p, "portPolicy"))
		}
		if fmt.Sprint(ports) != "map[node:7100/UDP/Dynamic player-quic:7102/UDP/Dynamic player-ws:7103/TCP/Dynamic]" {
			t.Errorf("fleet %s: ports %v", f.name(), ports)
		}
		if num(spec, "counters", "players", "capacity") != 64 || num(spec, "health", "periodSeconds") != 5 {
			t.Errorf("fleet %s: counters %v, health %v", f.name(), get(spec, "counters"), get(spec, "health"))
		}
		pod := get(spec, "template", "spec")
		c := get(pod, "containers", 0)
		args := "[node --config /etc/overworld/node/node.toml]"
		if enrolls {
			// The regions have sites: their game servers ask to be
			// placement targets, polled at the pod's address.
			args = "[node --config /etc/overworld/node/node.toml --enroll http://ow-control.games.svc:7300 --enroll-secret /etc/overworld/enroll/secret --enroll-admin http://$(POD_IP):7180]"
			if str(c, "env", 0, "name") != "POD_IP" || str(c, "env", 0, "valueFrom", "fieldRef", "fieldPath") != "status.podIP" {
				t.Errorf("fleet %s: env %v, want POD_IP from status.podIP", f.name(), get(c, "env"))
			}
		} else if get(c, "env") != nil {
			t.Errorf("fleet %s: env %v", f.name(), get(c, "env"))
		}
		if str(c, "image") != "overworld:latest" || fmt.Sprint(get(c, "args")) != args {
			t.Errorf("fleet %s: container %v %v, want args %s", f.name(), get(c, "image"), get(c, "args"), args)
		}
		// The player ports bear the names the node reads its player
		// endpoints by from the GameServer.
		if ports[agones.PlayerPortQUIC] == "" || ports[agones.PlayerPortWS] == "" {
			t.Errorf("fleet %s: no port named %s or %s: %v", f.name(), agones.PlayerPortQUIC, agones.PlayerPortWS, ports)
		}
		if str(c, "readinessProbe", "httpGet", "path") != "/readyz" || str(c, "livenessProbe", "httpGet", "path") != "/healthz" ||
			str(c, "readinessProbe", "httpGet", "port") != "admin" || num(c, "ports", 0, "containerPort") != 7180 {
			t.Errorf("fleet %s: probes %v %v", f.name(), get(c, "readinessProbe"), get(c, "livenessProbe"))
		}
		if num(pod, "securityContext", "runAsUser") != 65532 || get(pod, "securityContext", "runAsNonRoot") != true ||
			get(c, "securityContext", "readOnlyRootFilesystem") != true {
			t.Errorf("fleet %s: security context %v %v", f.name(), get(pod, "securityContext"), get(c, "securityContext"))
		}
		if num(pod, "terminationGracePeriodSeconds") < 10 {
			t.Errorf("fleet %s: %v s to drain", f.name(), get(pod, "terminationGracePeriodSeconds"))
		}
		tls := map[bool]string{false: "overworld-tls-rendezvous", true: "overworld-tls-nodes"}[enrolls]
		if str(pod, "volumes", 0, "configMap", "name") != "ow-node-"+fleet || str(pod, "volumes", 1, "secret", "secretName") != tls ||
			str(pod, "volumes", 2, "secret", "secretName") != "overworld-admin" || str(c, "volumeMounts", 2, "mountPath") != "/etc/overworld/admin" {
			t.Errorf("fleet %s: volumes %v", f.name(), get(pod, "volumes"))
		}
		// A game server mounts only its region's enrollment secret (as
		// the file --enroll-secret names) and keeps its certificate on a
		// volume of its pod (where its configuration's node_cert is).
		vols, mounts := map[string]any{}, map[string]string{}
		for _, v := range get(pod, "volumes").([]any) {
			vols[str(v, "name")] = v
		}
		for _, m := range get(c, "volumeMounts").([]any) {
			mounts[str(m, "name")] = str(m, "mountPath")
		}
		if !enrolls {
			if vols["enroll"] != nil || vols["identity"] != nil {
				t.Errorf("fleet %s: the rendezvous mounts %v", f.name(), vols)
			}
			continue
		}
		if str(vols["enroll"], "secret", "secretName") != "overworld-enroll" || fmt.Sprint(get(vols["enroll"], "secret", "items")) != "[map[key:"+region+" path:secret]]" ||
			mounts["enroll"] != "/etc/overworld/enroll" || get(vols["identity"], "emptyDir") == nil || mounts["identity"] != "/var/lib/overworld" {
			t.Errorf("fleet %s: enrollment volumes %v mounted at %v", f.name(), vols, mounts)
		}
	}

	for i, a := range objs["FleetAutoscaler"] {
		region := []string{"eu-west", "us-east"}[i]
		w := get(a, "spec", "policy", "webhook", "service")
		if str(a, "spec", "fleetName") != "ow-"+region || str(a, "spec", "policy", "type") != "Webhook" ||
			str(w, "name") != "ow-control" || str(w, "namespace") != "games" || str(w, "path") != "/autoscale" || num(w, "port") != 7300 {
			t.Errorf("autoscaler %s: %v", a.name(), get(a, "spec"))
		}
	}

	d := objs["Deployment"][0]
	pod := get(d, "spec", "template", "spec")
	c := get(pod, "containers", 0)
	if str(pod, "serviceAccountName") != "ow-control" || fmt.Sprint(get(c, "args")) != "[control --config /etc/overworld/control/plane.toml]" ||
		str(c, "readinessProbe", "httpGet", "path") != "/readyz" || str(c, "livenessProbe", "httpGet", "path") != "/healthz" ||
		num(c, "ports", 0, "containerPort") != 7300 {
		t.Errorf("control plane deployment: %v", pod)
	}
	// The plane mounts the CA with its key, every region's enrollment
	// secret and a volume for the IDs it gave.
	pvols := map[string]string{}
	for _, v := range get(pod, "volumes").([]any) {
		pvols[str(v, "name")] = str(v, "secret", "secretName")
		if get(v, "emptyDir") != nil {
			pvols[str(v, "name")] = "emptyDir"
		}
	}
	pmounts := map[string]string{}
	for _, m := range get(c, "volumeMounts").([]any) {
		pmounts[str(m, "name")] = str(m, "mountPath")
	}
	if pvols["ca"] != "overworld-tls-ca" || pvols["enroll"] != "overworld-enroll" || pvols["state"] != "emptyDir" ||
		pmounts["ca"] != "/etc/overworld/ca" || pmounts["enroll"] != "/etc/overworld/enroll" || pmounts["state"] != "/var/lib/overworld" {
		t.Errorf("control plane volumes %v mounted at %v", pvols, pmounts)
	}
	sel := get(d, "spec", "selector", "matchLabels").(map[string]any)
	labels := get(d, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("the deployment's selector %s=%v does not match its pods (%v)", k, v, labels[k])
		}
	}
	services := map[string]obj{}
	for _, o := range objs["Service"] {
		services[o.name()] = o
	}
	for k, v := range get(services["ow-control"], "spec", "selector").(map[string]any) {
		if labels[k] != v {
			t.Errorf("the service's selector %s=%v does not match the control plane's pods", k, v)
		}
	}
	// The headless Services select node pods: the gossip seed every node,
	// the rendezvous only the rendezvous'.
	for name, fleets := range map[string][]string{"ow-gossip": {"ow-rendezvous", "ow-eu-west", "ow-us-east"}, "ow-rendezvous": {"ow-rendezvous"}} {
		svc := services[name]
		if str(svc, "spec", "clusterIP") != "None" || get(svc, "spec", "publishNotReadyAddresses") != true {
			t.Errorf("%s: %v", name, get(svc, "spec"))
		}
		var selected []string
		for _, f := range objs["Fleet"] {
			podLabels := get(f, "spec", "template", "spec", "template", "metadata", "labels").(map[string]any)
			match := true
			for k, v := range get(svc, "spec", "selector").(map[string]any) {
				match = match && podLabels[k] == v
			}
			if match {
				selected = append(selected, f.name())
			}
		}
		if fmt.Sprint(selected) != fmt.Sprint(fleets) {
			t.Errorf("%s selects the pods of %v, want %v", name, selected, fleets)
		}
	}

	role := objs["Role"][0]
	var rules []string
	for _, r := range get(role, "rules").([]any) {
		rules = append(rules, fmt.Sprintf("%v %v %v", get(r, "apiGroups"), get(r, "resources"), get(r, "verbs")))
	}
	for _, want := range []string{"[agones.dev] [gameservers fleets] [get list watch]", "[allocation.agones.dev] [gameserverallocations] [create]"} {
		if !slices.Contains(rules, want) {
			t.Errorf("role rules %q lack %q", rules, want)
		}
	}
	rb := objs["RoleBinding"][0]
	if str(rb, "roleRef", "name") != role.name() || str(rb, "subjects", 0, "name") != "ow-control" || str(rb, "subjects", 0, "kind") != "ServiceAccount" {
		t.Errorf("role binding %v", rb)
	}

	pm := objs["PodMonitor"][0]
	if str(pm, "spec", "podMetricsEndpoints", 0, "port") != "admin" || str(pm, "spec", "selector", "matchLabels", "app.kubernetes.io/component") != "node" ||
		str(pm, "spec", "podMetricsEndpoints", 0, "authorization", "credentials", "name") != "overworld-admin" {
		t.Errorf("pod monitor %v", get(pm, "spec"))
	}
	if node := get(objs["Fleet"][0], "spec", "template", "spec", "template", "metadata", "labels", "app.kubernetes.io/component"); node != "node" {
		t.Errorf("the node pods are labelled component=%v: the pod monitor selects none", node)
	}
	sm := objs["ServiceMonitor"][0]
	if str(sm, "spec", "endpoints", 0, "port") != "http" {
		t.Errorf("service monitor %v", get(sm, "spec"))
	}
}

// TestConfigsParse: the node configurations the chart renders are ones
// the daemon accepts: the Agones agent on with the region, directory
// discovery on the rendezvous (node 1, its certificate from its Secret; a
// static peer of the others, at its headless Service), gossip seeded by
// the gossip Service; the regions' game servers with their certificate on
// their pod's volume (written at enrollment) and an id from their range
// (replaced by the one enrolled for). The control plane's file, with the
// two nodes an operator lists, is one the plane runs with: it enrolls
// each region's game servers with that region's secret only, for IDs of
// its range, and sizes fleets within the autoscaler's bounds.
func TestConfigsParse(t *testing.T) {
	rdv := "[{ID:1 Addr:ow-rendezvous.games.svc:7100 City: PlayerQUIC: PlayerWS:}]"
	want := map[string]struct {
		id            uint32
		region, peers string
		cert          string
	}{"rendezvous": {1, "eu-west", "[]", "/etc/overworld/tls/node.pem"},
		"eu-west": {100, "eu-west", rdv, "/var/lib/overworld/node.pem"},
		"us-east": {1100, "us-east", rdv, "/var/lib/overworld/node.pem"}}
	seen := 0
	for _, cm := range render(t, nil)["ConfigMap"] {
		if toml := str(cm, "data", "plane.toml"); toml != "" {
			if err := parsePlaneConfig(toml); err != nil {
				t.Errorf("%s: %v\n%s", cm.name(), err, toml)
			}
			s, cfg, secrets := planeFromChart(t, toml, []string{"eu-west", "us-east"})
			// It lists no node: it starts, ready, and refuses joins
			// until an enrolled game server is a placement target.
			if len(cfg.Nodes) != 0 {
				t.Errorf("plane nodes %+v, want none (the enrolled game servers are the targets)", cfg.Nodes)
			}
			s.PollOnce(context.Background())
			h := s.Handler()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
			if w.Code != http.StatusOK {
				t.Errorf("/readyz without targets: %d %s", w.Code, w.Body)
			}
			w = httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/join", strings.NewReader(`{"player": "p1", "pings": [{"node": 100, "rtt_ms": 5}]}`)))
			if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "no game server is a placement target yet") {
				t.Errorf("a join without targets: %d %s", w.Code, w.Body)
			}
			// Each region's fleet is sized from its enrolled game
			// servers (the regions have sites), within its bounds.
			if a := cfg.Autoscale; a == nil || a.Config.Min != 1 || a.Config.Max != 8 || a.Config.Buffer != 1 ||
				a.Config.PlayersCounter != "players" || a.Config.MaxLoad != 64 ||
				fmt.Sprint(a.Regions) != "map[games/ow-eu-west:eu-west games/ow-us-east:us-east]" ||
				fmt.Sprint(a.Config.Fleets) != "map[games/ow-eu-west:{1 8} games/ow-us-east:{1 8}]" {
				t.Errorf("plane autoscale %+v", a)
			}
			if h := cfg.Hosts; h == nil || len(h.Enroll) != 2 || h.Validity != 24*time.Hour || h.Rate != 20 || h.Burst != 40 || h.StateFile == "" ||
				h.ForgetAfter != 10*time.Minute || h.Enroll[0].Site != "London" || h.Enroll[1].Site != "New York" {
				t.Fatalf("plane hosts %+v", h)
			}
			for _, c := range []struct {
				gs, region, secret string
				want               uint32
			}{{"ow-eu-west-a1b2c", "eu-west", "eu-west", 100}, {"ow-eu-west-d3e4f", "eu-west", "eu-west", 101},
				{"ow-us-east-g5h6i", "us-east", "us-east", 1100}, {"ow-us-east-j7k8l", "us-east", "eu-west", 0}} {
				id, err := enrollWith(t, s, c.gs, c.region, secrets[c.secret])
				if id != c.want || (c.want == 0) != (err != nil) {
					t.Errorf("%s of %s with %s's secret: node %d, %v; want %d", c.gs, c.region, c.secret, id, err, c.want)
				}
			}
			// A game server of a region with a site enrolls with a
			// placement.
			pl := plane.Placement{Admin: "http://10.4.0.17:7180", QUIC: "198.51.100.20:7602", WS: "ws://198.51.100.20:7603/", Capacity: 64}
			if id, err := enrollPlaced(t, s, "ow-eu-west-p1a2c", "eu-west", secrets["eu-west"], pl); err != nil || id != 102 {
				t.Errorf("a placed enrollment: node %d, %v", id, err)
			}
			continue
		}
		toml := str(cm, "data", "node.toml")
		if toml == "" {
			continue
		}
		seen++
		cfg, err := parseNodeConfig(toml)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cm.name(), err, toml)
		}
		fleet := strings.TrimPrefix(cm.name(), "ow-node-")
		w := want[fleet]
		if cfg.ID != w.id || fmt.Sprintf("%+v", cfg.Peers) != w.peers || cfg.Discovery.Arch != "directory" || cfg.Discovery.Rendezvous != 1 {
			t.Errorf("%s: id %d, peers %+v, discovery %+v", cm.name(), cfg.ID, cfg.Peers, cfg.Discovery)
		}
		if !cfg.Agones.Enabled || cfg.Agones.Region != w.region || cfg.Listen.Admin != "0.0.0.0:7180" || cfg.TLS.NodeCert != w.cert ||
			cfg.Listen.AdminTokenFile != "/etc/overworld/admin/admin.token" {
			t.Errorf("%s: %+v", cm.name(), cfg)
		}
		if m := cfg.Membership; m.Gossip != "0.0.0.0:7101" || fmt.Sprint(m.Seeds) != "[ow-gossip.games.svc:7101]" || m.KeyFile != "/etc/overworld/tls/gossip.key" {
			t.Errorf("%s: membership %+v", cm.name(), m)
		}
		// No player endpoint is advertised: a node gossips, and an
		// enrolling one asks to be placed at, the GameServer's address
		// and host ports.
		if m := cfg.Membership; m.PlayerQUIC != "" || m.PlayerWS != "" || cfg.Players.MaxPlayers != 64 {
			t.Errorf("%s: player endpoints %q %q, capacity %d", cm.name(), m.PlayerQUIC, m.PlayerWS, cfg.Players.MaxPlayers)
		}
	}
	if seen != 3 {
		t.Errorf("%d node configurations, want 3", seen)
	}
}

// TestRenderRefuses: values that cannot make a cluster fail to render,
// naming the problem.
func TestRenderRefuses(t *testing.T) {
	region := func(name string, first, last int) map[string]any {
		return map[string]any{"name": name, "replicas": 2, "nodeIDs": map[string]any{"first": first, "last": last}}
	}
	for _, tc := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"rendezvous": map[string]any{"region": "mars"}}, `rendezvous.region "mars": no region of that name`},
		{map[string]any{"rendezvous": "eu-west"}, "rendezvous: want {region, nodeID}"},
		{map[string]any{"rendezvous": map[string]any{"nodeID": nil}}, "rendezvous.nodeID is required"},
		{map[string]any{"regions": []any{map[string]any{"name": "eu-west", "replicas": 1}}}, "regions[eu-west].nodeIDs {first, last} is required"},
		{map[string]any{"regions": []any{region("eu-west", 100, 50)}}, "regions[eu-west].nodeIDs 100…50"},
		{map[string]any{"regions": []any{region("eu-west", 1, 50)}}, "hold the rendezvous' ID 1"},
		{map[string]any{"regions": []any{region("eu-west", 100, 200), region("us-east", 150, 300)}}, "regions[us-east].nodeIDs 150…300 overlap regions[eu-west]'s 100…200"},
		{map[string]any{"regions": []any{region("eu-west", 100, 200), region("rendezvous", 300, 400)}}, `regions[].name "rendezvous"`},
		{map[string]any{"controlPlane": map[string]any{"enabled": false}}, "controlPlane.enabled must be true"},
		{map[string]any{"regions": []any{map[string]any{"name": "eu-west", "nodeIDs": map[string]any{"first": 100, "last": 200}, "minReplicas": 5, "maxReplicas": 3}}},
			"regions[eu-west] replicas 5…3"},
		{map[string]any{"regions": []any{map[string]any{"name": "eu-west", "nodeIDs": map[string]any{"first": 100, "last": 200}, "maxReplicas": 0}}},
			"regions[eu-west] replicas 1…0"},
		{map[string]any{"regions": []any{map[string]any{"name": "eu-west", "nodeIDs": map[string]any{"first": 100, "last": 200}, "site": 3}}},
			"regions[eu-west].site"},
		{map[string]any{"regions": []any{region("eu-west", 100, 200)}}, "controlPlane.config lists 0 [[nodes]] and no region has a site"},
	} {
		if err := renderErr(tc.values); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.values, err, tc.want)
		}
	}
	// No region with a site but 2 [[nodes]] listed: the plane has its
	// targets.
	nodes := "listen = \"0.0.0.0:7300\"\n"
	for i := range 2 {
		nodes += fmt.Sprintf("[[nodes]]\nid = %d\nsite = \"London\"\ncapacity = 8\nadmin = \"http://10.0.0.%d:7180\"\nplayer_quic = \"10.0.0.%d:7102\"\n", 9000+i, i+1, i+1)
	}
	if err := renderErr(map[string]any{"regions": []any{region("eu-west", 100, 200)}, "controlPlane": map[string]any{"config": nodes}}); err != nil {
		t.Errorf("2 nodes listed, no site: %v", err)
	}
}

// TestRenderOptions: turning the optional parts off removes them (the
// autoscaler: its objects and the plane's webhook); more regions give
// more fleets.
func TestRenderOptions(t *testing.T) {
	objs := render(t, map[string]any{"monitoring": map[string]any{"enabled": false}, "autoscaler": map[string]any{"enabled": false},
		"grafana": map[string]any{"dashboard": false}, "rendezvous": map[string]any{"region": "asia", "nodeID": 7},
		"regions": []any{map[string]any{"name": "asia", "replicas": 3, "nodeIDs": map[string]any{"first": 10, "last": 19}, "site": "Tokyo"},
			map[string]any{"name": "eu", "replicas": 1, "nodeIDs": map[string]any{"first": 20, "last": 29}},
			map[string]any{"name": "us", "replicas": 1, "nodeIDs": map[string]any{"first": 30, "last": 39}}}})
	for _, k := range []string{"FleetAutoscaler", "PodMonitor", "ServiceMonitor"} {
		if len(objs[k]) != 0 {
			t.Errorf("%d %s with it turned off", len(objs[k]), k)
		}
	}
	if len(objs["Fleet"]) != 4 || num(objs["Fleet"][0], "spec", "replicas") != 1 || num(objs["Fleet"][1], "spec", "replicas") != 3 {
		t.Errorf("fleets %v", objs["Fleet"])
	}
	for _, cm := range objs["ConfigMap"] {
		if toml := str(cm, "data", "plane.toml"); regexp.MustCompile(`(?m)^\[autoscale\]`).MatchString(toml) {
			t.Errorf("the plane serves the webhook with the autoscaler off:\n%s", toml)
		}
	}
}

// TestRenderRegions: a list of regions gives the rendezvous' Fleet and
// one scaling Fleet and FleetAutoscaler per region, each fleet's
// GameServers labelled with its region and running its node
// configuration, several replicas from one configuration; the plane
// enrolls each region for its IDs and answers the autoscalers within the
// values' bounds.
func TestRenderRegions(t *testing.T) {
	regions := []string{"asia", "eu", "us"}
	objs := render(t, map[string]any{"rendezvous": map[string]any{"region": "eu", "nodeID": 5},
		"autoscaler": map[string]any{"minReplicas": 2, "maxReplicas": 20, "buffer": 2},
		"regions": []any{map[string]any{"name": "asia", "replicas": 2, "nodeIDs": map[string]any{"first": 100, "last": 199}, "site": "Tokyo",
			"minReplicas": 0, "maxReplicas": 5},
			map[string]any{"name": "eu", "replicas": 3, "nodeIDs": map[string]any{"first": 200, "last": 299}, "site": "Paris", "maxReplicas": 30},
			map[string]any{"name": "us", "replicas": 4, "nodeIDs": map[string]any{"first": 300, "last": 399}}}})
	if len(objs["Fleet"]) != len(regions)+1 || len(objs["FleetAutoscaler"]) != len(regions) {
		t.Fatalf("%d fleets and %d autoscalers for %d regions", len(objs["Fleet"]), len(objs["FleetAutoscaler"]), len(regions))
	}
	if rv := objs["Fleet"][0]; rv.name() != "ow-rendezvous" || num(rv, "spec", "replicas") != 1 ||
		str(rv, "spec", "template", "spec", "template", "metadata", "labels", "overworld.dev/region") != "eu" {
		t.Errorf("rendezvous fleet %v", rv)
	}
	for i, region := range regions {
		f, a := objs["Fleet"][i+1], objs["FleetAutoscaler"][i]
		if f.name() != "ow-"+region || str(a, "spec", "fleetName") != f.name() || num(f, "spec", "replicas") != float64(i+2) {
			t.Errorf("region %s: fleet %s of %v replicas, autoscaler for %s", region, f.name(), get(f, "spec", "replicas"), str(a, "spec", "fleetName"))
		}
		pod := get(f, "spec", "template", "spec", "template")
		if str(pod, "metadata", "labels", "overworld.dev/region") != region || str(pod, "spec", "volumes", 0, "configMap", "name") != "ow-node-"+region {
			t.Errorf("region %s: pods labelled %v, configuration %v", region, get(pod, "metadata", "labels"), get(pod, "spec", "volumes", 0))
		}
		if rdv := str(pod, "metadata", "labels", "overworld.dev/rendezvous"); rdv != "false" {
			t.Errorf("region %s: rendezvous label %q", region, rdv)
		}
		// Only a region with a site asks for placement.
		args := fmt.Sprint(get(pod, "spec", "containers", 0, "args"))
		if strings.Contains(args, "--enroll-admin") != (region != "us") {
			t.Errorf("region %s: args %s", region, args)
		}
	}
	ids := map[string]string{}
	for _, cm := range objs["ConfigMap"] {
		if toml := str(cm, "data", "plane.toml"); toml != "" {
			s, cfg, secrets := planeFromChart(t, toml, regions)
			if a := cfg.Autoscale.Config; a.Min != 2 || a.Max != 20 || a.Buffer != 2 ||
				fmt.Sprint(a.Fleets) != "map[games/ow-asia:{0 5} games/ow-eu:{2 30} games/ow-us:{2 20}]" {
				t.Errorf("autoscale %+v: want 2…20, buffer 2, and each region's bounds", a)
			}
			if r := cfg.Autoscale.Regions; fmt.Sprint(r) != "map[games/ow-asia:asia games/ow-eu:eu]" {
				t.Errorf("fleets sized from their enrolled game servers: %v, want asia's and eu's (us has no site)", r)
			}
			if e := cfg.Hosts.Enroll; e[0].Site != "Tokyo" || e[1].Site != "Paris" || e[2].Site != "" {
				t.Errorf("sites %+v", e)
			}
			for i, region := range regions {
				e := cfg.Hosts.Enroll[i]
				if e.Region != region || e.First != uint32(100*(i+1)) || e.Last != uint32(100*(i+1)+99) {
					t.Errorf("enroll %+v", e)
				}
				// Two game servers of one configuration: two IDs.
				a, errA := enrollWith(t, s, "ow-"+region+"-aaaaa", region, secrets[region])
				b, errB := enrollWith(t, s, "ow-"+region+"-bbbbb", region, secrets[region])
				if errA != nil || errB != nil || a != e.First || b != e.First+1 {
					t.Errorf("region %s: game servers enrolled as %d (%v) and %d (%v)", region, a, errA, b, errB)
				}
			}
			continue
		}
		if fleet, ok := strings.CutPrefix(cm.name(), "ow-node-"); ok {
			m := regexp.MustCompile(`(?m)^id = (\d+)`).FindStringSubmatch(str(cm, "data", "node.toml"))
			if m == nil {
				t.Fatalf("%s: no id in node.toml", cm.name())
			}
			ids[fleet] = m[1]
		}
	}
	if fmt.Sprint(ids) != "map[asia:100 eu:200 rendezvous:5 us:300]" {
		t.Errorf("node IDs by fleet %v", ids)
	}
}

// TestDashboard: the Grafana dashboard is valid JSON, has the panels the
// operators read, and queries only metrics the nodes and the control
// plane export.
func TestDashboard(t *testing.T) {
	objs := render(t, nil)
	var raw string
	for _, cm := range objs["ConfigMap"] {
		if s := str(cm, "data", "overworld.json"); s != "" {
			raw = s
			if get(cm, "metadata", "labels", "grafana_dashboard") != "1" {
				t.Errorf("dashboard ConfigMap labels %v", get(cm, "metadata", "labels"))
			}
		}
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(raw), &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	exported := exportedMetrics(t)
	var titles []string
	name := regexp.MustCompile(`overworld_[a-z_]+`)
	for _, p := range dash.Panels {
		titles = append(titles, p.Title)
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				if !exported[base] {
					t.Errorf("panel %q queries %s, which no node exports", p.Title, m)
				}
			}
		}
	}
	for _, want := range []string{"Players per node", "Bandwidth by traffic class", "Frame time", "Failovers", "Migrations",
		"Replica staleness", "Missing replicas and discovery latency", "Control plane: placement", "Control plane: nodes and instances"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q (panels %q)", want, titles)
		}
	}
}

// exportedMetrics reads the metric names the live packages register:
// the nodes' ("overworld_..." names in the source) and the control
// plane's (newMetric("...") in live/plane, prefixed overworld_plane_).
func exportedMetrics(t *testing.T) map[string]bool {
	m := map[string]bool{}
	for _, src := range []struct {
		glob, prefix string
		re           *regexp.Regexp
	}{
		{"../../live/*.go", "", regexp.MustCompile(`"(overworld_[a-z_]+)"`)},
		{"../../live/plane/*.go", "overworld_plane_", regexp.MustCompile(`newMetric\("([a-z_]+)"`)},
	} {
		files, err := filepath.Glob(src.glob)
		if err != nil || len(files) == 0 {
			t.Fatalf("no sources at %s: %v", src.glob, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range src.re.FindAllStringSubmatch(string(b), -1) {
				m[src.prefix+s[1]] = true
			}
		}
	}
	return m
}
