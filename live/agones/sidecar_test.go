package agones

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// sidecar is a fake Agones SDK sidecar: the REST gateway's paths and
// bodies as the Agones REST guide documents them, over the GameServer
// lifecycle of the Agones documentation:
//
//   - Scheduled at start; Ready() from Scheduled, Ready, Allocated or
//     Reserved → Ready (the controller's RequestReady step is collapsed);
//   - Allocate() from Ready, Reserved or Allocated → Allocated (a server
//     not yet Ready is refused);
//   - Reserve(s) from Ready or Reserved → Reserved for s seconds (0: until
//     Ready or Allocate), then Ready again; an Allocated server stays
//     Allocated;
//   - health: after initialDelay, a server with no ping for
//     period × failureThreshold becomes Unhealthy (terminal);
//   - Shutdown() → Shutdown (terminal); calls that change the state of a
//     terminal server are refused;
//   - SetLabel/SetAnnotation put LabelPrefix+key; the beta counters are
//     the ones the spec declares (unknown: 404), a count outside
//     [0, capacity] is refused (400, OUT_OF_RANGE);
//   - /watch/gameserver streams {"result": GameServer} at every change.
type sidecar struct {
	t *testing.T

	mu          sync.Mutex
	now         func() time.Time
	start       time.Time
	state       string
	reserveTill time.Time // zero: no deadline
	lastPing    time.Time
	period      time.Duration
	threshold   int
	delay       time.Duration
	labels      map[string]string
	annotations map[string]string
	counters    map[string]*Counter
	calls       []string // "METHOD path body"
	watchers    []chan []byte
	address     string
	ports       []Port
}

