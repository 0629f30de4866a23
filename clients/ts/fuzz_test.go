package tsclient_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/dop251/goja"
	tsclient "github.com/overworld/overworld/clients/ts"
	"github.com/overworld/overworld/live/player"
)

// FuzzTSDecoder feeds the same bytes to the SDK's decoders (under goja)
// and to the Go decoders, which must agree on every message: both refuse
// it, or both accept it (a State applied to a view of the specification's
// JoinOK: applied, or ignored for a base it does not hold).
func FuzzTSDecoder(f *testing.F) {
	b, err := os.ReadFile(vectorsFile)
	if err != nil {
		f.Fatal(err)
	}
	var vs Vectors
	if err := json.Unmarshal(b, &vs); err != nil {
		f.Fatal(err)
	}
	var joinok string
	for _, v := range vs.Messages {
		if v.Name == "joinok" {
			joinok = v.Hex
		}
		if m, err := hex.DecodeString(v.Hex); err == nil && v.Type != "arena-input" {
			f.Add(m)
		}
	}
	js, err := tsclient.Script(tsclient.Dir(), "test/run.ts", "owtest")
	if err != nil {
		f.Fatal(err)
	}
	vm := goja.New()
	installTextCodec(vm)
	if _, err := vm.RunScript("run.js", string(js)); err != nil {
		f.Fatal(err)
	}
	verdictOf, ok := goja.AssertFunction(vm.Get("owtest").ToObject(vm).Get("verdictOf"))
	if !ok {
		f.Fatal("test/run.ts exports no verdictOf")
	}
	jb, _ := hex.DecodeString(joinok)
	_, jbody, _ := player.Open(jb)
	w, err := player.DecodeJoinOK(jbody)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		want := goVerdict(msg)
		args := []goja.Value{vm.ToValue(hex.EncodeToString(msg))}
		if want == "skip" { // a State: against a fresh view of the JoinOK
			want = "error"
			if _, body, err := player.Open(msg); err == nil {
				ok, err := player.NewView(w.Registry, w.History).Apply(body)
				switch {
				case err != nil:
				case ok:
					want = "ok"
				default:
					want = "ignored"
				}
			}
			args = append(args, vm.ToValue(joinok))
		}
		got, err := verdictOf(goja.Undefined(), args...)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			t.Fatalf("message %x: the SDK says %s, Go %s", msg, got, want)
		}
	})
}
