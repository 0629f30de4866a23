package plane

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/live/agones"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/place/balance"
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
	Seed uint64 `toml:"seed"`
	// NodeRTT is where the node-to-node RTTs the plane places the nodes
	// with come from: "measured" (the default: the sites' table until the
	// nodes report what they measure to each other) or "sites" (the
	// table only).
	NodeRTT string `toml:"node_rtt"`
	// AdminTokenFile holds the bearer secret of the nodes' admin
	// endpoints (their listen.admin_token_file), sent with every request
	// to them; "" sends none (the nodes then answer loopback clients only).
	AdminTokenFile string `toml:"admin_token_file"`
	// Grid ("CxR", "" for none) divides Bounds ([x0, y0, x1, y1], the
	// world's extent) into regions, moved under RegionPolicy (periodic,
	// churn, arrivals, load or never; default periodic) when they gain
	// MigrationCost (ms summed over the region's players; default 1,000).
	Grid          string     `toml:"grid"`
	Bounds        []float64  `toml:"bounds"`
	RegionPolicy  string     `toml:"region_policy"`
	MigrationCost float64    `toml:"migration_cost"`
	Nodes         []FileNode `toml:"nodes"`
	// Autoscale, when present, serves Agones' FleetAutoscaler webhook at
	// /autoscale, sizing each fleet it names from its nodes' players.
	Autoscale *FileAutoscale `toml:"autoscale"`
	// Hosts, when present, serves POST /v1/hosts: player hosts'
	// certificates (Hosts).
	Hosts *FileHosts `toml:"hosts"`
	// Instances, when present, serves the instance API (InstanceSetup).
	Instances *FileInstances `toml:"instances"`
}

// FileInstances configures the instance API: each server's instance
// seats, and the host criterion (LL, PD or score; default LL).
type FileInstances struct {
	Seats     int    `toml:"seats"`
	Criterion string `toml:"criterion"`
}

// FileHosts configures POST /v1/hosts.
type FileHosts struct {
	// CADir holds the cluster CA with its key ("overworld ca init").
	CADir string `toml:"ca_dir"`
	// TokenKey is the token issuer's public key file ("overworld token
	// init"); World (default "main") and AudienceNode name the plane in
	// the tokens players present to it. Without it, no player hosts.
	TokenKey     string `toml:"token_key"`
	World        string `toml:"world"`
	AudienceNode uint32 `toml:"audience_node"`
	// First and Last bound the node IDs given to player hosts.
	First uint32 `toml:"first"`
	Last  uint32 `toml:"last"`
	// Enroll lists the regions whose game servers enroll.
	Enroll []FileEnroll `toml:"enroll"`
	// Validity is a certificate's lifetime (default "24h"); Window an
	// enrollment's clock window (default "2m").
	Validity string `toml:"validity"`
	Window   string `toml:"window"`
	// Rate and Burst bound the requests read (default 20 a second,
	// bursts of 40).
	Rate  float64 `toml:"rate"`
	Burst int     `toml:"burst"`
	// StateFile keeps the IDs given and the enrolled placement targets
	// across restarts ("" for none; required by a region with a site).
	StateFile string `toml:"state_file"`
	// ForgetAfter is how long an enrolled placement target may be silent
	// before it leaves the placement (default "10m").
	ForgetAfter string `toml:"forget_after"`
	// Revoked is the cluster's revocation list (the nodes' tls.revoked):
	// enrolled nodes it names by ID are refused and leave the placement.
	Revoked string `toml:"revoked"`
}

// FileEnroll is one enrolling region of FileHosts.
type FileEnroll struct {
	Region string `toml:"region"`
	// SecretFile holds the region's enrollment secret (at least 16
	// bytes; e.g. "openssl rand -hex 32").
	SecretFile string `toml:"secret_file"`
	First      uint32 `toml:"first"`
	Last       uint32 `toml:"last"`
	// Site, if set, is where the region's servers run (Node.Site): its
	// game servers that enroll with their endpoints become placement
	// targets.
	Site string `toml:"site"`
}

