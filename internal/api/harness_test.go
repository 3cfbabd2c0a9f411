package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/fetch/fetchtest"
	"github.com/timebox-dev/timebox/internal/memnet"
	"github.com/timebox-dev/timebox/internal/testlog"
)

const (
	allowedOrigin = "https://contoso.sharepoint.com"
	simKey        = "sim-key"
)

// harness is the whole stack as app.New builds it (the real handler, the
// real azcore client) and the simulator, joined by an in-memory network so
// it runs inside a synctest bubble.
type harness struct {
	t       *testing.T
	sim     *aoaitest.Server
	handler http.Handler
	logs    *testlog.Buffer
	cfg     config.Config
	seams   app.Seams
}

// newHarness builds the stack from environment-style settings (over sane
// defaults) and simulator options. Call it inside the bubble; it cleans up
// after itself when the test ends.
func newHarness(t *testing.T, env map[string]string, simOpts aoaitest.Options, opts ...option) *harness {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT":   "http://127.0.0.1:8081",
		"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
		"AZURE_OPENAI_API_KEY":    simKey,
		"ALLOWED_ORIGINS":         allowedOrigin + ",https://*.example.org",
	}
	for k, v := range env {
		settings[k] = v
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(t, err)

	if simOpts.APIKey == "" && !simOpts.AcceptBearer {
		simOpts.APIKey = simKey
	}
	if simOpts.Deployments == nil {
		simOpts.Deployments = []string{"gpt-4o-mini"}
	}
	sim := aoaitest.New(simOpts)
	_, client := memnet.Serve(t, sim)

	// The web (fetch's own fakes): the test names resolve to a public address,
	// so the real address check passes as it would on the internet, or to a
	// private one, and every connection lands on o.web.
	web := o.web
	if web == nil {
		web = http.NotFoundHandler()
	}
	pub := []string{fetchtest.PublicIP}
	dns := fetchtest.NewDNS(map[string][][]string{
		"intranet.contoso.example": {pub}, "gone.example": {pub}, "slow.example": {pub},
		"intranet.private.example": {{"10.0.0.7"}},
	})
	// The stack as the binary builds it from the same settings (app.New);
	// only the network is the test's.
	logs := &testlog.Buffer{}
	seams := app.Seams{
		Logs: logs, Version: "test", Upstream: client,
		Resolver: dns, Dial: fetchtest.NewWeb(t, web).DialContext,
		Extractor: o.extractor, Credential: o.credential,
		// The quota store (a real Azurite, in the tests that set one)
		// keeps no idle connection: its reader, blocked on a real socket,
		// would stop a synctest bubble's clock until Azurite closed it.
		Quota: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
	}
	if o.quotaStore != nil {
		seams.Quota = o.quotaStore(seams.Quota)
	}
	if o.issuer != nil {
		// Entra ID is the local issuer, whatever AZURE_AUTHORITY_HOST names.
		_, seams.Authority = memnet.Serve(t, o.issuer)
	}
	a, err := app.New(cfg, seams)
	require.NoError(t, err)
	return &harness{t: t, sim: sim, handler: a.Handler, logs: logs, cfg: cfg, seams: seams}
}

// twin is another instance of h's app: the same settings, simulator and
// quota table, and the same log.
func (h *harness) twin() *harness {
	h.t.Helper()
	a, err := app.New(h.cfg, h.seams)
	require.NoError(h.t, err)
	other := *h
	other.handler = a.Handler
	return &other
}

// stack is the whole handler as app.New builds it from the default test
// settings, calling Azure OpenAI at endpoint (a real test server's URL, or
// any loopback URL when seams.Upstream carries the calls); seams as app.New
// takes it. For tests and benchmarks that need the stack without the
// simulator harness: the real transport, a slow stdout.
func stack(tb testing.TB, endpoint string, seams app.Seams) *app.App {
	tb.Helper()
	return stackOn(tb, endpoint, "gpt-4o-mini", seams)
}

// stackOn is stack for a deployment of another model (o3: long answers in
// background mode).
func stackOn(tb testing.TB, endpoint, deployment string, seams app.Seams) *app.App {
	tb.Helper()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{
			"AZURE_OPENAI_ENDPOINT": endpoint, "AZURE_OPENAI_DEPLOYMENT": deployment,
			"AZURE_OPENAI_API_KEY": simKey, "ALLOWED_ORIGINS": allowedOrigin,
		}[k]
	})
	require.NoError(tb, err)
	a, err := app.New(cfg, seams)
	require.NoError(tb, err)
	return a
}

type options struct {
	web        http.Handler
	extractor  api.Extractor
	issuer     http.Handler
	credential azcore.TokenCredential
	quotaStore func(next policy.Transporter) policy.Transporter
}

type option func(*options)

// withUpstreamCredential is the Entra ID credential for Azure OpenAI (the
// managed identity's in Azure), used when AZURE_OPENAI_API_KEY is empty.
func withUpstreamCredential(c azcore.TokenCredential) option {
	return func(o *options) { o.credential = c }
}

// withQuotaStore wraps the quota store's transport.
func withQuotaStore(wrap func(next policy.Transporter) policy.Transporter) option {
	return func(o *options) { o.quotaStore = wrap }
}

// withWeb serves every page fetch with h.
func withWeb(h http.Handler) option { return func(o *options) { o.web = h } }

// withIssuer makes h (an issuertest.Issuer) the Entra ID the handler
// fetches metadata and keys from.
func withIssuer(h http.Handler) option { return func(o *options) { o.issuer = h } }

// withExtractor replaces the document extractor.
func withExtractor(e api.Extractor) option { return func(o *options) { o.extractor = e } }

// do sends one request through the whole handler.
func (h *harness) do(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.handler.ServeHTTP(w, r)
	return w
}

// chat sends a chat request from the allowed origin with the given body.
func chatRequest(body string, headers ...string) *http.Request {
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/api/chat", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Origin", allowedOrigin)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	return r
}

func ask(question string) string {
	b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": question}}})
	return string(b)
}

func decodeError(t *testing.T, w *httptest.ResponseRecorder) apiwire.ErrorBody {
	t.Helper()
	var e apiwire.ErrorBody
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e), w.Body.String())
	return e
}

func decodeOK(t *testing.T, w *httptest.ResponseRecorder) api.ChatResponse {
	t.Helper()
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var resp api.ChatResponse
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
	return resp
}

// logLines returns the JSON log lines for requests.
func (h *harness) logLines() []map[string]any {
	var out []map[string]any
	dec := json.NewDecoder(strings.NewReader(h.logs.String()))
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return out
		} else if err != nil {
			h.t.Fatalf("log is not JSON lines: %v", err)
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
}
