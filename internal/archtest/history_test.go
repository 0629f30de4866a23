package archtest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// diary matches wording that speaks of how the project was developed
// rather than of what it is: numbered sessions, helpers, tracker numbers,
// the instructions a piece of work was given. The repository speaks of the
// product alone; its history lives in git. (The character classes keep
// the pattern from matching itself.)
var diary = regexp.MustCompile(`(?i)\bsess[i]on [0-9]|\(help[e]r\)|\bhelp[e]r-[0-9]|\biss[u]e #?[0-9]|\btick[e]t|\bwork [p]eriod|\bthe bri[e]f\b`)

// TestNoDevelopmentHistory scans every text file git tracks for diary
// wording and names each hit as file:line.
func TestNoDevelopmentHistory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: cannot list the tracked files")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not inside a git work tree (%v): cannot list the tracked files", err)
	}
	root := strings.TrimSpace(string(top))
	list, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(list), "\x00"), "\x00")
	if len(files) == 0 || files[0] == "" {
		t.Fatal("git ls-files listed no files")
	}
	scanned := 0
	for _, name := range files {
		if name == "go.sum" || strings.HasSuffix(name, "/go.sum") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet committed
			}
			t.Fatalf("%s: %v", name, err)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary (compressed data, images)
		}
		scanned++
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
		prev := "" // the previous line's end, for a phrase split over two lines
		for line := 1; sc.Scan(); line++ {
			text := sc.Text()
			m := diary.FindString(text)
			if m == "" && prev != "" {
				m = diary.FindString(prev + " " + lineHead(text))
			}
			if m != "" {
				t.Errorf("%s:%d: %q speaks of the development history; say what the product is and does", name, line, m)
			}
			prev = lineTail(text)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if scanned == 0 {
		t.Fatal("no text file was scanned")
	}
}

// lineHead returns the start of a line without its indentation and
// comment or quote markers, and lineTail the end of one: a phrase split
// over two lines is looked for in the tail of one joined to the head of
// the next.
func lineHead(s string) string {
	s = strings.TrimLeft(s, " \t/#*>-")
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

func lineTail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 40 {
		s = s[len(s)-40:]
	}
	return s
}

// TestDiaryPattern checks the pattern against wording it must and must not
// flag. The wording it must flag is written with a "|" inside each phrase,
// removed before matching, so that this file does not flag itself.
func TestDiaryPattern(t *testing.T) {
	unmark := strings.NewReplacer("|", "")
	for _, s := range []string{
		"measured in sess|ion 14", "Sess|ion 3 took", "(help|er)", "help|er-28's layout",
		"iss|ue 4's target", "Iss|ue #12", "a tick|et number", "numbered work per|iods", "as the bri|ef asked",
	} {
		if s = unmark.Replace(s); !diary.MatchString(s) {
			t.Errorf("%q is not flagged", s)
		}
	}
	split := lineTail(unmark.Replace("// faster (BENCHMARKS.md, sess|ion")) + " " + lineHead("// 18). It does")
	if diary.FindString(split) == "" {
		t.Errorf("%q, a phrase split over two comment lines, is not flagged", split)
	}
	for _, s := range []string{
		"a player session", "the session's token", "issue a token", "overworld token issue --dir coord",
		"Store.Briefs", "every node's briefs", "briefly", "a work item",
	} {
		if diary.MatchString(s) {
			t.Errorf("%q is flagged", s)
		}
	}
}
