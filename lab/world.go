package lab

import "github.com/overworld/overworld/discovery"

// Archs lists the three baseline architectures (Colyseus §7.1) in the
// order the lab reports them.
func Archs() []discovery.Arch {
	return []discovery.Arch{discovery.ClientServer, discovery.Broadcast, discovery.Directory}
}