// FileAutoscale configures the FleetAutoscaler webhook.
type FileAutoscale struct {
	// Fleets map Agones fleets to the plane's nodes (configured ones, or
	// an enrolling region's), each with its own bounds if it sets them.
	Fleets []FileFleet `toml:"fleets"`
	// Buffer is the Ready servers kept beyond the need; Min and Max bound
	// the replicas (default 1 and 100); Margin is place/balance's target
	// headroom (a share of a server's capacity kept free).
	Buffer  int     `toml:"buffer"`
	Min     int     `toml:"min"`
	Max     int     `toml:"max"`
	Margin  float64 `toml:"margin"`
	MaxLoad int     `toml:"max_load"` // a server's players when the fleet is not mapped (default 64)
	Counter string  `toml:"players_counter"`
}

// FileFleet is one fleet and the nodes it runs: configured nodes by ID,
// or the enrolled placement targets of a region (hosts.enroll, with a
// site), or neither (sized from its players counter). Min and Max, when
// set, bound its replicas in place of the autoscale section's.
type FileFleet struct {
	Namespace string   `toml:"namespace"`
	Name      string   `toml:"name"`
	Nodes     []uint32 `toml:"nodes"`
	Region    string   `toml:"region"`
	Min       *int     `toml:"min"`
	Max       *int     `toml:"max"`
}

