package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// chatBody is the request every round sends: one short question, as a web
// part asks it.
const chatBody = `{"messages":[{"role":"user","content":"What does the travel policy say about trains?"}]}`

// chat makes one POST /api/chat and fails unless it is a 200.
func chat(ctx context.Context, c *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/chat", strings.NewReader(chatBody))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /api/chat: %d", resp.StatusCode)
	}
	return nil
}

func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns}}
}

// coldStart execs bin rounds times (alternating with the other subjects by
// the caller) and returns each exec-to-first-200 time.
func coldStart(ctx context.Context, name, bin, upstreamURL string) (time.Duration, error) {
	s, d, err := start(ctx, name, bin, upstreamURL)
	if err != nil {
		return 0, err
	}
	s.stop()
	return d, nil
}

// latencies sends n requests one after another on one connection and
// returns each one's time.
func latencies(ctx context.Context, c *http.Client, base string, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := chat(ctx, c, base); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t))
	}
	return out, nil
}

// throughput runs clients concurrent callers for d and returns the
// answered requests per second and their number; any failure fails the
// round.
func throughput(ctx context.Context, c *http.Client, base string, clients int, d time.Duration) (float64, int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var failure error
	t := time.Now()
	stop := t.Add(d)
	for range clients {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if err := chat(ctx, c, base); err != nil {
					if ctx.Err() == nil {
						once.Do(func() { failure = err; cancel() })
					}
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if failure != nil {
		return 0, 0, failure
	}
	return float64(n.Load()) / time.Since(t).Seconds(), n.Load(), nil
}

// heldMemory starts bin afresh, warms it with a few answered requests,
// then holds n requests on the hanging upstream and returns the growth of
// its resident memory per held request.
func heldMemory(ctx context.Context, name, bin string, up *upstream, n int) (float64, error) {
	s, _, err := start(ctx, name, bin, up.url)
	if err != nil {
		return 0, err
	}
	defer s.stop()
	warm := newClient(1)
	defer warm.CloseIdleConnections()
	if _, err := latencies(ctx, warm, s.base, 20); err != nil {
		return 0, err
	}
	time.Sleep(time.Second) // let anything started in the background settle
	before, err := s.rss()
	if err != nil {
		return 0, err
	}

	up.hang.Store(true)
	defer up.hang.Store(false)
	hctx, cancel := context.WithCancel(ctx)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1}}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { chat(hctx, c, s.base) })
	}
	defer func() {
		cancel()
		wg.Wait()
		for up.held.Load() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for up.held.Load() < int64(n) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("%s: only %d of %d requests reached the upstream in 60 s", name, up.held.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	after, err := s.rss()
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

func median[T int64 | float64 | time.Duration](v []T) T {
	if len(v) == 0 {
		return 0 // a phase skipped with -...-rounds 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
