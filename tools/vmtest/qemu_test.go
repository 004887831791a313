package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseConsoleLine(t *testing.T) {
	const m = "VMTEST-0123"
	tests := []struct {
		line, text, kind string
		fields           []string
		ok               bool
	}{
		{"hello", "hello", "", nil, false},
		{"VMTEST-0123 EXIT 2 1", "", "EXIT", []string{"2", "1"}, true},
		{"PASSVMTEST-0123 EXIT 0 0", "PASS", "EXIT", []string{"0", "0"}, true}, // output without a final newline
		{"VMTEST-0124 EXIT 0 0", "VMTEST-0124 EXIT 0 0", "", nil, false},       // another run's marker
		{"VMTEST-0123", "VMTEST-0123", "", nil, false},
	}
	for _, tc := range tests {
		text, ev, ok := parseConsoleLine(tc.line, m)
		if text != tc.text || ok != tc.ok || ev.Kind != tc.kind || strings.Join(ev.Fields, ",") != strings.Join(tc.fields, ",") {
			t.Errorf("%q: got %q %+v %v", tc.line, text, ev, ok)
		}
	}
}

// feed runs console lines through a session for two jobs.
func feed(t *testing.T, s *session, lines ...string) error {
	t.Helper()
	for _, l := range lines {
		if err := s.handle(l); err != nil {
			return err
		}
	}
	return nil
}

func newTestSession(out *strings.Builder, check func(Run) error) (*session, *[]JobResult) {
	var ended []JobResult
	s := &session{marker: "M1", out: out, check: check, start: time.Now(),
		onExit: func(j JobResult) { ended = append(ended, j) }}
	s.run.Jobs = []JobResult{{Job: Job{Name: "a"}}, {Job: Job{Name: "b"}}}
	return s, &ended
}

// Firmware and kernel lines are held back; job output passes; exit codes
// and the guest's CPUs are recorded; lines after DONE are held back.
func TestSessionConsole(t *testing.T) {
	var out strings.Builder
	s, ended := newTestSession(&out, nil)
	err := feed(t, s,
		"\x1bc\x1b[?7lSeaBIOS (version 1.16.2)", "[    0.000000] Linux version 6.1",
		"M1 READY 6.1.0-50-cloud-amd64 0-239 0-1",
		"M1 BEGIN 0", "=== RUN TestA", "--- PASS: TestA", "PASS", "M1 EXIT 0 0",
		"M1 BEGIN 1", "partialM1 EXIT 1 3",
		"M1 DONE", "[   17.4] reboot: Power down")
	if err != nil {
		t.Fatal(err)
	}
	if want := "=== RUN TestA\n--- PASS: TestA\nPASS\npartial\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	r := s.run
	if r.Release != "6.1.0-50-cloud-amd64" || r.Possible != "0-239" || r.Online != "0-1" || !r.Done {
		t.Errorf("run %+v", r)
	}
	if len(*ended) != 2 || (*ended)[0].Code != 0 || (*ended)[1].Code != 3 || !(*ended)[1].Finished {
		t.Errorf("ended %+v", *ended)
	}
	if len(s.early) != 2 {
		t.Errorf("early lines %q", s.early)
	}
}

// A failed check at READY stops the session there.
func TestSessionCheckStops(t *testing.T) {
	var out strings.Builder
	bad := errors.New("wrong CPUs")
	s, _ := newTestSession(&out, func(Run) error { return bad })
	if err := feed(t, s, "M1 READY 6.12 0-1 0-1", "M1 BEGIN 0"); !errors.Is(err, bad) {
		t.Errorf("err %v, want %v", err, bad)
	}
}

func TestResultLine(t *testing.T) {
	j := JobResult{Job: Job{Name: "github.com/x/loader"}, Started: true, Finished: true, Duration: 1500 * time.Millisecond}
	if got := resultLine(j); got != "ok  \tgithub.com/x/loader\t1.500s" {
		t.Errorf("%q", got)
	}
	j.Code = 1
	if got := resultLine(j); !strings.HasPrefix(got, "FAIL\tgithub.com/x/loader\t1.500s") || !strings.Contains(got, "exit status 1") {
		t.Errorf("%q", got)
	}
	j.Finished = false
	if got := resultLine(j); !strings.Contains(got, "did not finish") {
		t.Errorf("%q", got)
	}
}
