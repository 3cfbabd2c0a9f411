package aoai

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorded reads one error body from the recordings the simulator is
// checked against (internal/aoaitest/testdata/aoai): the response body, or
// the body of a variant.
func recorded(t *testing.T, file string, variant int) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "aoaitest", "testdata", "aoai", file))
	require.NoError(t, err)
	var f struct {
		Response struct {
			Body json.RawMessage `json:"body"`
		} `json:"response"`
		Variants []struct {
			Body    json.RawMessage `json:"body"`
			Message string          `json:"message"`
			Code    string          `json:"code"`
		} `json:"variants"`
	}
	require.NoError(t, json.Unmarshal(b, &f))
	if variant < 0 {
		return f.Response.Body
	}
	v := f.Variants[variant]
	if v.Body != nil {
		return v.Body
	}
	out, _ := json.Marshal(map[string]any{"error": map[string]string{"code": v.Code, "message": v.Message}})
	return out
}

func TestClassifyRecordedErrors(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		header    http.Header
		body      []byte
		want      Kind
		wantCode  string
		wantRetry time.Duration
	}{
		{"content filter", 400, nil, recorded(t, "chat_400_content_filter_prompt.json", -1), KindFiltered, "content_filter", 0},
		{"context length, messages and completion", 400, nil, recorded(t, "chat_400_context_length_exceeded.json", 0), KindTooLarge, "context_length_exceeded", 0},
		{"context length, messages alone", 400, nil, recorded(t, "chat_400_context_length_exceeded.json", 1), KindTooLarge, "context_length_exceeded", 0},
		{"invalid key", 401, nil, recorded(t, "chat_401_invalid_key.json", -1), KindMisconfigured, "401", 0},
		{"deployment not found", 404, nil, recorded(t, "chat_404_deployment_not_found.json", -1), KindMisconfigured, "DeploymentNotFound", 0},
		{"token rate limit, retry-after-ms wins", 429, http.Header{"Retry-After": {"33"}, "Retry-After-Ms": {"32500"}}, recorded(t, "chat_429_token_rate_limit.json", -1), KindThrottled, "429", 32500 * time.Millisecond},
		{"token rate limit, seconds", 429, http.Header{"Retry-After": {"7"}}, recorded(t, "chat_429_message_variants.json", 0), KindThrottled, "429", 7 * time.Second},
		{"no wait given", 429, nil, recorded(t, "chat_429_message_variants.json", 5), KindThrottled, "429", 0},
		{"single request over the limit", 429, http.Header{"Retry-After": {"86400"}}, recorded(t, "chat_429_message_variants.json", 3), KindTooLarge, "429", 86400 * time.Second},
		{"server error, code null", 500, nil, recorded(t, "chat_5xx_bodies.json", 0), KindTransient, "", 0},
		{"gateway body", 500, nil, []byte(`{"statusCode":500,"message":"Internal server error"}`), KindTransient, "", 0},
		{"service unavailable, no body", 503, nil, nil, KindUnavailable, "", 0},
		{"service unavailable, retry-after-ms wins", 503, http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"2500"}}, nil, KindUnavailable, "", 2500 * time.Millisecond},
		{"service unavailable, seconds", 503, http.Header{"Retry-After": {"4"}}, nil, KindUnavailable, "", 4 * time.Second},
		{"service unavailable, a minute", 503, http.Header{"Retry-After": {"60"}}, nil, KindUnavailable, "", time.Minute},
		{"service unavailable, absurd wait dropped", 503, http.Header{"Retry-After-Ms": {"999999999999999"}}, nil, KindUnavailable, "", 0},
		{"service unavailable, date in 2100 dropped", 503, http.Header{"Retry-After": {"Fri, 01 Jan 2100 00:00:00 GMT"}}, nil, KindUnavailable, "", 0},
		{"bad gateway, html", 502, nil, []byte("<html>502 Bad Gateway</html>"), KindTransient, "", 0},
		{"other 400", 400, nil, []byte(`{"error":{"code":"invalid_value","message":"temperature"}}`), KindRejected, "invalid_value", 0},
		{"forbidden", 403, nil, []byte(`{"error":{"code":"PermissionDenied","message":"..."}}`), KindMisconfigured, "PermissionDenied", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := classify(tt.status, tt.header, tt.body)
			assert.Equal(t, tt.want, e.Kind)
			assert.Equal(t, tt.wantCode, e.Code)
			assert.Equal(t, tt.wantRetry, e.RetryAfter)
			assert.Equal(t, tt.status, e.Status)
		})
	}
}

// The rule sees a connection error or an unreadable answer as a network
// error, and a request too large for the quota as nothing a wait can fix.
func TestRuleStatus(t *testing.T) {
	assert.Equal(t, 0, (&Error{Kind: KindTransient}).ruleStatus())
	assert.Equal(t, 0, (&Error{Kind: KindTransient, Status: 200}).ruleStatus())
	assert.Equal(t, 500, (&Error{Kind: KindTransient, Status: 500}).ruleStatus())
	assert.Equal(t, 413, (&Error{Kind: KindTooLarge, Status: 429}).ruleStatus())
	assert.Equal(t, 429, (&Error{Kind: KindThrottled, Status: 429}).ruleStatus())
}
