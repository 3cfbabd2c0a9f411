package memnet_test

import (
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/memnet"
)

func TestServesHTTPInsideABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.Listen()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-time.After(time.Hour) // virtual: the bubble's clock jumps
			_, _ = io.WriteString(w, "late")
		})}
		go func() { _ = srv.Serve(l) }()
		c := l.Client()
		start := time.Now()
		resp, err := c.Get("http://anything/")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, "late", string(body))
		assert.Equal(t, time.Hour, time.Since(start))
		c.CloseIdleConnections()
		require.NoError(t, srv.Close())
	})
}
