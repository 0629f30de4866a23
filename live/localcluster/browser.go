package localcluster

import (
	"errors"
	"time"

	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/wire"
)

// What a browser needs of a local cluster with players: the nodes'
// WebSocket player endpoints (which serve the browser game at /play),
// their admin endpoints (the dashboard), and tokens.

// PlayerWSAddrs returns the player nodes' WebSocket player endpoints
// (host:port), in node order (nil without Config.Players).
func (c *Cluster) PlayerWSAddrs() []string { return append([]string(nil), c.playerWS...) }

// AdminAddr returns node process i's admin endpoint (host:port).
func (c *Cluster) AdminAddr(i int) string { return c.admin[i] }

// IssueToken signs a token for player p to join node, valid for ttl,
// with the cluster's coordinator key (Config.Players only).
func (c *Cluster) IssueToken(p player.PlayerID, node wire.NodeID, ttl time.Duration) ([]byte, error) {
	if len(c.key) == 0 {
		return nil, errors.New("localcluster: the cluster takes no players")
	}
	return player.IssueToken(c.key, p, player.Audience{World: player.DefaultWorld, Node: uint32(node)}, time.Now(), ttl, nil)
}
