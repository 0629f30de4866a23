// Package helm holds the tests of the overworld Helm chart in
// deploy/helm/overworld: they render it with Helm's own Go packages and
// check the objects (kinds, ports, probes, RBAC, the autoscaler webhook,
// the monitoring objects, the Grafana dashboard against the metrics the
// nodes export). The chart is the product; this package has no code of its
// own. Its caller runs "go test ./helm" in the deploy module.
package helm
