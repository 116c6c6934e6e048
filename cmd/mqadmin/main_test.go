package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// childEnv makes the test binary run main() itself, so the tests see the real process: its exit status and
// its two output streams.
const childEnv = "MQADMIN_MAIN_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		main()
		return
	}
	os.Exit(m.Run())
}

func runMain(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "NAMESRV_ADDR=")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestExitStatuses(t *testing.T) {
	out, _, code := runMain(t, "help")
	if code != 0 || !strings.Contains(out, "clusterList") {
		t.Fatalf("mqadmin help: exit %d\n%s", code, out)
	}
	_, errOut, code := runMain(t, "topicRoute", "-n", "127.0.0.1:9876", "--bogus")
	if code != 2 || errOut != "mqadmin topicRoute: flag provided but not defined: -bogus\n" {
		t.Fatalf("bad flag: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runMain(t, "clusterList", "-n", "127.0.0.1:1", "--timeout", "2s")
	if code != 1 || !strings.HasPrefix(errOut, "mqadmin clusterList: ") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("unreachable name server: exit %d, stderr %q", code, errOut)
	}
}
