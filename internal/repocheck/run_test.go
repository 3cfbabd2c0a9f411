package repocheck

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freePort is a loopback port nobody listens on (as of now).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// runEnv is make run's settings on free ports: the handler, the simulator,
// the demo page and Azurite.
func runEnv(t *testing.T) map[string]string {
	return map[string]string{
		"FUNCTIONS_CUSTOMHANDLER_PORT": strconv.Itoa(freePort(t)),
		"SIM_ADDR":                     "127.0.0.1:" + strconv.Itoa(freePort(t)),
		"DEMO_PORT":                    strconv.Itoa(freePort(t)),
		"AZURITE_TABLE_PORT":           strconv.Itoa(freePort(t)),
	}
}

// runScript starts scripts/run.sh with env on top of this process's own,
// less any Azure OpenAI endpoint (make run then starts the simulator), in
// a process group of its own that the test ends.
func runScript(t *testing.T, env map[string]string) (*exec.Cmd, io.Reader) {
	t.Helper()
	root := repoRoot(t)
	// Read here so that go test's cache knows the scripts: it reruns the
	// test when they change.
	readFile(t, root, "scripts/run.sh")
	readFile(t, root, "scripts/examples.sh")
	readFile(t, root, "scripts/azurite.sh")
	cmd := exec.Command("bash", "scripts/run.sh")
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AZURE_OPENAI_") && !strings.HasPrefix(kv, "QUOTA_") && !strings.HasPrefix(kv, "AUTH_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(done)
	}()
	t.Cleanup(func() {
		// run.sh's trap stops what it started; the group's kill is for a
		// build still under way. Output nobody reads any more is dropped.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		pr.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	return cmd, pr
}

// TestMakeRunNamesTheSettingOfABusyPort: with one of its ports taken, make
// run stops before building anything and names the setting that moves it.
func TestMakeRunNamesTheSettingOfABusyPort(t *testing.T) {
	tests := []struct {
		setting, said string
	}{
		{"FUNCTIONS_CUSTOMHANDLER_PORT", "(the handler) is already in use"},
		{"SIM_ADDR", "(the simulator) is already in use"},
		{"DEMO_PORT", "(the demo page) is already in use"},
		{"AZURITE_TABLE_PORT", "(Azurite's Table service) is already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.setting, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			taken := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			env := runEnv(t)
			if tt.setting == "SIM_ADDR" {
				env[tt.setting] = "127.0.0.1:" + taken
			} else {
				env[tt.setting] = taken
			}
			cmd, out := runScript(t, env)
			b, _ := io.ReadAll(out)
			text := string(b)
			assert.Contains(t, text, "127.0.0.1:"+taken+" "+tt.said)
			assert.Contains(t, text, "move "+strings.TrimSuffix(strings.TrimPrefix(tt.said, "("), ") is already in use")+" elsewhere: "+tt.setting+"=")
			assert.NotContains(t, text, "building", "said before minutes of building")
			assert.Equal(t, 1, cmd.ProcessState.ExitCode())
		})
	}
}

// TestMakeRunPrintsExamplesOnceEverythingAnswers: make run prints what to
// try only when the handler answers its health check and the demo page and
// the simulator answer, and says so; the quota store is not started
// (QUOTA_USER_DAILY_TOKENS=0) so that the test needs no Azurite.
func TestMakeRunPrintsExamplesOnceEverythingAnswers(t *testing.T) {
	for _, tool := range []string{"go", "node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("make run needs %s", tool)
		}
	}
	env := runEnv(t)
	env["QUOTA_USER_DAILY_TOKENS"] = "0"
	cmd, out := runScript(t, env)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// A make run that never gets ready is stopped, which ends its output.
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) })
	defer stop()
	get := func(url string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	lines := bufio.NewScanner(out)
	var seen []string
	for lines.Scan() {
		line := lines.Text()
		seen = append(seen, line)
		if strings.HasPrefix(line, "handler: http://") {
			// The first line of the examples: everything answers now.
			assert.Equal(t, http.StatusOK, get("http://127.0.0.1:"+env["FUNCTIONS_CUSTOMHANDLER_PORT"]+"/api/health"), "the handler")
			assert.Equal(t, http.StatusOK, get("http://127.0.0.1:"+env["DEMO_PORT"]+"/"), "the demo page")
			conn, err := net.Dial("tcp", env["SIM_ADDR"])
			if assert.NoError(t, err, "the simulator") {
				conn.Close()
			}
		}
		if strings.HasPrefix(line, "Ready in ") {
			assert.Contains(t, strings.Join(seen, "\n"), "handler: http://", "the examples come before Ready")
			assert.Contains(t, line, "everything above answers. Stop with Ctrl-C.")
			return
		}
		require.NoError(t, ctx.Err(), "make run said nothing ready in 5 minutes:\n%s", strings.Join(seen, "\n"))
	}
	t.Fatalf("make run ended before it was ready:\n%s", strings.Join(seen, "\n"))
}

// TestMakeRunPrintsNoExamplesForAHandlerThatNeverAnswers: a handler that
// stops at start (here a setting it refuses) gets no examples and no
// "Ready": make run says the handler stopped, and fails.
func TestMakeRunPrintsNoExamplesForAHandlerThatNeverAnswers(t *testing.T) {
	for _, tool := range []string{"go", "node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("make run needs %s", tool)
		}
	}
	env := runEnv(t)
	env["QUOTA_USER_DAILY_TOKENS"] = "0"
	env["REQUEST_BUDGET"] = "a while"
	cmd, out := runScript(t, env)
	b, _ := io.ReadAll(out)
	text := string(b)
	assert.Contains(t, text, "REQUEST_BUDGET", "the handler's own words")
	assert.Contains(t, text, "make run: the handler stopped before it answered")
	assert.NotContains(t, text, "Try (")
	assert.NotContains(t, text, "Ready in")
	assert.Equal(t, 1, cmd.ProcessState.ExitCode())
}

// TestMakeRunsDemoQuotaLetsItsExamplesRunInTurn: every question make run
// prints, asked one after another, fits its demo quota. Each is charged at
// most what it holds while it runs, its prompt (under 200 tokens, the
// server's system prompt included) and MAX_TOKENS (1,024 by default), so
// the quota holds them all and one more under way.
func TestMakeRunsDemoQuotaLetsItsExamplesRunInTurn(t *testing.T) {
	root := repoRoot(t)
	m := regexp.MustCompile(`QUOTA_USER_DAILY_TOKENS=\$\{QUOTA_USER_DAILY_TOKENS:-(\d+)\}`).FindStringSubmatch(readFile(t, root, "scripts/run.sh"))
	require.NotNil(t, m, "scripts/run.sh sets a default demo quota")
	quota, _ := strconv.Atoi(m[1])
	readFile(t, root, "scripts/examples.sh")
	cmd := exec.Command("bash", "scripts/examples.sh", "http://127.0.0.1:7071/api", "7071", "simulator")
	cmd.Dir = root
	printed, err := cmd.Output()
	require.NoError(t, err)
	questions := 0
	for line := range strings.Lines(string(printed)) {
		if strings.Contains(line, `"messages"`) || strings.Contains(line, "cmd/timebox ask") {
			questions++
		}
	}
	require.Greater(t, questions, 10)
	const perQuestion = 200 + 1024
	assert.GreaterOrEqual(t, quota, (questions+1)*perQuestion,
		"make run's demo quota (%d) holds its %d printed questions in turn, each at most %d tokens", quota, questions, perQuestion)
}
