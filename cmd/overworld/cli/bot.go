package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/spf13/cobra"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/arenaplay"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/plane"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// botIdle is how long a bot waits for a State before it counts its node
// as gone and ends its session (dropped).
const botIdle = 5 * time.Second

type botFlags struct {
	addr, tokenDir, name, mapType, ca string
	world                             string
	nodeID                            uint32
	plane                             string
	serverName                        string
	n, nodes, perNode                 int
	duration                          time.Duration
	seed                              uint64
	ws, local, json                   bool
}

func newBotCmd(e *env) *cobra.Command {
	var f botFlags
	cmd := &cobra.Command{
		Use:   "bot --addr HOST:PORT --token-dir DIR [flags]",
		Short: "Run headless players of the arena game against a node's player endpoint",
		Long: `Run N headless clients that each issue themselves a token with the coordinator key in
--token-dir, join the node at --addr (QUIC, or WebSocket with --ws), and play the arena
game for --duration: they walk between waypoints of the map as the arena bots do and fire
rockets at the nearest bot in sight, keeping a client-side copy of what their avatar sees
from the node's delta-encoded states. Then each bot's figures are printed: state bytes/s
and messages/s received, objects seen (distinct) and most in view at once, inputs sent,
and the input → state echo time (from sending an input to applying the first state
that reflects it; 50th and 95th percentile). A bot told to move to another node (the
node drains, or hands it over) follows the redirect make-before-break; a bot that
receives no state for 5 s ends its session (dropped). --json prints
instead one JSON object: every bot's figures, its handoffs and the error that ended
its session early ("" when it played to the end), and the count of bots dropped.

The map comes from the game configuration (--seed, --map, --nodes, --players-per-node):
give the values the node was started with, or the bots walk into walls.

--local starts, in this process, a node of that game with its AI bots and a player
endpoint on 127.0.0.1 (QUIC and WebSocket, a self-signed certificate, the public key
in --token-dir), and plays against it: a way to try the protocol without the node
daemon. Without --ca the bots do not verify the node's QUIC certificate (loopback and
test use); with --ca they require a certificate signed by that CA, for the name
--server-name (default: the host of --addr). A node of a live cluster ("overworld node"
with listen.player_quic) presents its cluster certificate: give the cluster CA's ca.crt
and --server-name node-ID.overworld.`,
		Example: `  overworld token init --dir coord
  overworld bot --local --token-dir coord --n 16 --duration 30s
  overworld bot --addr 10.0.0.5:7400 --token-dir coord --n 16 --duration 30s --ws
  overworld bot --addr 127.0.0.1:7400 --token-dir coord --ca ca/ca.crt --server-name node-1.overworld`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBot(cmd.Context(), e, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "", "the node's player endpoint HOST:PORT (QUIC; with --ws, its WebSocket port, or a ws:// or wss:// URL)")
	fl.StringVar(&f.plane, "plane", "", "a control plane's URL (overworld control): each bot asks it where to play, with the RTTs it measures to the nodes (QUIC handshakes), follows its handoffs, and takes its avatar back where it failed over when its node dies; instead of --addr")
	fl.StringVar(&f.tokenDir, "token-dir", "", "directory of the coordinator key pair (overworld token init)")
	fl.IntVar(&f.n, "n", 16, "number of bots (1 to 1000; with --local, this machine's CPU limits how many can join in time)")
	fl.DurationVar(&f.duration, "duration", 30*time.Second, "how long to play (1s to 1h)")
	fl.BoolVar(&f.ws, "ws", false, "connect over WebSocket instead of QUIC")
	fl.BoolVar(&f.local, "local", false, "start an in-process node with a player endpoint on 127.0.0.1 and play against it")
	fl.BoolVar(&f.json, "json", false, "print one JSON report (every bot's session and how it ended) instead of the table")
	fl.StringVar(&f.name, "name", "bot", "player ID prefix (bots are NAME-1, NAME-2, ...)")
	fl.StringVar(&f.world, "world", player.DefaultWorld, "the world the node serves (its players.world): the bots' tokens name it")
	fl.Uint32Var(&f.nodeID, "node-id", 1, "the node's ID: the bots' tokens name it")
	fl.StringVar(&f.ca, "ca", "", "PEM file of the CA that signed the node's certificate (QUIC; default: no verification)")
	fl.StringVar(&f.serverName, "server-name", "", "with --ca: the name the node's certificate must carry (default: the host of --addr; node-ID.overworld for a cluster node)")
	// The game defaults are a node's (overworld node --print-config), so
	// that bots and a node started without options play the same map.
	game := live.DefaultDaemonConfig().Game
	fl.Uint64Var(&f.seed, "seed", game.Seed, "game seed (the node's)")
	fl.StringVar(&f.mapType, "map", game.Map, "game map type: sqr or rect (the node's)")
	fl.IntVar(&f.nodes, "nodes", game.Nodes, "game node count (the node's)")
	fl.IntVar(&f.perNode, "players-per-node", game.PlayersPerNode, "game AI bots per node (the node's)")
	return cmd
}

func runBot(ctx context.Context, e *env, f *botFlags) error {
	switch {
	case f.nodes < 1 || f.nodes > arena.MaxPlayers:
		return badInputf("--nodes %d: want 1 to %d", f.nodes, arena.MaxPlayers)
	case f.perNode < 1 || f.perNode > arena.MaxPlayers:
		return badInputf("--players-per-node %d: want 1 to %d", f.perNode, arena.MaxPlayers)
	case f.nodes*f.perNode > arena.MaxPlayers:
		return badInputf("--nodes %d × --players-per-node %d: want at most %d players", f.nodes, f.perNode, arena.MaxPlayers)
	case f.tokenDir == "":
		return badInputf("--token-dir is required")
	case f.n < 1 || f.n > 1000:
		return badInputf("--n %d: want 1 to 1000", f.n)
	case f.duration < time.Second || f.duration > time.Hour:
		return badInputf("--duration %v: want 1s to 1h", f.duration)
	case f.local && f.addr != "":
		return badInputf("--local and --addr exclude each other")
	case f.plane != "" && (f.local || f.addr != "" || f.ws || f.serverName != ""):
		return badInputf("--plane names the nodes: it excludes --local, --addr, --ws and --server-name")
	case !f.local && f.addr == "" && f.plane == "":
		return badInputf("--addr is required (or --local, or --plane)")
	}
	if f.plane != "" {
		if u, err := url.Parse(f.plane); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return badInputf("--plane %q: want http://HOST:PORT", f.plane)
		}
	}
	if !f.local && f.plane == "" && !(f.ws && (strings.HasPrefix(f.addr, "ws://") || strings.HasPrefix(f.addr, "wss://"))) {
		if _, _, err := net.SplitHostPort(f.addr); err != nil {
			return badInputf("--addr %q: %v", f.addr, err)
		}
	}
	if err := (player.Audience{World: f.world, Node: f.nodeID}).Validate(); err != nil {
		return badInputf("--world %q, --node-id %d: %v", f.world, f.nodeID, err)
	}
	if err := player.PlayerID(fmt.Sprintf("%s-%d", f.name, f.n)).Validate(); err != nil {
		return badInputf("--name %q: %v", f.name, err)
	}
	m, err := arena.ParseMapType(f.mapType)
	if err != nil {
		return badInputf("--map %q: want sqr or rect", f.mapType)
	}
	cfg := arena.Config{Map: m, Nodes: f.nodes, PlayersPerNode: f.perNode, Seed: f.seed}
	if _, err := cfg.Validate(); err != nil {
		return badInput(err)
	}
	g, err := arena.New(cfg)
	if err != nil {
		return badInput(err)
	}
	key, err := loadKey(f.tokenDir)
	if err != nil {
		return err
	}
	var tlsConf *tls.Config
	if f.ca != "" {
		if f.local {
			return badInputf("--ca does not apply to --local (its node has a self-signed certificate)")
		}
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return badInput(err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return badInputf("--ca %s: no PEM certificate", f.ca)
		}
		host, _, _ := net.SplitHostPort(f.addr)
		if f.serverName != "" {
			host = f.serverName
		}
		tlsConf = &tls.Config{RootCAs: roots, ServerName: host}
	}
	var nodes []plane.NodeInfo
	var planeCl *plane.Client
	if f.plane != "" {
		planeCl = &plane.Client{URL: strings.TrimSuffix(f.plane, "/"), HTTP: &http.Client{Timeout: 5 * time.Second}}
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		nodes, err = planeCl.Nodes(lctx)
		cancel()
		if err != nil {
			return fmt.Errorf("--plane %s: %w", f.plane, err)
		}
		if len(nodes) == 0 {
			return fmt.Errorf("--plane %s: the plane lists no node", f.plane)
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()

	quicAddr, wsAddr := f.addr, f.addr
	var gw *player.Gateway
	shutdown := func() {}
	if f.local {
		gw, quicAddr, wsAddr, shutdown, err = startLocalNode(ctx, g, f)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "local node: QUIC %s, WebSocket ws://%s\n", quicAddr, wsAddr)
	}
	transport := "quic"
	if f.ws {
		transport = "ws"
	}
	stats := make([]player.ClientStats, f.n)
	errs := make([]error, f.n)
	var wg sync.WaitGroup
	for i := range f.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if planeCl != nil {
				var roots *x509.CertPool
				if tlsConf != nil {
					roots = tlsConf.RootCAs
				}
				stats[i], errs[i] = playPlaneBot(ctx, g, key, f, i, planeCl, nodes, roots)
				return
			}
			stats[i], errs[i] = playBot(ctx, g, key, f, i, quicAddr, wsAddr, tlsConf)
		}()
	}
	wg.Wait()
	shutdown()
	failed := reportBotErrors(e, f.name, errs)
	if f.json {
		if err := printBotJSON(e, stats, errs, transport); err != nil {
			return err
		}
	} else if failed < f.n {
		printBotStats(e, stats, errs, transport)
	}
	if gw != nil {
		st := gw.Stats()
		fmt.Fprintf(e.stdout, "node: %d joins, %d leaves, %d inputs (%d dropped, %d bad), %d states (%d as QUIC datagrams, %d coalesced, %d full), %d refused\n",
			st.Joins, st.Leaves, st.Inputs, st.InputsDropped, st.BadInputs, st.StateMessages, st.Datagrams, st.Coalesced, st.FullStates,
			st.BadToken+st.Expired+st.Replayed+st.Full+st.Duplicate+st.JoinFailed+st.Malformed+st.Timeouts)
	}
	switch {
	case failed == f.n:
		return fmt.Errorf("all %d bots failed", f.n)
	case failed > 0:
		return fmt.Errorf("%d of %d bots failed (their figures are left out of the table)", failed, f.n)
	}
	return nil
}

