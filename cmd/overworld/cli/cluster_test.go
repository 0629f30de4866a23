package cli

import (
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestClusterSurvivesDeaths runs "overworld cluster" with three player
// nodes and the rendezvous, SIGKILLs node 2 and later SIGTERMs node 3, and
// checks that the command does not abort: it reports each death on stderr
// as it happens and in its summary, with what failed over (node 2's
// objects promoted by their backups, all of them primaries elsewhere at
// the end) and node 3's drain (every primary migrated), and still prints
// the figures; and that --episodes writes the missing stretches of both
// sides. Takes about 20 s.
func TestClusterSurvivesDeaths(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of 4 processes for about 20 s")
	}
	episodes := filepath.Join(t.TempDir(), "episodes.csv")
	code, out, errs := run(t, "", "cluster", "--nodes", "3", "--players-per-node", "2", "--bot-mode", "node", "--duration", "14s",
		"--kill", "2@3s", "--term", "3@6s", "--episodes", episodes)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"node 2 (Frankfurt) ended at", "signal: killed (SIGKILL sent by --kill); the cluster goes on without it",
		"node 3 (Tokyo) ended at", "exit status 0 (SIGTERM sent by --term); the cluster goes on without it",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	for _, re := range []string{
		`node deaths: 2 node process\(es\) ended during the run`,
		`node 2 \(Frankfurt\) ended at [0-9.]+ s: signal: killed \(SIGKILL sent by --kill\)`,
		`failover: \d+ backups promoted on survivors, [0-9.]+ s after it ended at the median`,
		`at the end: \d+ of them are primaries on other nodes \(arena.bot \d+, arena.item \d+(, arena.missile \d+)?\); held by no node \(deleted by the game, or lost\): \d+( \(arena.missile \d+\))?\n`,
		`node 3 \(Tokyo\) ended at [0-9.]+ s: exit status 0 \(SIGTERM sent by --term\)`,
		`drain: (\d+) of (\d+) primaries migrated to live peers in \d+ ms \(by target node: map\[1:\d+\]\); not migrated 0, unconfirmed 0`,
		`2      Frankfurt .* ended at [0-9.]+ s`,
		`per-node bandwidth, kB/s in \+ out`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("stdout does not match %q:\n%s", re, out)
		}
	}
	if m := regexp.MustCompile(`drain: (\d+) of (\d+) primaries`).FindStringSubmatch(out); m != nil && m[1] != m[2] {
		t.Errorf("node 3 migrated %s of %s primaries", m[1], m[2])
	}
	checkEpisodes(t, episodes, errs)
}

// checkEpisodes checks the --episodes file at path: the header, then rows
// of both sides, each a stretch that ends after it starts, in a view it
// entered no later; and the summary line on stderr.
func checkEpisodes(t *testing.T, path, stderr string) {
	t.Helper()
	rows := readCSV(t, path)
	if len(rows) == 0 || !slices.Equal(rows[0], episodeHeader) {
		t.Fatalf("episodes header %v, want %v", rows[:min(1, len(rows))], episodeHeader)
	}
	sides := map[string]int{}
	for _, r := range rows[1:] {
		sides[r[0]]++
		num := func(k int) float64 {
			v, err := strconv.ParseFloat(r[k], 64)
			if err != nil {
				t.Fatalf("row %v: %s %q: %v", r, episodeHeader[k], r[k], err)
			}
			return v
		}
		// Times are written to a tenth of a millisecond.
		if entered, from, to := num(7), num(8), num(9); entered > from || from >= to || math.Abs(num(10)-(to-from)) > 0.15 {
			t.Errorf("row %v: want entered ≤ from < to, missing = to − from", r)
		}
		if r[2] == "" || r[6] == "" {
			t.Errorf("row %v: a node without its city", r)
		}
	}
	if sides["live"] == 0 || sides["simulator"] == 0 || len(sides) != 2 {
		t.Errorf("episodes by side %v, want live and simulator rows only", sides)
	}
	if !strings.Contains(stderr, "missing stretches written to "+path) {
		t.Errorf("stderr lacks the episodes' summary:\n%s", stderr)
	}
}

// TestClusterPlacement runs "overworld cluster" with client bots and the
// control plane (the default with 2 or more bots per node): the plane's
// process starts, places every bot, and the table compares the players'
// RTT with the simulator's on the same players.
func TestClusterPlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of 4 processes and a control plane for about 15 s")
	}
	code, out, errs := run(t, "", "cluster", "--nodes", "3", "--players-per-node", "2", "--duration", "8s", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, re := range []string{
		`placement: a control plane process \(place/cma\) places the bots`,
		`mean, where the players played +[0-9.]+ +[0-9.]+ +[-+][0-9]+%`,
		`static nearest-with-room admission: mean +[0-9.]+ +[0-9.]+`,
		`plane: 6 joins, \d+ moves, \d+ handoffs asked \(0 refused\), 6 players placed at the end`,
		`instances \(control.Instances, 10 seats per node, no player hosts\): 6 instances of 5 players opened through the plane's API \(node \d+: 2, node \d+: 2, node \d+: 2\); the next refused \(503 `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("stdout lacks %s:\n%s", re, out)
		}
	}
}
