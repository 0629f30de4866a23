package tsclient_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/dop251/goja"
	tsclient "github.com/overworld/overworld/clients/ts"
	"github.com/overworld/overworld/live/player"
)

// report is test/run.ts's Report.
type report struct {
	Checked  int               `json:"checked"`
	Failures []string          `json:"failures"`
	Encoded  map[string]string `json:"encoded"`
}

// runGoja runs test/run.ts's runVectors under goja on vectors (JSON).
func runGoja(t testing.TB, vectors []byte) report {
	t.Helper()
	js, err := tsclient.Script(tsclient.Dir(), "test/run.ts", "owtest")
	if err != nil {
		t.Fatal(err)
	}
	vm := goja.New()
	installTextCodec(vm)
	if _, err := vm.RunScript("run.js", string(js)); err != nil {
		t.Fatal(err)
	}
	run, ok := goja.AssertFunction(vm.Get("owtest").ToObject(vm).Get("runVectors"))
	if !ok {
		t.Fatal("test/run.ts exports no runVectors")
	}
	res, err := run(goja.Undefined(), vm.ToValue(string(vectors)))
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal([]byte(res.String()), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestVectorsInGoja runs the TypeScript checks on the committed vectors
// under goja: every message decodes to Go's fields and encodes to Go's
// bytes, every stream's views match, every mutation gets Go's verdict.
// What the SDK encoded is then decoded by the Go decoders, and kept in
// testdata/from-ts.json.
func TestVectorsInGoja(t *testing.T) {
	vectors, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	rep := runGoja(t, vectors)
	for _, f := range rep.Failures {
		t.Error(f)
	}
	var vs Vectors
	if err := json.Unmarshal(vectors, &vs); err != nil {
		t.Fatal(err)
	}
	if want := len(vs.Messages) + len(vs.Streams) + len(vs.Malformed); rep.Checked != want {
		t.Errorf("the TypeScript checks saw %d vectors, want %d", rep.Checked, want)
	}
	types := map[string]bool{}
	for _, v := range vs.Messages {
		types[v.Type] = true
		if v.Type == "state" || v.Type == "arena-input" {
			continue
		}
		h, ok := rep.Encoded[v.Name]
		if !ok {
			t.Errorf("%s: the SDK encoded nothing", v.Name)
			continue
		}
		b, _ := hex.DecodeString(h)
		if goVerdict(b) != "ok" {
			t.Errorf("%s: the SDK's encoding %s does not decode in Go", v.Name, h)
		}
	}
	for tp := player.MsgJoin; tp <= player.MsgRejoin; tp++ {
		if !types[tp.String()] {
			t.Errorf("no vector of message type %v", tp)
		}
	}
	got := marshal(t, rep.Encoded)
	if *update {
		if err := os.WriteFile(fromTSFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if old, err := os.ReadFile(fromTSFile); err != nil || !bytes.Equal(old, got) {
		t.Errorf("%s is not what the SDK encodes today (%v): run go test ./clients/ts -run Vectors -update", fromTSFile, err)
	}
}

// TestFromTS decodes with the Go decoders every message the SDK wrote to
// testdata/from-ts.json, and checks it is Go's own encoding.
func TestFromTS(t *testing.T) {
	b, err := os.ReadFile(fromTSFile)
	if err != nil {
		t.Fatal(err)
	}
	var enc map[string]string
	if err := json.Unmarshal(b, &enc); err != nil {
		t.Fatal(err)
	}
	vb, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var vs Vectors
	if err := json.Unmarshal(vb, &vs); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range vs.Messages {
		h, ok := enc[v.Name]
		if !ok {
			continue
		}
		n++
		m, _ := hex.DecodeString(h)
		if (v.Type != "arena-input" && goVerdict(m) != "ok") || h != v.Hex {
			t.Errorf("%s: the SDK wrote %s, Go %s", v.Name, h, v.Hex)
		}
	}
	if n < 12 {
		t.Errorf("only %d of the SDK's messages checked", n)
	}
}

// TestRandomStreamsInGoja checks the SDK against fresh seeded vectors:
// random schema tables, State streams with lost and old messages, and
// their mutations.
func TestRandomStreamsInGoja(t *testing.T) {
	for seed := uint64(2); seed < 6; seed++ {
		rep := runGoja(t, marshal(t, MakeVectors(t, seed, 6)))
		for _, f := range rep.Failures {
			t.Errorf("seed %d: %s", seed, f)
		}
	}
}

// installTextCodec gives goja the browser's TextEncoder and TextDecoder
// (UTF-8, invalid bytes decoded as U+FFFD, as browsers do).
func installTextCodec(vm *goja.Runtime) {
	_ = vm.Set("__utf8encode", func(s string) goja.Value { return vm.ToValue(vm.NewArrayBuffer([]byte(s))) })
	_ = vm.Set("__utf8decode", func(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") })
	if _, err := vm.RunString(`
class TextEncoder { encode(s) { return new Uint8Array(__utf8encode(s)); } }
class TextDecoder { decode(b) { return __utf8decode(Array.from(b)); } }
globalThis.TextEncoder = TextEncoder; globalThis.TextDecoder = TextDecoder;`); err != nil {
		panic(err)
	}
}

// TestClientHandoffInGoja drives the SDK's Client over scripted
// WebSockets through a join, inputs, a Redirect and the switch: the
// Rejoin carries the old node's seq, the inputs it did not apply go to
// the new node again, later inputs go there only, the old node's States
// apply until the new node's first one, and only then does the client
// leave the old node.
func TestClientHandoffInGoja(t *testing.T) {
	vectors, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	js, err := tsclient.Script(tsclient.Dir(), "test/client.ts", "owclient")
	if err != nil {
		t.Fatal(err)
	}
	vm := goja.New()
	installTextCodec(vm)
	// The scenario calls the idle check itself: timers never fire here.
	if _, err := vm.RunString("globalThis.setInterval = () => 0; globalThis.clearInterval = () => {};"); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.RunScript("client.js", string(js)); err != nil {
		t.Fatal(err)
	}
	run, ok := goja.AssertFunction(vm.Get("owclient").ToObject(vm).Get("clientScenario"))
	if !ok {
		t.Fatal("test/client.ts exports no clientScenario")
	}
	res, err := run(goja.Undefined(), vm.ToValue(string(vectors)))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := res.Export().(*goja.Promise)
	if !ok || p.State() != goja.PromiseStateFulfilled {
		t.Fatalf("the scenario did not finish: %v", res)
	}
	var fails []string
	if err := json.Unmarshal([]byte(p.Result().String()), &fails); err != nil {
		t.Fatal(err)
	}
	for _, f := range fails {
		t.Error(f)
	}
}

// TestClientResumeInGoja runs the Client over scripted WebSockets through
// a node's death: the client rejoins its avatar on every other node at
// once (the Rejoin carries the last input applied), keeps the node that
// sends a State, closes the one that says the avatar is not there,
// resends the inputs the dead node did not apply and plays on; then
// Client.resume on its own, and with no node holding the avatar.
func TestClientResumeInGoja(t *testing.T) {
	vectors, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	js, err := tsclient.Script(tsclient.Dir(), "test/client.ts", "owclient")
	if err != nil {
		t.Fatal(err)
	}
	vm := goja.New()
	installTextCodec(vm)
	// The scenario drives every step: timers never fire here.
	if _, err := vm.RunString("globalThis.setInterval = () => 0; globalThis.clearInterval = () => {}; globalThis.setTimeout = () => 0; globalThis.clearTimeout = () => {};"); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.RunScript("client.js", string(js)); err != nil {
		t.Fatal(err)
	}
	run, ok := goja.AssertFunction(vm.Get("owclient").ToObject(vm).Get("resumeScenario"))
	if !ok {
		t.Fatal("test/client.ts exports no resumeScenario")
	}
	res, err := run(goja.Undefined(), vm.ToValue(string(vectors)))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := res.Export().(*goja.Promise)
	if !ok || p.State() != goja.PromiseStateFulfilled {
		t.Fatalf("the scenario did not finish: %v", res)
	}
	var fails []string
	if err := json.Unmarshal([]byte(p.Result().String()), &fails); err != nil {
		t.Fatal(err)
	}
	for _, f := range fails {
		t.Error(f)
	}
}