// reportBotErrors prints on stderr why bots failed, one line per distinct
// error (the first bot and how many had it), and returns how many failed.
func reportBotErrors(e *env, name string, errs []error) int {
	failed := 0
	count := map[string]int{}
	first := map[string]int{}
	var order []string
	for i, err := range errs {
		if err == nil {
			continue
		}
		failed++
		msg := err.Error()
		if count[msg] == 0 {
			first[msg] = i
			order = append(order, msg)
		}
		count[msg]++
	}
	for _, msg := range order {
		if count[msg] == 1 {
			fmt.Fprintf(e.stderr, "%s-%d: %s\n", name, first[msg]+1, msg)
		} else {
			fmt.Fprintf(e.stderr, "%s-%d and %d other bots: %s\n", name, first[msg]+1, count[msg]-1, msg)
		}
	}
	return failed
}

func playBot(ctx context.Context, g *arena.Game, key ed25519.PrivateKey, f *botFlags, i int, quicAddr, wsAddr string, tlsConf *tls.Config) (player.ClientStats, error) {
	id := player.PlayerID(fmt.Sprintf("%s-%d", f.name, i+1))
	tok, err := player.IssueToken(key, id, player.Audience{World: f.world, Node: f.nodeID}, time.Now(), 5*time.Minute, nil)
	if err != nil {
		return player.ClientStats{Player: id}, err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var conn player.Conn
	if f.ws {
		url := wsAddr
		if !strings.HasPrefix(url, "ws://") && !strings.HasPrefix(url, "wss://") {
			url = "ws://" + wsAddr + "/"
		}
		conn, err = player.DialWS(dctx, url)
	} else {
		conn, err = player.DialQUIC(dctx, quicAddr, tlsConf)
	}
	if err != nil {
		return player.ClientStats{Player: id}, err
	}
	c, err := player.Join(dctx, conn, tok)
	if err != nil {
		_ = conn.Close()
		return player.ClientStats{Player: id}, err
	}
	c.SetIdleTimeout(botIdle)
	c.SetDialer(player.RedirectDialer(func(node uint32) *tls.Config {
		if tlsConf == nil {
			return nil
		}
		tc := tlsConf.Clone()
		tc.ServerName = pki.DNSName(wire.NodeID(node))
		return tc
	}, f.ws))
	pctx, stop := context.WithTimeout(ctx, f.duration)
	defer stop()
	err = c.Run(pctx, arenaplay.NewBrain(g, f.seed<<20+uint64(i)), 0)
	return c.Stats(), err
}

func printBotStats(e *env, stats []player.ClientStats, errs []error, transport string) {
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "player\tavatar\ttransport\tstate KB/s\tstates/s\tupdates/s\tbytes/state\tobjects seen\tmax in view\tinputs\techo p50\techo p95\t")
	var tb, ts, tu, tsec float64
	var echo []time.Duration
	for i, s := range stats {
		if errs[i] != nil && s.Applied == 0 {
			continue
		}
		sec := s.Duration.Seconds()
		if sec <= 0 {
			continue
		}
		per := 0.0
		if s.States > 0 {
			per = float64(s.StateBytes) / float64(s.States)
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%.2f\t%.1f\t%.1f\t%.0f\t%d\t%d\t%d\t%v\t%v\t\n", s.Player, s.Avatar, transport,
			float64(s.StateBytes)/sec/1000, float64(s.States)/sec, float64(s.Updates)/sec, per, s.ObjectsSeen, s.MaxInView, s.Inputs,
			s.RTTQuantile(0.5).Round(time.Millisecond), s.RTTQuantile(0.95).Round(time.Millisecond))
		tb += float64(s.StateBytes)
		ts += float64(s.States)
		tu += float64(s.Updates)
		tsec += sec
		echo = append(echo, s.RTT...)
	}
	if tsec > 0 {
		all := player.ClientStats{RTT: echo}
		fmt.Fprintf(tw, "mean\t\t\t%.2f\t%.1f\t%.1f\t%.0f\t\t\t\t%v\t%v\t\n", tb/tsec/1000, ts/tsec, tu/tsec, tb/max(ts, 1),
			all.RTTQuantile(0.5).Round(time.Millisecond), all.RTTQuantile(0.95).Round(time.Millisecond))
	}
	_ = tw.Flush()
}

