// Package agones lets a live node run as an Agones game server on
// Kubernetes, and gives Agones' fleet autoscaler overworld's scaling
// decisions. It imports no Agones module: it speaks the REST gateway of
// the Agones SDK sidecar (http://localhost:${AGONES_SDK_HTTP_PORT}) with
// net/http, in the JSON the Agones documentation gives.
//
// What it owns:
//
//   - Client: the SDK gateway's calls: Ready, Health, Reserve, Allocate,
//     Shutdown, SetLabel, SetAnnotation, GameServer, WatchGameServer, and
//     the beta Counters (GetCounter, SetCounter, UpdateCounter);
//     WaitEndpoint, the GameServer's address and ports once Agones has
//     given it an address (an enrolling node's player endpoints,
//     Endpoint.PlayerEndpoints).
//   - Agent: a node's side of the lifecycle. It marks the game server
//     Ready once the node is ready, pings Health while the node's frame
//     loop runs (a stalled loop stops the pings, so Agones marks the
//     server Unhealthy and replaces it), keeps the server Allocated (or
//     Reserved) while the node holds primaries, so that a fleet's
//     scale-down cannot delete it, and Ready again once it holds none,
//     keeps a players counter current, labels the server with its region,
//     reads its own address and ports from the GameServer, and calls
//     Shutdown after the node has drained.
//   - Autoscaler: an http.Handler for a FleetAutoscaler's Webhook policy
//     (FleetAutoscaleReview in, the desired replicas out), computed from
//     place/balance's decisions over the fleet's current load, within the
//     fleet's own bounds or the global ones.
//
// The caller must: build a Client (NewClient, or FromEnv inside a pod);
// for a node, give NewAgent a Status that reads the node (ready, last
// frame, primaries, players), Run the agent on its own goroutine for the
// node's lifetime, and call Done once the node has drained; for the
// control plane, mount an Autoscaler with a Loads source at the path the
// FleetAutoscaler's webhook names.
package agones

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultPort is the SDK gateway's port when AGONES_SDK_HTTP_PORT is not
// set (Agones' default).
const DefaultPort = 9358

// LabelPrefix is what Agones puts before every label and annotation key the
// SDK sets.
const LabelPrefix = "agones.dev/sdk-"

// Client calls the Agones SDK sidecar's REST gateway.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client of the gateway at base (http://host:port).
func NewClient(base string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("agones: SDK address %q: want http://HOST:PORT", base)
	}
	return &Client{base: strings.TrimRight(base, "/"), hc: &http.Client{Timeout: 5 * time.Second}}, nil
}

// FromEnv returns a client of the sidecar of this pod: localhost at
// AGONES_SDK_HTTP_PORT, or DefaultPort when it is not set.
func FromEnv() (*Client, error) {
	port := strconv.Itoa(DefaultPort)
	if p := os.Getenv("AGONES_SDK_HTTP_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("agones: AGONES_SDK_HTTP_PORT %q: want a port number", p)
		}
		port = p
	}
	return NewClient("http://localhost:" + port)
}

// Error is a call the gateway refused: its HTTP status and message.
type Error struct {
	Call    string
	Status  int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("agones: %s: %d %s: %s", e.Call, e.Status, http.StatusText(e.Status), e.Message)
}

// ErrNotFound is wrapped by an Error with status 404 (a counter the
// GameServer does not declare).
var ErrNotFound = errors.New("not found")

// Is makes errors.Is(err, ErrNotFound) hold for a 404.
func (e *Error) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

// do sends one request with a JSON body (nil: none) and decodes the JSON
// answer into out (nil: discarded).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("agones: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("agones: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return &Error{Call: method + " " + path, Status: resp.StatusCode, Message: gatewayMessage(b)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("agones: %s %s: answer: %w", method, path, err)
	}
	return nil
}

// gatewayMessage extracts the message of a gateway error body
// ({"code":5,"message":"..."}), or returns the body.
func gatewayMessage(b []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil && e.Message != "" {
		return e.Message
	}
	return strings.TrimSpace(string(b))
}

var empty = struct{}{}

// Ready tells Agones the game server is ready to take players (or, from
// Allocated, that it is available again).
func (c *Client) Ready(ctx context.Context) error { return c.do(ctx, "POST", "/ready", empty, nil) }

// Health is one health ping; Agones marks the server Unhealthy when they
// stop for longer than the GameServer's health period.
func (c *Client) Health(ctx context.Context) error { return c.do(ctx, "POST", "/health", empty, nil) }

// Allocate marks the game server Allocated: a fleet's scale-down does not
// delete it.
func (c *Client) Allocate(ctx context.Context) error {
	return c.do(ctx, "POST", "/allocate", empty, nil)
}

// Shutdown tells Agones the game server is done: it is deleted.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.do(ctx, "POST", "/shutdown", empty, nil)
}

// Reserve marks the game server Reserved for d (whole seconds; 0: until
// it is allocated or made Ready): it is neither allocated nor deleted by a
// scale-down meanwhile.
func (c *Client) Reserve(ctx context.Context, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("agones: reserve for %v: want ≥ 0", d)
	}
	return c.do(ctx, "POST", "/reserve", map[string]string{"seconds": strconv.FormatInt(int64(d/time.Second), 10)}, nil)
}

