package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/overworld/overworld/lab/harness"
)

// isTerminal reports whether the stream is an *os.File on a terminal.
func isTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Progress of long work, on stderr only (stdout stays the command's
// output): on a terminal a progress bar (a spinner with the elapsed time
// when the amount of work is unknown), redrawn a few times a second;
// elsewhere a plain line every plainEvery. Nothing shows for work that ends
// within tickerDelay, so quick runs print exactly what they did before.
var (
	tickerDelay = time.Second
	plainEvery  = 10 * time.Second
	drawEvery   = 200 * time.Millisecond
)

// ticker reports the progress of one piece of work: the caller sets or
// adds the amount done (it is also an io.Writer counting bytes), a
// goroutine draws. All methods are safe on a nil *ticker and from several
// goroutines; done must be called once at the end.
type ticker struct {
	w            io.Writer
	title, unit  string
	total        atomic.Int64 // < 0: unknown
	n            atomic.Int64
	tty          bool
	start        time.Time
	stop         chan struct{}
	wg           sync.WaitGroup
	bar          *progressbar.ProgressBar // drawing goroutine only
	lastTotalBar int64
}

// newTicker starts reporting work titled title to w, unless quiet; total is
// the amount of work in unit ("bytes" draws byte sizes), < 0 if unknown.
func newTicker(w io.Writer, quiet bool, title string, total int64, unit string) *ticker {
	if quiet {
		return nil
	}
	t := &ticker{w: w, title: title, unit: unit, tty: isTerminal(w), start: time.Now(), stop: make(chan struct{})}
	t.total.Store(total)
	t.wg.Add(1)
	go t.loop()
	return t
}

// Write counts len(p) as done (for io.TeeReader).
func (t *ticker) Write(p []byte) (int, error) {
	if t != nil {
		t.n.Add(int64(len(p)))
	}
	return len(p), nil
}

// set records the amount done and, when total ≥ 0, the total.
func (t *ticker) set(done, total int64) {
	if t == nil {
		return
	}
	t.n.Store(done)
	if total >= 0 {
		t.total.Store(total)
	}
}

// done stops the reporting and removes the bar.
func (t *ticker) done() {
	if t == nil {
		return
	}
	close(t.stop)
	t.wg.Wait()
}

func (t *ticker) loop() {
	defer t.wg.Done()
	select {
	case <-t.stop:
		return
	case <-time.After(tickerDelay):
	}
	every := plainEvery
	if t.tty {
		every = drawEvery
	}
	tk := time.NewTicker(every)
	defer tk.Stop()
	if t.tty {
		t.draw()
	}
	for {
		select {
		case <-t.stop:
			if t.bar != nil {
				_ = t.bar.Clear() // drawing errors on stderr are not worth failing the run
			}
			return
		case <-tk.C:
			t.draw()
		}
	}
}

// draw redraws the bar, or prints the plain line.
func (t *ticker) draw() {
	n, total := t.n.Load(), t.total.Load()
	if !t.tty {
		el := time.Since(t.start).Round(time.Second)
		switch {
		case total > 0 && t.unit == "bytes":
			fmt.Fprintf(t.w, "%s: %.1f of %.1f MB (%.0f%%), %v\n", t.title, float64(n)/1e6, float64(total)/1e6, 100*float64(n)/float64(total), el)
		case t.unit == "bytes":
			fmt.Fprintf(t.w, "%s: %.1f MB, %v\n", t.title, float64(n)/1e6, el)
		case total > 0:
			fmt.Fprintf(t.w, "%s: %d of %d %s (%.0f%%), %v\n", t.title, n, total, t.unit, 100*float64(n)/float64(total), el)
		default:
			fmt.Fprintf(t.w, "%s: running for %v\n", t.title, el)
		}
		return
	}
	if t.bar == nil || total != t.lastTotalBar {
		if t.bar != nil {
			_ = t.bar.Clear()
		}
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(t.w),
			progressbar.OptionSetDescription(t.title),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionClearOnFinish(),
		}
		switch {
		case t.unit == "bytes":
			opts = append(opts, progressbar.OptionShowBytes(true))
		case total >= 0:
			opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionSetItsString(t.unit), progressbar.OptionShowIts())
		}
		t.bar = progressbar.NewOptions64(max(total, -1), opts...)
		t.lastTotalBar = total
	}
	_ = t.bar.Set64(n)
	_ = t.bar.RenderBlank() // Set64 alone redraws only when the percentage changes
}

// worldProgress returns the progress callback of a simulated world run
// (nil when quiet): on a terminal a line redrawn in place, elsewhere a
// plain line every plainEvery. clear removes the line on a terminal.
func worldProgress(w io.Writer, quiet bool, title string) (cb func(harness.Progress), clear func()) {
	if quiet {
		return nil, func() {}
	}
	if isTerminal(w) {
		return func(p harness.Progress) { drawWorldProgress(w, title, p) }, func() { fmt.Fprint(w, "\r\033[K") }
	}
	var last time.Duration
	return func(p harness.Progress) {
		if p.Wall-last < plainEvery {
			return
		}
		last = p.Wall
		fmt.Fprintf(w, "%sgame time %v of %v, %d events, %.0f s\n", title, p.Virtual.Round(time.Second), p.Total, p.Events, p.Wall.Seconds())
	}, func() {}
}

// drawWorldProgress redraws the progress line of a world run.
func drawWorldProgress(w io.Writer, title string, p harness.Progress) {
	speed := 0.0
	if p.Wall > 0 {
		speed = p.Virtual.Seconds() / p.Wall.Seconds()
	}
	fmt.Fprintf(w, "\r\033[K%sgame time %v / %v  %d events  %.0f× real time", title, p.Virtual.Round(time.Second), p.Total, p.Events, speed)
}
