package harness

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/overworld/overworld/lab"
)

// TestInstances runs a short instance run and checks its targets: no
// acknowledged write lost, none applied twice, no instance lost while two
// players remained, and some overflow, host departures and promotions.
func TestInstances(t *testing.T) {
	cfg := InstancesConfig{Seed: 3, Duration: 40 * time.Second, Session: 100 * time.Second}
	rep, err := RunInstances(cfg, nil)
	if err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	rep.WriteLines(os.Stdout)
	if rep.Plane.Overflowed == 0 || rep.Plane.Placed == 0 || rep.HostDepartures == 0 || rep.Promotion.N == 0 {
		t.Fatalf("seed %d: the run exercised too little: %+v", cfg.Seed, rep)
	}
	if rep.StateLost != 0 || rep.Duplicated != 0 || rep.LostWithPlayers != 0 {
		t.Fatalf("seed %d: state lost %d, duplicated %d, instances lost with players %d", cfg.Seed, rep.StateLost, rep.Duplicated, rep.LostWithPlayers)
	}
	if _, err := RunInstances(InstancesConfig{Capacity: -1}, nil); !errors.Is(err, lab.ErrConfig) {
		t.Fatalf("bad capacity: %v", err)
	}
}
