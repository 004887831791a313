package kerneltest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRetryRunsADisturbedAttemptOnceMore(t *testing.T) {
	var tries, cleanups int
	Retry(t, func(t *testing.T) {
		tries++
		t.Cleanup(func() { cleanups++ })
		if tries == 1 {
			Disturbed(t, "measured %d", 42)
			t.Error("Disturbed returned")
		}
	})
	if tries != 2 || cleanups != 2 {
		t.Errorf("tries %d, cleanups %d: want 2 and 2", tries, cleanups)
	}
}

func TestRetryRunsAnUndisturbedAttemptOnce(t *testing.T) {
	var tries int
	Retry(t, func(t *testing.T) { tries++ })
	if tries != 1 {
		t.Errorf("tries %d, want 1", tries)
	}
}

// The cases that must fail run in a child test process.
func TestRetryHelperProcess(t *testing.T) {
	switch os.Getenv("NETPROF_RETRY_CASE") {
	case "twice":
		Retry(t, func(t *testing.T) { Disturbed(t, "always") })
	case "outside":
		Disturbed(t, "outside a retry")
	case "lag":
		l := StartLag(t, 5*time.Millisecond)
		fmt.Println("lag started")
		time.Sleep(1500 * time.Millisecond)
		l.Check(t, 200*time.Millisecond)
	}
}

// A test process stopped for 500 ms (SIGSTOP, SIGCONT: what a host's
// other load does to it, at worst) sees a wake-up that late.
func TestLagSeesAStoppedProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestRetryHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "NETPROF_RETRY_CASE=lag")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	cmd.Stderr = &rest
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		fmt.Fprintln(&rest, sc.Text())
		if sc.Text() == "lag started" {
			break
		}
	}
	time.Sleep(200 * time.Millisecond)
	stopped := time.Now()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("child stopped for %v", time.Since(stopped).Round(time.Millisecond))
	for sc.Scan() {
		fmt.Fprintln(&rest, sc.Text())
	}
	err = cmd.Wait()
	out := rest.String()
	if err == nil || !strings.Contains(out, "setup disturbed by other load: a goroutine sleeping in steps ran") {
		t.Errorf("the stopped child did not report a late wake-up (exit %v):\n%s", err, out)
	}
}

func TestRetryDisturbedTwiceFailsNeverSkips(t *testing.T) {
	for c, want := range map[string]string{
		"twice":   "setup disturbed by other load twice: try 1: always; try 2: always",
		"outside": "setup disturbed by other load: outside a retry",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRetryHelperProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "NETPROF_RETRY_CASE="+c)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%s: the child test passed, want a failure:\n%s", c, out)
		}
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "--- FAIL: TestRetryHelperProcess") {
			t.Errorf("%s: output lacks %q or a FAIL line:\n%s", c, want, out)
		}
		if strings.Contains(string(out), "SKIP") {
			t.Errorf("%s: something was skipped:\n%s", c, out)
		}
	}
}

func TestLagMeasuresLateWakeups(t *testing.T) {
	l := StartLag(t, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	l.Stop()
	l.Stop()
	late, _ := l.Max()
	if late < 0 || late > 10*time.Second {
		t.Errorf("max lateness %v", late)
	}
	l.Check(t, time.Hour)
	t.Logf("max lateness over 100 ms in 5 ms steps: %v", late)
}
