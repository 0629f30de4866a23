package helm

import (
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/plane"
)

// parseNodeConfig parses a node configuration as "overworld node" does
// (paths are absolute in the chart's).
func parseNodeConfig(toml string) (live.DaemonConfig, error) {
	return live.ParseDaemonConfig([]byte(toml), "/")
}

// parsePlaneConfig parses the control plane's file as "overworld control"
// reads it.
func parsePlaneConfig(toml string) error {
	_, err := plane.ParseFile([]byte(toml))
	return err
}
