package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/openaiwire"
)

// stalledStore never answers: each call to the quota store waits until
// its own deadline ends it, as a store that accepted the connection and
// hangs.
type stalledStore struct{}

func (stalledStore) Do(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestQuotaStoreSlowerThanTheCallersDeadline: with the store stalled and
// the caller's x-client-timeout-ms (3 s, less the 2 s margin) shorter than
// the store's own 5 s step, the request's time runs out while the store is
// asked. The answer names the quota store, not documents and pages that
// were never sent (POST /api/chat, probed: "Reading the documents and
// pages...") nor a page (GET /api/usage, probed: 500 fetch_timeout,
// "Reading the page usage was not finished"); nothing goes upstream.
func TestQuotaStoreSlowerThanTheCallersDeadline(t *testing.T) {
	for _, tt := range []struct {
		name, method, path, body string
		want                     string
	}{
		{"chat", http.MethodPost, "/api/chat", ask("hi"), "your token quota could not be checked, so the question was not sent"},
		{"openai", http.MethodPost, "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, "your token quota could not be checked, so the question was not sent"},
		{"usage", http.MethodGet, "/api/usage", "", "your token usage could not be read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, map[string]string{
					"QUOTA_TABLE_ENDPOINT": "http://127.0.0.1:10002/devstoreaccount1", "QUOTA_USER_DAILY_TOKENS": "100000",
				}, aoaitest.Options{}, withQuotaStore(func(policy.Transporter) policy.Transporter { return stalledStore{} }))
				var r *http.Request
				if tt.body != "" {
					r = chatRequest(tt.body, "x-client-timeout-ms", "3000")
					r.URL.Path = tt.path
				} else {
					r = httptest.NewRequest(tt.method, tt.path, nil)
					r.Header.Set("Origin", allowedOrigin)
					r.Header.Set("x-client-timeout-ms", "3000")
				}
				w := h.do(r)
				require.Equal(t, http.StatusInternalServerError, w.Code, w.Body.String())
				var msg, code string
				if strings.HasPrefix(tt.path, "/openai/") {
					var e openaiwire.ErrorBody
					require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e))
					require.NotNil(t, e.Error.Code)
					code, msg = *e.Error.Code, e.Error.Message
				} else {
					e := decodeError(t, w)
					code, msg = e.Error.Code, e.Error.Message
				}
				assert.Equal(t, apiwire.CodeDeadlineExceeded, code)
				assert.Equal(t, "The quota store did not answer before the request's time (1s in all) ran out: "+tt.want+". Try again in a moment, or allow more time.", msg)
				assert.Equal(t, "false", w.Header().Get("x-should-retry"))
				assert.Equal(t, allowedOrigin, w.Header().Get("Access-Control-Allow-Origin"))
				assert.Empty(t, h.sim.Requests(), "nothing sent upstream")
			})
		})
	}
}
