// Package azuritetest runs Azurite's Table service, the Azure Storage
// emulator, for a test: a real table store on a free loopback port, in
// memory, stopped when the test ends. Azurite is installed into the
// repository (tools/azurite, `npm ci`), with the Node.js it requires.
//
// A test that needs it fails when it is not installed, with a message
// saying how to install it (`make azurite`; `make test-go` does it first),
// so that no run passes by leaving the quota tests out. A run that means
// to leave them out says so: TIMEBOX_SKIP_AZURITE=1 skips them instead.
package azuritetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/timebox-dev/timebox/internal/quota"
)

// Account is Azurite's development account, the one its Table service
// serves at http://127.0.0.1:<port>/devstoreaccount1.
const Account = "devstoreaccount1"

// Server is a running Azurite Table service.
type Server struct {
	// Endpoint is the Table service URL of the development account,
	// http://127.0.0.1:<port>/devstoreaccount1.
	Endpoint string
	// Addr is host:port.
	Addr string

	cmd      *exec.Cmd
	exited   chan struct{}
	stopOnce sync.Once
}

// startWait bounds Azurite's start: a real process, whose start takes a
// second or two here.
const startWait = 60 * time.Second

// Start starts Azurite's Table service for t and stops it when t ends. It
// fails t when Azurite is not installed (Need).
func Start(t testing.TB) *Server {
	t.Helper()
	Need(t)
	s, err := Launch(t.TempDir())
	if err != nil {
		t.Fatalf("azurite: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Need fails t when Azurite is not installed, or skips it when
// TIMEBOX_SKIP_AZURITE=1.
func Need(t testing.TB) {
	t.Helper()
	if _, _, err := install(); err != nil {
		if os.Getenv("TIMEBOX_SKIP_AZURITE") == "1" {
			t.Skipf("Azurite is not installed (%v), and TIMEBOX_SKIP_AZURITE=1 skips the tests that need it", err)
		}
		t.Fatalf("Azurite is not installed (%v): `make azurite` installs it into tools/azurite (`make test-go` does so first); TIMEBOX_SKIP_AZURITE=1 skips the tests that need it instead", err)
	}
}

// Launch starts Azurite's Table service with dir as its working folder;
// the caller stops it (a TestMain that shares one server among a
// package's tests, each on tables of its own).
func Launch(dir string) (*Server, error) {
	node, script, err := install()
	if err != nil {
		return nil, err
	}
	// A port is chosen here and handed to Azurite (its "port 0" does not
	// say which port it took); another process may take it in between, so
	// a start that fails to listen is tried again on another.
	var lastErr error
	for range 3 {
		s, err := start(dir, node, script)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func start(dir, node, script string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)

	cmd := exec.Command(node, script, "--inMemoryPersistence", "--disableTelemetry", "--silent",
		"--tableHost", "127.0.0.1", "--tablePort", port)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Endpoint: "http://" + addr + "/" + Account, Addr: addr, cmd: cmd, exited: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "successfully started") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(s.exited)
	}()
	timer := time.NewTimer(startWait)
	defer timer.Stop()
	select {
	case ok := <-ready:
		if ok {
			return s, nil
		}
		<-s.exited
		return nil, fmt.Errorf("exited before it listened on %s: %s", addr, strings.TrimSpace(stderr.String()))
	case <-timer.C:
		s.Stop()
		return nil, fmt.Errorf("not listening on %s after %s", addr, startWait)
	}
}

// Stop ends the Azurite process (its data with it) and waits for it to
// exit. Calling it again does nothing.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
}

// Table is a client of the table name as an administrator reads it,
// signed with Azurite's development key: what a test checks the rows the
// store wrote with. It keeps no idle connection, so that a test in a
// synctest bubble leaves no goroutine of it behind.
func (s *Server) Table(t testing.TB, name string) *aztables.Client {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(quota.DevelopmentAccount, quota.DevelopmentKey)
	if err != nil {
		t.Fatalf("azurite: %v", err)
	}
	opts := &aztables.ClientOptions{}
	opts.Transport = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	svc, err := aztables.NewServiceClientWithSharedKey(s.Endpoint, cred, opts)
	if err != nil {
		t.Fatalf("azurite: %v", err)
	}
	return svc.NewClient(name)
}

// install finds Azurite's Table service and the node that runs it in the
// repository's tools/azurite.
func install() (node, script string, err error) {
	root, err := moduleRoot()
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(root, "tools", "azurite", "node_modules")
	script = filepath.Join(dir, "azurite", "dist", "src", "table", "main.js")
	if _, err := os.Stat(script); err != nil {
		return "", "", fmt.Errorf("no %s", rel(root, script))
	}
	node = filepath.Join(dir, ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		// No Node package for this platform in tools/azurite: the
		// machine's own, which Azurite needs to be 22 or newer.
		if node, err = exec.LookPath("node"); err != nil {
			return "", "", errors.New("no node to run it")
		}
		if v, _ := exec.Command(node, "-p", "process.versions.node.split('.')[0]").Output(); atoi(v) < 22 {
			return "", "", fmt.Errorf("%s is older than Node 22", node)
		}
	}
	return node, script, nil
}

func atoi(b []byte) int {
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}

// moduleRoot is the folder of the go.mod above the working directory (a
// test runs in its package's folder).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
