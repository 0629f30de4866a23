package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestUserErrors runs every subcommand on inputs a new user gets wrong: each
// is a user error (exit status 2), found before any work (nothing on stdout,
// no file written), with one line naming the flag, argument or JSON field as
// the user wrote it, and no Go type or field name.
func TestUserErrors(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	if err := os.Mkdir(p("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p("f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"token", "init", "--dir", p("tk")}, {"ca", "init", "--dir", p("ca")}} {
		if code, _, errs := run(t, "", args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	// A matrix of 30 nodes (fewer than every method's default needs).
	var m30 strings.Builder
	for i := range 30 {
		for j := range 30 {
			if j > 0 {
				m30.WriteString(" ")
			}
			if i == j {
				m30.WriteString("0")
			} else {
				m30.WriteString("12")
			}
		}
		m30.WriteString("\n")
	}
	if err := os.WriteFile(p("m30.txt"), []byte(m30.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	big := strings.ReplaceAll(m30.String(), "12 ", "1e308 ")
	if err := os.WriteFile(p("big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	bigCSV := "name,a,b\na,0,1.7e308\nb,1.7e308,0\n"
	if err := os.WriteFile(p("big.csv"), []byte(bigCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	const overflow = `{"mirrors":[{"id":"G","capacity":2}],"events":[{"op":"join","player":"a","delays":{"G":1.7e308}},{"op":"join","player":"b","delays":{"G":1.7e308}}]}`

	cases := []struct {
		name  string
		stdin string
		args  []string
		want  string // in stderr
	}{
		// Files and directories named by the user.
		{"assign dir", "", []string{"assign", p("d")}, p("d") + ": is a directory, want a file"},
		{"balance dir", "", []string{"balance", p("d")}, "is a directory, want a file"},
		{"select dir", "", []string{"select", "--factor", "2", p("d")}, "is a directory, want a file"},
		{"node config dir", "", []string{"node", "--config", p("d")}, "--config " + p("d") + ": is a directory"},
		{"node config missing", "", []string{"node", "--config", p("none.toml")}, "no such file"},
		{"ca init dir is a file", "", []string{"ca", "init", "--dir", p("f")}, "--dir " + p("f") + ": is a file, want a directory"},
		{"ca init existing", "", []string{"ca", "init", "--dir", p("ca")}, "already exists"},
		{"ca issue out dir", "", []string{"ca", "issue", "--dir", p("ca"), "--node", "1", "--out", p("d")}, "--out " + p("d") + ": is a directory"},
		{"demo out file", "", []string{"demo", "--out", p("f"), "--nodes", "2", "--duration", "1s"}, "--out " + p("f") + ": is a file, want a directory"},
		{"demo out under a file", "", []string{"demo", "--out", p("f/sub"), "--nodes", "2", "--duration", "1s"}, "is a file, not a directory"},
		{"token init existing", "", []string{"token", "init", "--dir", p("tk")}, "coordinator.key already exists"},
		{"token init dir is a file", "", []string{"token", "init", "--dir", p("f")}, "is a file, want a directory"},
		{"lab out file", "", []string{"lab", "spd", "--quick", "--no-plots", "--out", p("f")}, "--out " + p("f") + ": is a file"},
		{"estimate plot dir", "", []string{"estimate", "--method", "gnp", "--data", "planetlab", "--plot", p("d")}, "--plot " + p("d") + ": is a directory"},
		{"estimate out-matrix no dir", "", []string{"estimate", "--method", "gnp", "--data", "planetlab", "--out-matrix", p("none/est.csv")}, "--out-matrix"},
		{"cluster keep file", "", []string{"cluster", "--keep", p("f")}, "--keep " + p("f") + ": is a file"},
		{"cluster episodes under no dir", "", []string{"cluster", "--episodes", p("none/e.csv"), "--nodes", "2", "--duration", "2s"}, "--episodes " + p("none/e.csv")},
		// Values whose sums overflow.
		{"assign overflow", overflow, []string{"assign"}, "field delays: too large"},
		{"core overflow", "", []string{"core", "--matrix", p("big.csv"), "--k", "1", "--json"}, "latencies too large"},
		{"estimate overflow", "", []string{"estimate", "--method", "mf", "--matrix", p("big.txt")}, "want an RTT of at most 1e+09 ms"},
		// Messages in the user's words.
		{"assign array", "[]", []string{"assign"}, "scenario: got a JSON array, want an object"},
		{"balance field type", `{"max_load":"x"}`, []string{"balance"}, "field max_load: got a JSON string, want an integer"},
		{"bot nodes", "", []string{"bot", "--local", "--nodes", "0", "--token-dir", p("tk")}, "--nodes 0: want 1 to"},
		{"bot players-per-node", "", []string{"bot", "--local", "--players-per-node", "-1", "--token-dir", p("tk")}, "--players-per-node -1: want 1 to"},
		{"bot map", "", []string{"bot", "--local", "--map", "hex", "--token-dir", p("tk")}, `--map "hex": want sqr or rect`},
		{"core exact too large", "", []string{"core", "--data", "planetlab", "--method", "exact", "--k", "100"}, "use --method local or auto"},
		{"ca issue without node", "", []string{"ca", "issue", "--dir", p("ca"), "--out", p("n.pem")}, "--node is required"},
		// Validation before work.
		{"cluster log level", "", []string{"cluster", "--log-level", "X", "--nodes", "2", "--duration", "2s"}, `--log-level "X": want debug, info, warn or error`},
		{"cluster placement", "", []string{"cluster", "--placement", "nearest"}, `--placement "nearest": want cma or none`},
		{"cluster placement node bots", "", []string{"cluster", "--placement", "cma", "--bot-mode", "node"}, "--placement cma: the plane places client bots"},
		{"cluster headroom", "", []string{"cluster", "--headroom", "0.5"}, "--headroom 0.5: want 1 to 10"},
		{"control without config", "", []string{"control"}, "control: --config is required"},
		{"bot plane and addr", "", []string{"bot", "--token-dir", p("t"), "--plane", "http://127.0.0.1:1", "--addr", "x:1"}, "--plane names the nodes"},
		{"bot plane url", "", []string{"bot", "--token-dir", p("t"), "--plane", "ftp://x"}, `--plane "ftp://x": want http://HOST:PORT`},
		{"control config missing", "", []string{"control", "--config", p("nope.toml")}, "nope.toml"},
		{"estimate landmark default", "", []string{"estimate", "--method", "landmark", "--matrix", p("m30.txt")}, "--landmarks 32 (the default for landmark): want 2 to 29"},
		{"estimate neighbours default", "", []string{"estimate", "--method", "vivaldi", "--matrix", p("m30.txt")}, "--neighbours 32 (the default for vivaldi): the matrix has only 29 other nodes"},
		{"estimate flag of another method", "", []string{"estimate", "--method", "landmark", "--data", "planetlab", "--rank", "3"}, "--rank applies to --method mf, not landmark"},
		{"core csv on stdin", bigCSV, []string{"core", "--matrix", "-", "--k", "1"}, "add --format csv"},
		// Silent defaults and unbounded runs.
		{"lab spd networks 0", "", []string{"lab", "spd", "--networks", "0", "--out", p("o")}, "--networks 0: want 1 to 10000"},
		{"lab balance runs 0", "", []string{"lab", "balance", "--runs", "0", "--out", p("o")}, "--runs 0: want 1 to 100000"},
		{"lab balance sweep beyond runs", "", []string{"lab", "balance", "--sweep", "1000000", "--out", p("o")}, "--sweep 1000000: want 0 to the number of runs, 1000"},
		{"lab balance samples 0", "", []string{"lab", "balance", "--samples", "0", "--out", p("o")}, "--samples 0: want 1 to"},
		{"demo keymap without colyseus", "", []string{"demo", "--keymap", "dht", "--nodes", "2", "--duration", "1s"}, "--keymap applies to --arch colyseus"},
		{"demo unknown network", "", []string{"demo", "--net", "lan", "--nodes", "2", "--duration", "1s"}, `--net: network profile "lan": want none or wan`},
		{"demo loss of 1", "", []string{"demo", "--net", "wan", "--loss", "1", "--nodes", "2", "--duration", "1s"}, "--loss: loss 1: want a probability in [0, 1)"},
		{"lab world negative jitter", "", []string{"lab", "world", "--jitter", "-1ms", "--out", p("o")}, "--jitter: jitter -1ms: want 0 to 10s"},
		{"cluster reorder of 2", "", []string{"cluster", "--reorder", "2"}, "--reorder: reordering 2: want a probability in [0, 1)"},
		// Usage hints name the command as typed.
		{"unknown command", "", []string{"bogus"}, "run 'overworld --help' for usage"},
		{"unknown lab flag", "", []string{"lab", "cma", "--bogus"}, "run 'overworld lab cma --help' for usage"},
		{"unknown ca issue flag", "", []string{"ca", "issue", "--bogus"}, "run 'overworld ca issue --help' for usage"},
		{"unknown token subcommand", "", []string{"token", "bogus"}, `unknown command "bogus" for "overworld token"`},
		{"token alone", "", []string{"token"}, "token: name a subcommand: init or issue"},
	}
	goName := regexp.MustCompile(`Go struct|struct \{|json\.RawMessage|\b(Nodes|PlayersPerNode|LocalSearch) -?\d|use LocalSearch`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, c.stdin, c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", code, errs)
			}
			if out != "" {
				t.Errorf("wrote to stdout: %q", out)
			}
			if !strings.Contains(errs, c.want) {
				t.Errorf("stderr %q does not say %q", errs, c.want)
			}
			if goName.MatchString(errs) {
				t.Errorf("stderr names Go types or fields: %q", errs)
			}
			if lines := strings.Count(strings.TrimSuffix(errs, "\n"), "\n") + 1; lines > 2 || (lines == 2 && !strings.Contains(errs, "--help' for usage")) {
				t.Errorf("stderr has %d lines, want one (and a usage hint): %q", lines, errs)
			}
		})
	}
	if _, err := os.Stat(p("o")); err == nil {
		t.Error("a rejected lab run created its --out directory")
	}
}

// TestBotFailuresOnStderrOnly checks that bots that all fail print no table
// on stdout, one line per distinct error on stderr, and exit 1.
func TestBotFailuresOnStderrOnly(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run(t, "", "token", "init", "--dir", dir); code != 0 {
		t.Fatal(errs)
	}
	// Nothing listens on port 1: every WebSocket dial is refused at once.
	code, out, errs := run(t, "", "bot", "--ws", "--addr", "127.0.0.1:1", "--token-dir", dir, "--n", "3", "--duration", "1s")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	if !strings.Contains(errs, "bot-1 and 2 other bots: ") || !strings.Contains(errs, "all 3 bots failed") {
		t.Errorf("stderr %q", errs)
	}
}

// TestQuickModes checks that every lab with a quick mode calls it --quick,
// and that the old --small still works, with a notice on stderr only.
func TestQuickModes(t *testing.T) {
	root := newRoot(&env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	lab, _, err := root.Find([]string{"lab"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range lab.Commands() {
		if c.Name() == "faults" { // its defaults are already a few seconds of game time
			continue
		}
		if c.Flags().Lookup("quick") == nil {
			t.Errorf("lab %s has no --quick", c.Name())
		}
		if f := c.Flags().Lookup("small"); f != nil && f.Deprecated == "" {
			t.Errorf("lab %s: --small is not marked deprecated", c.Name())
		}
	}
	dir := t.TempDir()
	args := []string{"lab", "cma", "--no-plots", "--quiet", "--scenario", "join", "--out", dir}
	code, quick, errs := run(t, "", append(args, "--quick")...)
	if code != 0 || errs != "" {
		t.Fatalf("--quick: exit %d: %s", code, errs)
	}
	code, small, errs := run(t, "", append(args, "--small")...)
	if code != 0 || !strings.Contains(errs, "--small has been deprecated, use --quick") {
		t.Fatalf("--small: exit %d, stderr %q", code, errs)
	}
	strip := regexp.MustCompile(`(?m)^.*(ms|time|µs|s/).*$`) // run times differ
	if strip.ReplaceAllString(small, "") != strip.ReplaceAllString(quick, "") {
		t.Errorf("--small and --quick differ:\n%s\n%s", small, quick)
	}
}

// TestHelpTexts walks every command's help: one default per flag, the
// runtime in the top-level help, --version, and an example file that exists.
func TestHelpTexts(t *testing.T) {
	root := newRoot(&env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	twice := regexp.MustCompile(`\(default [^)]*\).*\(default `)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		code, out, errs := run(t, "", append(path, "--help")...)
		if code != 0 || errs != "" {
			t.Errorf("%s --help: exit %d, stderr %q", c.CommandPath(), code, errs)
		}
		for _, line := range strings.Split(out, "\n") {
			if twice.MatchString(line) {
				t.Errorf("%s --help shows two defaults: %s", c.CommandPath(), strings.TrimSpace(line))
			}
		}
		for _, sub := range c.Commands() {
			if !sub.Hidden && sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub)
			}
		}
	}
	walk(root)
	_, out, _ := run(t, "", "--help")
	for _, want := range []string{"node", "cluster", "live node", "Exit status"} {
		if !strings.Contains(out, want) {
			t.Errorf("top-level help does not mention %q", want)
		}
	}
	code, out, _ := run(t, "", "--version")
	if code != 0 || !regexp.MustCompile(`^overworld \S+.* go1\.\d+`).MatchString(out) {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	_, out, _ = run(t, "", "select", "--help")
	const sample = "cmd/overworld/cli/testdata/select-fig1.json"
	if !strings.Contains(out, sample) {
		t.Errorf("select --help does not use the sample session %s", sample)
	}
	if _, err := os.Stat(filepath.Join("..", "..", "..", sample)); err != nil {
		t.Error(err)
	}
	_, out, _ = run(t, "", "lab", "--help")
	if !strings.Contains(out, "./out of the current directory") {
		t.Error("lab --help does not say where it writes by default")
	}
}

// TestTickerPlainLines checks the progress of long work off a terminal: a
// plain line now and then on its writer, nothing for work that ends before
// the delay.
func TestTickerPlainLines(t *testing.T) {
	defer func(d, e time.Duration) { tickerDelay, plainEvery = d, e }(tickerDelay, plainEvery)
	tickerDelay, plainEvery = 20*time.Millisecond, 20*time.Millisecond
	w := &syncBuffer{}
	tk := newTicker(w, false, "assign", 10, "events")
	tk.set(4, 10)
	time.Sleep(150 * time.Millisecond)
	tk.done()
	if !regexp.MustCompile(`(?m)^assign: 4 of 10 events \(40%\), \d+s$`).MatchString(w.String()) {
		t.Errorf("plain progress %q", w.String())
	}
	w = &syncBuffer{}
	tickerDelay = time.Hour
	tk = newTicker(w, false, "assign", 10, "events")
	tk.done()
	if w.String() != "" {
		t.Errorf("quick work printed %q", w.String())
	}
	if tk := newTicker(w, true, "quiet", -1, ""); tk != nil {
		t.Error("quiet ticker is not nil")
	}
	var nilTicker *ticker
	nilTicker.set(1, 2) // no panic
	nilTicker.done()
}

// syncBuffer is a bytes.Buffer safe for a writing goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
