package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// recordedStream is the SSE body of the simulator's testdata recording
// chat_200_stream_v1_endpoint.json, with the usage chunk Azure adds before
// [DONE] when asked for it (stream_options.include_usage), as timebox asks.
func recordedStream(b *testing.B) string {
	raw, err := os.ReadFile(filepath.Join("..", "aoaitest", "testdata", "aoai", "chat_200_stream_v1_endpoint.json"))
	require.NoError(b, err)
	var f struct {
		Response struct {
			SSEEvents []string `json:"sse_events"`
		} `json:"response"`
	}
	require.NoError(b, json.Unmarshal(raw, &f))
	ev := f.Response.SSEEvents
	usage := `data: {"choices":[],"created":1762463856,"id":"chatcmpl-CZ1eKZM4gkXNmYwZns6yjA1QFU18m","model":"gpt-4-turbo-2024-04-09","object":"chat.completion.chunk","system_fingerprint":"fp_5603ee5e2e","usage":{"completion_tokens":29,"prompt_tokens":42,"total_tokens":71}}` + "\n\n"
	return strings.Join(ev[:len(ev)-1], "") + usage + ev[len(ev)-1]
}

// instant is an upstream that answers at once with a recorded stream, so
// the benchmark measures the handler: middleware, decoding, token counting,
// the azcore pipeline, reading the stream, classification and encoding.
type instant struct{ body string }

func (u instant) Do(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	return &http.Response{
		StatusCode: http.StatusOK, Request: r,
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(strings.NewReader(u.body)),
	}, nil
}

func benchHandler(b *testing.B, transport interface {
	Do(*http.Request) (*http.Response, error)
}) http.Handler {
	a := stack(b, "http://127.0.0.1:8081", app.Seams{Upstream: transport})
	return a.Handler
}

func benchChat(b *testing.B, h http.Handler) {
	body := []byte(ask("Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ..."))
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/api/chat", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Origin", allowedOrigin)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	}
}

// BenchmarkChat is the handler's own overhead per chat request.
func BenchmarkChat(b *testing.B) {
	benchChat(b, benchHandler(b, instant{recordedStream(b)}))
}

// BenchmarkChatViaSimulator adds the simulator and an in-memory HTTP
// connection: the whole path a test exercises.
func BenchmarkChatViaSimulator(b *testing.B) {
	sim := aoaitest.New(aoaitest.Options{APIKey: simKey, Deployments: []string{"gpt-4o-mini"}, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	_, client := memnet.Serve(b, sim)
	benchChat(b, benchHandler(b, client))
}
