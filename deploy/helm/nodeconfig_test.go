package helm

import "github.com/overworld/overworld/live"

// parseNodeConfig parses a node configuration as "overworld node" does
// (paths are absolute in the chart's).
func parseNodeConfig(toml string) (live.DaemonConfig, error) {
	return live.ParseDaemonConfig([]byte(toml), "/")
}