// FileNode is one node of File (Node's fields; Site: where it is).
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
	switch f.NodeRTT {
	case "", "measured":
	case "sites":
		c.SiteRTT = true
	default:
		return c, fmt.Errorf("%w: node_rtt %q: want measured or sites", ErrConfig, f.NodeRTT)
	}
	if f.Grid != "" {
		var cols, rows int
		if _, err := fmt.Sscanf(f.Grid, "%dx%d", &cols, &rows); err != nil || cols < 1 || rows < 1 || cols*rows > 1024 {
			return c, fmt.Errorf("%w: grid %q: want COLSxROWS, 1 to 1,024 regions", ErrConfig, f.Grid)
		}
		if len(f.Bounds) != 4 || !(f.Bounds[2] > f.Bounds[0]) || !(f.Bounds[3] > f.Bounds[1]) ||
			math.IsInf(f.Bounds[2]-f.Bounds[0], 0) || math.IsInf(f.Bounds[3]-f.Bounds[1], 0) {
			return c, fmt.Errorf("%w: bounds %v: want [x0, y0, x1, y1] with x1 > x0, y1 > y0, finite", ErrConfig, f.Bounds)
		}
		c.Grid = control.Grid{X0: f.Bounds[0], Y0: f.Bounds[1], Width: f.Bounds[2] - f.Bounds[0], Height: f.Bounds[3] - f.Bounds[1], Cols: cols, Rows: rows}
		p, err := control.PolicyNamed(f.RegionPolicy)
		if err != nil {
			return c, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		c.Policy = p
		if f.MigrationCost < 0 || math.IsNaN(f.MigrationCost) || math.IsInf(f.MigrationCost, 0) {
			return c, fmt.Errorf("%w: migration_cost %v: want finite and ≥ 0", ErrConfig, f.MigrationCost)
		}
		c.MigrationCost = f.MigrationCost
	} else if len(f.Bounds) != 0 || f.RegionPolicy != "" || f.MigrationCost != 0 {
		return c, fmt.Errorf("%w: bounds, region_policy and migration_cost need a grid", ErrConfig)
	}
	if f.AdminTokenFile != "" {
		b, err := os.ReadFile(f.AdminTokenFile)
		if err != nil {
			return c, fmt.Errorf("%w: admin_token_file: %v", ErrConfig, err)
		}
		c.AdminToken = string(bytes.TrimSpace(b))
		if c.AdminToken == "" {
			return c, fmt.Errorf("%w: admin_token_file %s is empty", ErrConfig, f.AdminTokenFile)
		}
	}
	if a := f.Autoscale; a != nil {
		as := &Autoscale{Fleets: map[string][]uint32{}, Regions: map[string]string{}}
		as.Config = agones.AutoscalerConfig{Balance: balance.Config{Margin: a.Margin}, MaxLoad: a.MaxLoad, PlayersCounter: a.Counter,
			Buffer: a.Buffer, Min: a.Min, Max: a.Max}
		if as.Config.MaxLoad == 0 {
			as.Config.MaxLoad = 64
		}
		if a.Min == 0 && a.Max == 0 {
			as.Config.Min, as.Config.Max = 1, 100
		}
		seen := map[string]bool{}
		for i, fl := range a.Fleets {
			if fl.Name == "" {
				return c, fmt.Errorf("%w: autoscale.fleets[%d]: want a name", ErrConfig, i)
			}
			if len(fl.Nodes) > 0 && fl.Region != "" {
				return c, fmt.Errorf("%w: autoscale.fleets[%d] %s: nodes or a region, not both", ErrConfig, i, fl.Name)
			}
			key := fl.Namespace + "/" + fl.Name
			if seen[key] {
				return c, fmt.Errorf("%w: autoscale.fleets: fleet %s listed twice", ErrConfig, key)
			}
			seen[key] = true
			if len(fl.Nodes) > 0 {
				as.Fleets[key] = slices.Clone(fl.Nodes)
			}
			if fl.Region != "" {
				as.Regions[key] = fl.Region
			}
			if fl.Min != nil || fl.Max != nil {
				b := agones.Bounds{Min: as.Config.Min, Max: as.Config.Max}
				if fl.Min != nil {
					b.Min = *fl.Min
				}
				if fl.Max != nil {
					b.Max = *fl.Max
				}
				if as.Config.Fleets == nil {
					as.Config.Fleets = map[string]agones.Bounds{}
				}
				as.Config.Fleets[key] = b
			}
		}
		c.Autoscale = as
	}
	if h := f.Hosts; h != nil {
		ca, err := pki.LoadCA(h.CADir, true)
		if err != nil {
			return c, fmt.Errorf("%w: hosts.ca_dir: %v", ErrConfig, err)
		}
		hc := &Hosts{CA: ca, Audience: player.Audience{World: h.World, Node: h.AudienceNode}, First: h.First, Last: h.Last,
			Rate: h.Rate, Burst: h.Burst, StateFile: h.StateFile, Revoked: h.Revoked}
		if h.TokenKey != "" {
			if hc.Key, err = player.LoadPublicKeyFile(h.TokenKey); err != nil {
				return c, fmt.Errorf("%w: hosts.token_key: %v", ErrConfig, err)
			}
		}
		if hc.Audience.World == "" {
			hc.Audience.World = player.DefaultWorld
		}
		for _, d := range []struct {
			name, s string
			to      *time.Duration
		}{{"validity", h.Validity, &hc.Validity}, {"window", h.Window, &hc.Window}, {"forget_after", h.ForgetAfter, &hc.ForgetAfter}} {
			if d.s == "" {
				continue
			}
			if *d.to, err = time.ParseDuration(d.s); err != nil {
				return c, fmt.Errorf("%w: hosts.%s %q: %v", ErrConfig, d.name, d.s, err)
			}
		}
		for i, e := range h.Enroll {
			b, err := os.ReadFile(e.SecretFile)
			if err != nil {
				return c, fmt.Errorf("%w: hosts.enroll[%d].secret_file: %v", ErrConfig, i, err)
			}
			hc.Enroll = append(hc.Enroll, Enroll{Region: e.Region, Secret: bytes.TrimSpace(b), First: e.First, Last: e.Last, Site: e.Site})
		}
		c.Hosts = hc
	}
	if in := f.Instances; in != nil {
		su := &InstanceSetup{Seats: in.Seats}
		if in.Criterion != "" {
			crit, err := balance.ParseCriterion(in.Criterion)
			if err != nil {
				return c, fmt.Errorf("%w: instances.criterion: %v", ErrConfig, err)
			}
			su.Criterion = crit
		}
		if su.Seats < 1 {
			return c, fmt.Errorf("%w: instances.seats %d: want at least 1", ErrConfig, in.Seats)
		}
		c.Instances = su
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