// startLocalNode runs one node of game g in this process, with its AI bots
// and items, driven at the game's frame rate by one goroutine, and a player
// gateway on 127.0.0.1 (QUIC and WebSocket on free ports).
func startLocalNode(ctx context.Context, g *arena.Game, f *botFlags) (gw *player.Gateway, quicAddr, wsAddr string, shutdown func(), err error) {
	pub, err := player.LoadPublicKey(f.tokenDir)
	if err != nil {
		return nil, "", "", nil, badInput(err)
	}
	ver, err := player.NewVerifier(player.VerifierConfig{Key: pub, Audience: player.Audience{World: f.world, Node: f.nodeID}})
	if err != nil {
		return nil, "", "", nil, err
	}
	dir, err := discovery.New(discovery.Config{Arch: discovery.Directory, Self: 1, Infra: 1, Space: harness.ArenaSpace(g), Seed: f.seed})
	if err != nil {
		return nil, "", "", nil, err
	}
	n, err := node.New(node.Config{ID: 1, Registry: g.Registry(), Discovery: dir, Rand: rand.New(rand.NewPCG(f.seed, 1))})
	if err != nil {
		return nil, "", "", nil, err
	}
	for _, s := range g.Spawns() {
		if s.Node == 0 {
			if _, err := n.Spawn(0, s.Schema, s.Init); err != nil {
				return nil, "", "", nil, err
			}
		}
	}
	// A world of one node: a CA of its own signs the node's certificate,
	// whose key signs the avatar deeds.
	ca, err := pki.NewCA("overworld bot local CA", time.Now(), 30*24*time.Hour)
	if err != nil {
		return nil, "", "", nil, err
	}
	nodeFile, err := ca.Issue(1, time.Now(), 7*24*time.Hour)
	if err != nil {
		return nil, "", "", nil, err
	}
	ident, err := pki.ParseNode(nodeFile, ca)
	if err != nil {
		return nil, "", "", nil, err
	}
	gw, err = player.New(player.Config{Verifier: ver, Controller: arenaplay.NewController(g), Identity: ident, MaxPlayers: max(64, f.n), FrameEvery: arena.Frame})
	if err != nil {
		return nil, "", "", nil, err
	}
	tlsConf, err := player.SelfSignedTLS("127.0.0.1")
	if err != nil {
		return nil, "", "", nil, err
	}
	ln, err := quic.ListenAddr("127.0.0.1:0", tlsConf, player.QUICConfig())
	if err != nil {
		return nil, "", "", nil, err
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		return nil, "", "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	srv := &http.Server{Handler: gw.WSHandler(ctx), ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); _ = gw.ServeQUIC(ctx, ln) }()
	go func() { defer wg.Done(); _ = srv.Serve(tcp) }()
	go func() { defer wg.Done(); gw.RunAlone(ctx, n, arena.Frame) }() // owns the node
	shutdown = func() {
		time.Sleep(2 * arena.Frame) // let the leaves reach a frame
		gw.Close()
		cancel()
		_ = ln.Close()
		_ = srv.Close()
		wg.Wait()
	}
	return gw, ln.Addr().String(), tcp.Addr().String(), shutdown, nil
}

// BotReport is what "overworld bot --json" prints: every bot's session and
// the count of bots whose session ended early (dropped).
type BotReport struct {
	Transport string      `json:"transport"`
	Bots      []BotRecord `json:"bots"`
	Joined    int         `json:"joined"`   // bots that joined a node
	Dropped   int         `json:"dropped"`  // bots that joined and whose session ended before --duration
	Failed    int         `json:"failed"`   // bots that never joined
	Handoffs  int         `json:"handoffs"` // redirects followed, over every bot
}

// BotRecord is one bot's session in a BotReport.
type BotRecord struct {
	Player      string  `json:"player"`
	Avatar      uint64  `json:"avatar"`
	Seconds     float64 `json:"seconds"`
	States      int64   `json:"states"`
	Applied     int64   `json:"applied"`
	Inputs      int64   `json:"inputs"`
	ObjectsSeen int     `json:"objects_seen"`
	Handoffs    int     `json:"handoffs"`
	// MaxHandoffGapMs is the longest time without a State across a handoff.
	MaxHandoffGapMs float64 `json:"max_handoff_gap_ms"`
	EchoP50Ms       float64 `json:"echo_p50_ms"`
	Error           string  `json:"error"` // why the session ended early; "" when it lasted
}

// printBotJSON prints the bots' figures as one BotReport.
func printBotJSON(e *env, stats []player.ClientStats, errs []error, transport string) error {
	r := BotReport{Transport: transport, Bots: []BotRecord{}}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i, s := range stats {
		b := BotRecord{Player: string(s.Player), Avatar: uint64(s.Avatar), Seconds: s.Duration.Seconds(), States: s.States,
			Applied: s.Applied, Inputs: s.Inputs, ObjectsSeen: s.ObjectsSeen, Handoffs: s.Handoffs, EchoP50Ms: ms(s.RTTQuantile(0.5))}
		for _, g := range s.HandoffGaps {
			b.MaxHandoffGapMs = max(b.MaxHandoffGapMs, ms(g))
		}
		joined := s.Avatar != 0 || s.Duration > 0
		if errs[i] != nil {
			b.Error = errs[i].Error()
		}
		switch {
		case !joined:
			r.Failed++
		case errs[i] != nil:
			r.Joined++
			r.Dropped++
		default:
			r.Joined++
		}
		r.Handoffs += s.Handoffs
		r.Bots = append(r.Bots, b)
	}
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", out)
	return err
}