func newSidecar(t *testing.T) (*sidecar, *Client) {
	s := &sidecar{t: t, now: time.Now, state: "Scheduled", period: 5 * time.Second, threshold: 3,
		labels: map[string]string{}, annotations: map[string]string{}, counters: map[string]*Counter{},
		address: "203.0.113.7", ports: []Port{{Name: "node", Port: 7601}, {Name: "player-quic", Port: 7602}}}
	s.start = s.now()
	srv := httptest.NewServer(s)
	t.Cleanup(func() {
		s.mu.Lock()
		for _, w := range s.watchers {
			close(w)
		}
		s.watchers = nil
		s.mu.Unlock()
		srv.Close()
	})
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// advance evaluates the time-driven transitions (mu held).
func (s *sidecar) advance() {
	now := s.now()
	if s.state == "Reserved" && !s.reserveTill.IsZero() && !now.Before(s.reserveTill) {
		s.setState("Ready")
	}
	if s.state != "Shutdown" && s.state != "Unhealthy" {
		from := later(s.lastPing, s.start.Add(s.delay))
		if now.After(s.start.Add(s.delay)) && now.Sub(from) > s.period*time.Duration(s.threshold) {
			s.setState("Unhealthy")
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (s *sidecar) setState(st string) {
	if s.state == st {
		return
	}
	s.state = st
	s.notify()
}

// gameServer is the GameServer as the gateway serves it (mu held).
func (s *sidecar) gameServer() GameServer {
	g := GameServer{ObjectMeta: ObjectMeta{Name: "overworld-eu-x7k2p", Namespace: "default", UID: "1234", ResourceVersion: "v1",
		Generation: 1, CreationTimestamp: Int64(s.start.Unix()), Labels: map[string]string{}, Annotations: map[string]string{}},
		Status: GSStatus{State: s.state, Address: s.address, Ports: s.ports, Counters: map[string]Counter{}}}
	for k, v := range s.labels {
		g.ObjectMeta.Labels[k] = v
	}
	for k, v := range s.annotations {
		g.ObjectMeta.Annotations[k] = v
	}
	for k, v := range s.counters {
		g.Status.Counters[k] = Counter{Count: v.Count, Capacity: v.Capacity}
	}
	return g
}

func (s *sidecar) notify() {
	b, _ := json.Marshal(map[string]any{"result": s.gameServer()})
	for _, w := range s.watchers {
		select {
		case w <- b:
		default:
		}
	}
}

// gatewayError writes a grpc-gateway error body.
func gatewayError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg})
}

func (s *sidecar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.calls = append(s.calls, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+string(body)))
	s.advance()
	if r.Method == "GET" && r.URL.Path == "/watch/gameserver" {
		ch := make(chan []byte, 64)
		s.watchers = append(s.watchers, ch)
		first, _ := json.Marshal(map[string]any{"result": s.gameServer()})
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fl := w.(http.Flusher)
		w.Write(append(first, '\n'))
		fl.Flush()
		for {
			select {
			case b, ok := <-ch:
				if !ok {
					return
				}
				w.Write(append(b, '\n'))
				fl.Flush()
			case <-r.Context().Done():
				return
			}
		}
	}
	defer s.mu.Unlock()
	ok := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	terminal := s.state == "Shutdown" || s.state == "Unhealthy"
	refuse := func(what string) {
		gatewayError(w, http.StatusBadRequest, 9, fmt.Sprintf("%s: the game server is %s", what, s.state))
	}
	needEmpty := func() bool {
		var m map[string]any
		if json.Unmarshal(body, &m) != nil || len(m) != 0 {
			gatewayError(w, http.StatusBadRequest, 3, "want the body {}")
			return false
		}
		return true
	}
	switch {
	case r.Method == "POST" && r.URL.Path == "/ready":
		if !needEmpty() {
			return
		}
		if terminal {
			refuse("Ready")
			return
		}
		s.reserveTill = time.Time{}
		s.setState("Ready")
		ok(struct{}{})
	case r.Method == "POST" && r.URL.Path == "/health":
		if !needEmpty() {
			return
		}
		s.lastPing = s.now()
		ok(struct{}{})
	case r.Method == "POST" && r.URL.Path == "/allocate":
		if !needEmpty() {
			return
		}
		if terminal || s.state == "Scheduled" {
			refuse("Allocate")
			return
		}
		s.reserveTill = time.Time{}
		s.setState("Allocated")
		ok(struct{}{})
	case r.Method == "POST" && r.URL.Path == "/reserve":
		var d struct {
			Seconds Int64 `json:"seconds"`
		}
		if err := json.Unmarshal(body, &d); err != nil || d.Seconds < 0 {
			gatewayError(w, http.StatusBadRequest, 3, "bad duration")
			return
		}
		if terminal || s.state == "Scheduled" {
			refuse("Reserve")
			return
		}
		if s.state != "Allocated" {
			s.reserveTill = time.Time{}
			if d.Seconds > 0 {
				s.reserveTill = s.now().Add(time.Duration(d.Seconds) * time.Second)
			}
			s.setState("Reserved")
		}
		ok(struct{}{})
	case r.Method == "POST" && r.URL.Path == "/shutdown":
		if !needEmpty() {
			return
		}
		s.setState("Shutdown")
		ok(struct{}{})
	case r.Method == "GET" && r.URL.Path == "/gameserver":
		ok(s.gameServer())
	case r.Method == "PUT" && (r.URL.Path == "/metadata/label" || r.URL.Path == "/metadata/annotation"):
		var kv struct{ Key, Value string }
		if err := json.Unmarshal(body, &kv); err != nil || kv.Key == "" {
			gatewayError(w, http.StatusBadRequest, 3, "want {\"key\": ..., \"value\": ...}")
			return
		}
		if r.URL.Path == "/metadata/label" {
			s.labels[LabelPrefix+kv.Key] = kv.Value
		} else {
			s.annotations[LabelPrefix+kv.Key] = kv.Value
		}
		s.notify()
		ok(struct{}{})
	case strings.HasPrefix(r.URL.Path, "/v1beta1/counters/"):
		name := strings.TrimPrefix(r.URL.Path, "/v1beta1/counters/")
		ct := s.counters[name]
		if ct == nil {
			gatewayError(w, http.StatusNotFound, 5, "counter not found: "+name)
			return
		}
		switch r.Method {
		case "GET":
			ok(Counter{Name: name, Count: ct.Count, Capacity: ct.Capacity})
		case "PATCH":
			var u struct {
				Name      string `json:"name"`
				Count     *Int64 `json:"count"`
				Capacity  *Int64 `json:"capacity"`
				CountDiff Int64  `json:"countDiff"`
			}
			if err := json.Unmarshal(body, &u); err != nil {
				gatewayError(w, http.StatusBadRequest, 3, err.Error())
				return
			}
			next := *ct
			if u.Capacity != nil {
				next.Capacity = *u.Capacity
			}
			if u.Count != nil {
				next.Count = *u.Count
			}
			next.Count += u.CountDiff
			if next.Count < 0 || next.Count > next.Capacity {
				gatewayError(w, http.StatusBadRequest, 11, fmt.Sprintf("count %d out of range [0,%d]", next.Count, next.Capacity))
				return
			}
			*ct = next
			s.notify()
			ok(Counter{Name: name, Count: ct.Count, Capacity: ct.Capacity})
		default:
			gatewayError(w, http.StatusMethodNotAllowed, 12, "method not allowed")
		}
	default:
		gatewayError(w, http.StatusNotFound, 5, "Not Found")
	}
}

func (s *sidecar) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	return s.state
}

func (s *sidecar) lastCall() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[len(s.calls)-1]
}
