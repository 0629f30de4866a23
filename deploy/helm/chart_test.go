package helm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

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

// render renders the chart with values over its defaults, as release
// "ow" in namespace "games", and returns its objects by kind.
func render(t *testing.T, values map[string]any) map[string][]obj {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "ow", Namespace: "games", IsInstall: true, Revision: 1},
		chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, vals)
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
	want := map[string]int{"ConfigMap": 3, "Fleet": 2, "FleetAutoscaler": 2, "Deployment": 1, "Service": 1, "ServiceAccount": 1,
		"Role": 1, "RoleBinding": 1, "PodMonitor": 1, "ServiceMonitor": 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("kinds %v, want %v", counts, want)
	}

	for i, f := range objs["Fleet"] {
		region := []string{"eu-west", "us-east"}[i]
		if f.name() != "ow-"+region || str(f, "apiVersion") != "agones.dev/v1" {
			t.Errorf("fleet %s (%s)", f.name(), str(f, "apiVersion"))
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
		if str(c, "image") != "overworld:latest" || fmt.Sprint(get(c, "args")) != "[node --config /etc/overworld/node/node.toml]" {
			t.Errorf("fleet %s: container %v %v", f.name(), get(c, "image"), get(c, "args"))
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
		if str(pod, "volumes", 0, "configMap", "name") != "ow-node-"+region || str(pod, "volumes", 1, "secret", "secretName") != "overworld-tls" {
			t.Errorf("fleet %s: volumes %v", f.name(), get(pod, "volumes"))
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
	if str(pod, "serviceAccountName") != "ow-control" || fmt.Sprint(get(c, "args")) != "[control]" ||
		str(c, "readinessProbe", "httpGet", "path") != "/readyz" || str(c, "livenessProbe", "httpGet", "path") != "/healthz" ||
		num(c, "ports", 0, "containerPort") != 7300 {
		t.Errorf("control plane deployment: %v", pod)
	}
	sel := get(d, "spec", "selector", "matchLabels").(map[string]any)
	labels := get(d, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("the deployment's selector %s=%v does not match its pods (%v)", k, v, labels[k])
		}
	}
	svc := objs["Service"][0]
	for k, v := range get(svc, "spec", "selector").(map[string]any) {
		if labels[k] != v {
			t.Errorf("the service's selector %s=%v does not match the control plane's pods", k, v)
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
	if str(pm, "spec", "podMetricsEndpoints", 0, "port") != "admin" || str(pm, "spec", "selector", "matchLabels", "app.kubernetes.io/component") != "node" {
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

// TestNodeConfigParses: the node configuration the chart renders is one
// the daemon accepts, with the Agones agent on and the region set.
func TestNodeConfigParses(t *testing.T) {
	for _, cm := range render(t, nil)["ConfigMap"] {
		toml := str(cm, "data", "node.toml")
		if toml == "" {
			continue
		}
		cfg, err := parseNodeConfig(toml)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cm.name(), err, toml)
		}
		region := strings.TrimPrefix(cm.name(), "ow-node-")
		if !cfg.Agones.Enabled || cfg.Agones.Region != region || cfg.Listen.Admin != "0.0.0.0:7180" || cfg.TLS.NodeCert != "/etc/overworld/tls/node.pem" {
			t.Errorf("%s: %+v", cm.name(), cfg)
		}
	}
}

// TestRenderOptions: turning the optional parts off removes them; more
// regions give more fleets.
func TestRenderOptions(t *testing.T) {
	objs := render(t, map[string]any{"controlPlane": map[string]any{"enabled": false}, "monitoring": map[string]any{"enabled": false},
		"grafana": map[string]any{"dashboard": false},
		"regions": []any{map[string]any{"name": "asia", "replicas": 2}, map[string]any{"name": "eu", "replicas": 1}, map[string]any{"name": "us", "replicas": 1}}})
	for _, k := range []string{"Deployment", "FleetAutoscaler", "Role", "PodMonitor", "ServiceMonitor"} {
		if len(objs[k]) != 0 {
			t.Errorf("%d %s with it turned off", len(objs[k]), k)
		}
	}
	if len(objs["Fleet"]) != 3 || num(objs["Fleet"][0], "spec", "replicas") != 2 {
		t.Errorf("fleets %v", objs["Fleet"])
	}
}

// TestDashboard: the Grafana dashboard is valid JSON, has the panels the
// operators read, and queries only metrics the nodes export.
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
		"Replica staleness", "Missing replicas and discovery latency"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q (panels %q)", want, titles)
		}
	}
}

// exportedMetrics reads the metric names the live packages register
// (their "overworld_..." names in the source).
func exportedMetrics(t *testing.T) map[string]bool {
	files, err := filepath.Glob("../../live/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no live sources: %v", err)
	}
	m := map[string]bool{}
	re := regexp.MustCompile(`"(overworld_[a-z_]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range re.FindAllStringSubmatch(string(b), -1) {
			m[s[1]] = true
		}
	}
	return m
}
