package plane

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/BurntSushi/toml"
)

// File is the plane's configuration file (TOML), as "overworld control
// --config" reads it.
type File struct {
	// Listen is the address of the plane's HTTP API ("127.0.0.1:7400").
	Listen string `toml:"listen"`
	// Poll, DownAfter, LeaveAfter, JoinGrace and Retry are Config's, as Go
	// durations ("1s"); empty takes the default.
	Poll       string `toml:"poll"`
	DownAfter  string `toml:"down_after"`
	LeaveAfter string `toml:"leave_after"`
	JoinGrace  string `toml:"join_grace"`
	Retry      string `toml:"retry"`
	// Seed seeds the network coordinates.
	Seed  uint64     `toml:"seed"`
	Nodes []FileNode `toml:"nodes"`
}

// FileNode is one node of File.
type FileNode struct {
	ID         uint32 `toml:"id"`
	Site       string `toml:"site"`
	Capacity   int    `toml:"capacity"`
	Admin      string `toml:"admin"`
	PlayerQUIC string `toml:"player_quic"`
	PlayerWS   string `toml:"player_ws"`
}

// LoadFile reads and decodes a configuration file, refusing unknown keys.
// Its values are checked by Config (New).
func LoadFile(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	return ParseFile(b)
}

// maxFile bounds a configuration file.
const maxFile = 1 << 20

// ParseFile decodes a configuration file's bytes.
func ParseFile(b []byte) (File, error) {
	var f File
	if len(b) > maxFile {
		return f, fmt.Errorf("%w: %d bytes, at most %d", ErrConfig, len(b), maxFile)
	}
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&f)
	if err != nil {
		return f, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return f, fmt.Errorf("%w: unknown key %q", ErrConfig, und[0].String())
	}
	if f.Listen == "" {
		return f, fmt.Errorf("%w: listen: empty (want host:port)", ErrConfig)
	}
	return f, nil
}

// Config returns the plane's configuration from the file.
func (f File) Config() (Config, error) {
	c := Config{Seed: f.Seed}
	for _, d := range []struct {
		name string
		s    string
		to   *time.Duration
	}{{"poll", f.Poll, &c.Poll}, {"down_after", f.DownAfter, &c.DownAfter}, {"leave_after", f.LeaveAfter, &c.LeaveAfter},
		{"join_grace", f.JoinGrace, &c.JoinGrace}, {"retry", f.Retry, &c.Retry}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return c, fmt.Errorf("%w: %s %q: %v", ErrConfig, d.name, d.s, err)
		}
		*d.to = v
	}
	for _, n := range f.Nodes {
		c.Nodes = append(c.Nodes, Node{ID: n.ID, Site: n.Site, Capacity: n.Capacity, Admin: n.Admin, QUIC: n.PlayerQUIC, WS: n.PlayerWS})
	}
	if _, err := c.validate(); err != nil {
		return c, err
	}
	return c, nil
}

// Encode writes f as TOML.
func (f File) Encode() ([]byte, error) {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
