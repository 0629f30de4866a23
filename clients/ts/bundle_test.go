package tsclient_test

import (
	"bytes"
	"testing"

	tsclient "github.com/overworld/overworld/clients/ts"
	"github.com/overworld/overworld/live/web"
)

// TestBundleCurrent checks that the JavaScript live/web embeds is what
// esbuild builds from the sources today (go generate ./live/web rebuilds
// it).
func TestBundleCurrent(t *testing.T) {
	files, err := tsclient.Bundle(tsclient.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, ok := web.Asset("dist/" + name)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("live/web/dist/%s is not what clients/ts builds today: run go generate ./live/web", name)
		}
	}
}
