package geo

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestNetworkProfiles(t *testing.T) {
	w, err := NetworkProfile("wan")
	if err != nil || w != (Network{Jitter: 10 * time.Millisecond, Loss: 0.01, Duplicate: 0.001}) {
		t.Fatalf("wan: %+v, %v", w, err)
	}
	if got := w.String(); got != "loss 1%, jitter 10ms, duplication 0.1%" {
		t.Errorf("wan reads %q", got)
	}
	p, err := NetworkProfile("none")
	if err != nil || !p.Perfect() || p.String() != "perfect" {
		t.Errorf("none: %+v %q, %v", p, p.String(), err)
	}
	if _, err := NetworkProfile("lan"); err == nil || !strings.Contains(err.Error(), `"lan"`) {
		t.Errorf("lan: %v, want an error naming it", err)
	}
	for _, bad := range []Network{{Jitter: -1}, {Jitter: 11 * time.Second}, {Loss: 1}, {Loss: -0.1}, {Duplicate: math.NaN()}, {Reorder: 1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := w.Validate(); err != nil {
		t.Error(err)
	}
}
