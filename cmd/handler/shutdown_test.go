package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/config"
)

// closeNotingListener is a loopback listener whose connections say when
// the server has closed them: the one thing a client cannot see of a
// connection it has already read to its end.
type closeNotingListener struct {
	net.Listener
	accepted chan *closeNotingConn
}

func (l closeNotingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	nc := &closeNotingConn{TCPConn: c.(*net.TCPConn), closed: make(chan struct{})}
	l.accepted <- nc
	return nc, nil
}

// closeNotingConn is a server's end of a connection; its embedded
// *net.TCPConn keeps CloseWrite, which linger uses.
type closeNotingConn struct {
	*net.TCPConn
	once   sync.Once
	closed chan struct{}
}

func (c *closeNotingConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.TCPConn.Close()
}

// SIGTERM right after an early answer to a client still uploading: the
// connection lingers half-closed (bodyConn.linger), taken over from
// net/http, so http.Server.Shutdown neither sees nor waits for it. run's
// shutdown waits for it too: when serve returns (and the process would
// exit), the server has closed it itself, as linger does, at most half a
// second after the answer. Before, serve returned at once, and the exit
// would close it with the client's bytes unread: a reset that can reach the
// client before it reads its answer.
func TestShutdownWaitsForALingeringConnection(t *testing.T) {
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT":   "http://127.0.0.1:8081", // never called: the answer is an early 415
		"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
		"AZURE_OPENAI_API_KEY":    "k",
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(t, err)
	a, err := app.New(cfg, app.Ext{Version: "test"})
	require.NoError(t, err)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := closeNotingListener{Listener: raw, accepted: make(chan *closeNotingConn, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, cfg, a) }()

	c, err := net.Dial("tcp", raw.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
	// A 1 MB upload refused for its type after its first kilobyte.
	_, err = fmt.Fprintf(c, "POST /api/chat HTTP/1.1\r\nHost: timebox\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n%s", strings.Repeat("a", 1024))
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	// The end of the stream after the answer is linger's first step (its
	// half-close): the connection lingers now, while the client is silent.
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF)
	server := <-ln.accepted

	cancel() // SIGTERM
	require.NoError(t, <-done)
	select {
	case <-server.closed:
	default:
		t.Fatal("serve returned while the connection lingered: the exit would reset it")
	}
}
