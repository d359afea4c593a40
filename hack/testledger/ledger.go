package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent), the fields the ledger reads.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// teeAction copies a `go test -json` stream into a file and prints what `go test` without -json
// prints: package results, build errors, and a test's output only when it fails. A CI log stays
// as readable as before, and the file keeps everything, the passing tests' output included.
type teeAction struct {
	In   io.Reader
	Out  io.Writer
	File string
}

func (a *teeAction) Run() error {
	if err := os.MkdirAll(filepath.Dir(a.File), 0o755); err != nil {
		return fmt.Errorf("creating the ledger directory: %w", err)
	}
	f, err := os.OpenFile(a.File, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening the ledger file: %w", err)
	}
	p := newPrinter(a.Out)
	r := bufio.NewReader(a.In)
	var werr error
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if _, err := f.Write(line); err != nil && werr == nil {
				werr = fmt.Errorf("writing %s: %w", a.File, err)
			}
			p.line(line)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("reading the go test -json stream: %w", err)
		}
	}
	p.flushAll()
	if err := f.Close(); err != nil && werr == nil {
		werr = fmt.Errorf("writing %s: %w", a.File, err)
	}
	return werr
}

// printer holds each running test's output until the test ends: `go test` prints a passing or
// skipped test's output only under -v.
type printer struct {
	out     io.Writer
	pending map[string][]string // package + "\x00" + test -> its output lines so far
	order   []string            // pending's keys, first seen first, so a flush keeps the order
}

func newPrinter(out io.Writer) *printer {
	return &printer{out: out, pending: map[string][]string{}}
}

func (p *printer) line(raw []byte) {
	var e event
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &e) != nil {
		// Not an event: the go command's own messages, which go test prints as they are.
		fmt.Fprint(p.out, string(raw))
		return
	}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(p.out, e.Output)
	case e.Test == "" && e.Action == "output":
		if e.Output != "PASS\n" { // the binary's own verdict, which go test without -v drops for its "ok" line
			fmt.Fprint(p.out, e.Output)
		}
	case e.Test == "" && e.Action == "fail":
		// The binary died (a panic, a timeout) with tests still running: their output says why.
		p.flush(e.Package, "")
	case e.Test == "":
	case e.Action == "output":
		if strings.HasPrefix(e.Output, "=== ") {
			return // RUN, PAUSE, CONT and NAME: -v's bookkeeping
		}
		k := e.Package + "\x00" + e.Test
		if _, ok := p.pending[k]; !ok {
			p.order = append(p.order, k)
		}
		p.pending[k] = append(p.pending[k], e.Output)
	case e.Action == "fail":
		p.flush(e.Package, e.Test)
	case e.Action == "pass" || e.Action == "skip":
		delete(p.pending, e.Package+"\x00"+e.Test)
	}
}

// flush prints and forgets the output held for a test of pkg, or for every test of pkg when
// test is empty.
func (p *printer) flush(pkg, test string) {
	kept := p.order[:0]
	for _, k := range p.order {
		lines, ok := p.pending[k]
		if !ok {
			continue
		}
		kp, kt, _ := strings.Cut(k, "\x00")
		if kp != pkg || (test != "" && kt != test) {
			kept = append(kept, k)
			continue
		}
		for _, l := range lines {
			fmt.Fprint(p.out, l)
		}
		delete(p.pending, k)
	}
	p.order = kept
}

// flushAll prints what tests left when the stream ended without their result.
func (p *printer) flushAll() {
	for _, k := range p.order {
		for _, l := range p.pending[k] {
			fmt.Fprint(p.out, l)
		}
	}
	p.pending, p.order = map[string][]string{}, nil
}

// testTime is a top-level test's result and how long it ran.
type testTime struct {
	Package, Test, Result string
	Elapsed               time.Duration
}

// slowestAction prints the n slowest top-level tests recorded in the ledger files.
type slowestAction struct {
	Files []string
	N     int
	Out   io.Writer
}

func (a *slowestAction) Run() error {
	var all []testTime
	for _, name := range a.Files {
		times, err := readTimes(name)
		if err != nil {
			return err
		}
		all = append(all, times...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Elapsed > all[j].Elapsed })
	if len(all) > a.N {
		all = all[:a.N]
	}
	fmt.Fprintf(a.Out, "the %d slowest tests:\n", len(all))
	for _, t := range all {
		fmt.Fprintf(a.Out, "%8.1f s  %-4s %s %s\n", t.Elapsed.Seconds(), t.Result, t.Package, t.Test)
	}
	return nil
}

// readTimes reads the results of a ledger file's top-level tests (subtests are parts of theirs).
func readTimes(name string) ([]testTime, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading the ledger: %w", err)
	}
	defer f.Close()
	var times []testTime
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for n := 1; s.Scan(); n++ {
		raw := s.Bytes()
		if len(raw) == 0 || raw[0] != '{' {
			continue
		}
		var e event
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("%s:%d: not a go test -json event: %w", name, n, err)
		}
		if e.Test == "" || strings.Contains(e.Test, "/") || (e.Action != "pass" && e.Action != "fail") {
			continue
		}
		times = append(times, testTime{
			Package: e.Package, Test: e.Test, Result: e.Action,
			Elapsed: time.Duration(e.Elapsed * float64(time.Second)),
		})
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return times, nil
}