// SetLabel sets the GameServer's label LabelPrefix+key.
func (c *Client) SetLabel(ctx context.Context, key, value string) error {
	return c.do(ctx, "PUT", "/metadata/label", map[string]string{"key": key, "value": value}, nil)
}

// SetAnnotation sets the GameServer's annotation LabelPrefix+key.
func (c *Client) SetAnnotation(ctx context.Context, key, value string) error {
	return c.do(ctx, "PUT", "/metadata/annotation", map[string]string{"key": key, "value": value}, nil)
}

// Int64 is an int64 that JSON carries as a string (as the gateway writes
// protobuf's int64) and reads from a string or a number.
type Int64 int64

// MarshalJSON writes the number as a JSON string.
func (n Int64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(n), 10) + `"`), nil
}

// UnmarshalJSON reads a JSON string or number.
func (n *Int64) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("agones: integer %s: %w", b, err)
	}
	*n = Int64(v)
	return nil
}

// GameServer is the GameServer as the SDK gateway serves it (the fields
// overworld reads).
type GameServer struct {
	ObjectMeta ObjectMeta `json:"object_meta"`
	Status     GSStatus   `json:"status"`
}

// ObjectMeta is the GameServer's name, namespace, labels and annotations.
type ObjectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resource_version,omitempty"`
	Generation        Int64             `json:"generation,omitempty"`
	CreationTimestamp Int64             `json:"creation_timestamp,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
}

// GSStatus is the GameServer's state, address and ports, players and
// counters.
type GSStatus struct {
	State    string             `json:"state"`
	Address  string             `json:"address"`
	Ports    []Port             `json:"ports,omitempty"`
	Players  *PlayerStatus      `json:"players,omitempty"`
	Counters map[string]Counter `json:"counters,omitempty"`
}

// Port is one of the GameServer's ports: the name its spec gives it and
// the port players reach it at (the host port).
type Port struct {
	Name string `json:"name"`
	Port int32  `json:"port"`
}

// PlayerStatus is the alpha player tracking's count and capacity.
type PlayerStatus struct {
	Count    Int64    `json:"count"`
	Capacity Int64    `json:"capacity"`
	IDs      []string `json:"ids,omitempty"`
}

// Counter is a beta Counter: its count and capacity (and its name in the
// counters calls' answers).
type Counter struct {
	Name     string `json:"name,omitempty"`
	Count    Int64  `json:"count"`
	Capacity Int64  `json:"capacity"`
}

// Port returns the port named name, and whether there is one.
func (g *GameServer) Port(name string) (int, bool) {
	for _, p := range g.Status.Ports {
		if p.Name == name {
			return int(p.Port), true
		}
	}
	return 0, false
}

// GameServer fetches the backing GameServer.
func (c *Client) GameServer(ctx context.Context) (*GameServer, error) {
	var g GameServer
	if err := c.do(ctx, "GET", "/gameserver", nil, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// WatchGameServer calls fn with the GameServer at every change, until ctx
// ends (nil), fn returns an error (that error) or the stream fails.
func (c *Client) WatchGameServer(ctx context.Context, fn func(*GameServer) error) error {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/watch/gameserver", nil)
	if err != nil {
		return err
	}
	hc := *c.hc
	hc.Timeout = 0 // a stream
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("agones: watch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &Error{Call: "GET /watch/gameserver", Status: resp.StatusCode, Message: gatewayMessage(b)}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var msg struct {
			Result *GameServer `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return fmt.Errorf("agones: watch: %w", err)
		}
		if msg.Error != nil {
			return fmt.Errorf("agones: watch: %s", msg.Error.Message)
		}
		if msg.Result == nil {
			return errors.New("agones: watch: a line without result")
		}
		if err := fn(msg.Result); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("agones: watch: %w", err)
	}
	return errors.New("agones: watch: the stream ended")
}

// GetCounter fetches the beta Counter name.
func (c *Client) GetCounter(ctx context.Context, name string) (Counter, error) {
	var ct Counter
	err := c.do(ctx, "GET", "/v1beta1/counters/"+url.PathEscape(name), nil, &ct)
	return ct, err
}

// SetCounter sets Counter name's count; it fails (OUT_OF_RANGE) outside
// [0, capacity] and with ErrNotFound when the GameServer declares no such
// counter.
func (c *Client) SetCounter(ctx context.Context, name string, count int64) (Counter, error) {
	var ct Counter
	err := c.do(ctx, "PATCH", "/v1beta1/counters/"+url.PathEscape(name),
		map[string]any{"name": name, "count": Int64(count)}, &ct)
	return ct, err
}

// UpdateCounter adds diff (negative: subtracts) to Counter name's count.
func (c *Client) UpdateCounter(ctx context.Context, name string, diff int64) (Counter, error) {
	var ct Counter
	err := c.do(ctx, "PATCH", "/v1beta1/counters/"+url.PathEscape(name),
		map[string]any{"name": name, "countDiff": Int64(diff)}, &ct)
	return ct, err
}
