package api_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// recordedBody is the body of internal/aoaitest/testdata/aoai/chat_200_success_apikey.json.
const recordedBody = `{"choices":[{"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}},"finish_reason":"stop","index":0,"logprobs":null,"message":{"content":"1, 2, 3, 4, 5, 6, 7, 8, 9, 10.","role":"assistant"}}],"created":1738701397,"id":"Sanitized","model":"gpt-4","object":"chat.completion","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}}],"system_fingerprint":null,"usage":{"completion_tokens":29,"prompt_tokens":42,"total_tokens":71}}`

// instant is an upstream that answers at once with the recorded body, so
// the benchmark measures the handler: middleware, decoding, token counting,
// the azcore pipeline, classification and encoding.
type instant struct{}

func (instant) Do(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	return &http.Response{
		StatusCode: http.StatusOK, Request: r,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(strings.NewReader(recordedBody)),
	}, nil
}

func benchHandler(b *testing.B, transport interface {
	Do(*http.Request) (*http.Response, error)
}) http.Handler {
	cfg, err := config.Load(func(k string) string {
		return map[string]string{
			"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081", "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
			"AZURE_OPENAI_API_KEY": simKey, "ALLOWED_ORIGINS": allowedOrigin,
		}[k]
	})
	require.NoError(b, err)
	a, err := app.New(cfg, app.Ext{Upstream: transport})
	require.NoError(b, err)
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
	benchChat(b, benchHandler(b, instant{}))
}

// BenchmarkChatViaSimulator adds the simulator and an in-memory HTTP
// connection: the whole path a test exercises.
func BenchmarkChatViaSimulator(b *testing.B) {
	sim := aoaitest.New(aoaitest.Options{APIKey: simKey, Deployments: []string{"gpt-4o-mini"}, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	_, client := memnet.Serve(b, sim)
	benchChat(b, benchHandler(b, client))
}
