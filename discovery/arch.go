package discovery

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConfig reports an invalid architecture name or Config; the wrapped
// message names the field and the value.
var ErrConfig = errors.New("discovery: bad config")

// Arch names a discovery architecture.
type Arch string

// The architectures.
const (
	// Directory: one rendezvous node (Config.Infra, which has no players
	// in the lab's worlds) stores publications and subscriptions and
	// matches them; replicas then sync directly between the nodes. Its
	// standbys (Config.Standby) take over when it is declared dead.
	Directory Arch = "directory"
	// Broadcast: every node sends every update to every other member.
	Broadcast Arch = "broadcast"
	// ClientServer: one central server (Config.Infra) holds every primary
	// and runs every think function; the other nodes are clients that
	// receive what their players' interests cover.
	ClientServer Arch = "client-server"
	// Colyseus: the distributed locator of Colyseus §6 on a Mercury ring
	// (internal/locate's Mercury): every member is a rendezvous for a key
	// range; no infrastructure node.
	Colyseus Arch = "colyseus"
)

// Archs lists every architecture: the three baselines of Colyseus §7.1 in
// the order the lab reports them, then the distributed locator.
func Archs() []Arch { return []Arch{ClientServer, Broadcast, Directory, Colyseus} }

// ParseArch parses an architecture name (case and surrounding blanks
// ignored).
func ParseArch(s string) (Arch, error) {
	switch a := Arch(strings.ToLower(strings.TrimSpace(s))); a {
	case Directory, Broadcast, ClientServer, Colyseus:
		return a, nil
	}
	return "", fmt.Errorf("%w: architecture %q: want directory, broadcast, client-server or colyseus", ErrConfig, s)
}

// HasInfra reports whether the architecture needs an infrastructure node
// (Config.Infra): the directory's rendezvous or the central server.
func (a Arch) HasInfra() bool { return a == Directory || a == ClientServer }
