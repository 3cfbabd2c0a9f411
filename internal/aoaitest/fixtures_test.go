package aoaitest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// fixtureDir is where the recordings live: in the repository, each file
// naming its source (see testdata/aoai/README.md).
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("testdata", "aoai")
	_, err := os.Stat(dir)
	require.NoError(t, err, "the Azure OpenAI recordings live in internal/aoaitest/testdata/aoai")
	return dir
}

// fixture is the union of the fields the recordings use.
type fixture struct {
	Request *struct {
		Method  string            `json:"method"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Body    json.RawMessage   `json:"body"`
	} `json:"request"`
	Response *struct {
		Status          int               `json:"status"`
		Headers         map[string]string `json:"headers"`
		HeadersObserved map[string]string `json:"headers_observed"`
		HeadersOptional []string          `json:"headers_documented_optional"`
		Body            json.RawMessage   `json:"body"`
		SSEEvents       []string          `json:"sse_events"`
		SSEExcerpt      []string          `json:"sse_events_excerpt"`
	} `json:"response"`
	Variants []struct {
		Kind    string          `json:"kind"`
		When    string          `json:"when"`
		Status  int             `json:"status"`
		Body    json.RawMessage `json:"body"`
		Message string          `json:"message"`
	} `json:"variants"`
}

func loadFixture(t *testing.T, name string) fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir(t), name))
	require.NoError(t, err)
	var f fixture
	require.NoError(t, json.Unmarshal(b, &f), name)
	return f
}

// fixtureOptions is the simulated resource the recordings were made
// against: their deployments, a key that equals the recordings' redacted one,
// bearer tokens accepted, and the quota the 2025 recordings report.
func fixtureOptions() aoaitest.Options {
	return aoaitest.Options{
		Deployments:  []string{"gpt-4-0613", "gpt-4", "gpt-35-turbo-0613"},
		APIKey:       "redacted",
		AcceptBearer: true,
		TPM:          250000,
	}
}

// replay sends a recorded request to h. Authorization is recorded
// sanitized, so it becomes a bearer token; mutate may change the body.
func replay(t *testing.T, h http.Handler, f fixture, mutate func(map[string]any)) *http.Response {
	t.Helper()
	require.NotNil(t, f.Request)
	u, err := url.Parse(f.Request.URL)
	require.NoError(t, err)
	body := []byte(f.Request.Body)
	if mutate != nil {
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m))
		mutate(m)
		body, err = json.Marshal(m)
		require.NoError(t, err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(f.Request.Method, srv.URL+u.RequestURI(), bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range f.Request.Headers {
		switch strings.ToLower(k) {
		case "content-length", "accept-encoding":
		case "authorization":
			req.Header.Set(k, "Bearer sanitized-token")
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// shape reduces a JSON value to its keys and value types, recursively.
func shape(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = shape(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = shape(x)
		}
		return out
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v), "body: %s", b)
	return v
}

func assertSameShape(t *testing.T, want, got []byte) {
	t.Helper()
	assert.Equal(t, shape(decode(t, want)), shape(decode(t, got)))
}

// headersThatMatter are the headers a client of Azure OpenAI reads.
var headersThatMatter = []string{
	"Access-Control-Allow-Origin", "apim-request-id", "Cache-Control", "Content-Type",
	"ms-azureml-model-error-reason", "ms-azureml-model-error-statuscode", "policy-id",
	"retry-after", "retry-after-ms", "x-ms-client-request-id", "x-ms-deployment-name",
	"x-ms-rai-invoked", "x-ms-region", "x-ratelimit-limit-requests", "x-ratelimit-limit-tokens",
	"x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens", "X-Request-ID",
}

// assertHeaders checks that every header that matters in the recording is
// sent, with the same media type; with exact, also that none that matters is
// sent beyond the recording's (gateway errors carry very few).
func assertHeaders(t *testing.T, recorded map[string]string, got http.Header, exact bool) {
	t.Helper()
	rec := http.Header{}
	for k, v := range recorded {
		rec.Set(k, v)
	}
	for _, name := range headersThatMatter {
		_, inRec := rec[http.CanonicalHeaderKey(name)]
		_, inGot := got[http.CanonicalHeaderKey(name)]
		if inRec {
			assert.True(t, inGot, "recorded header %s is missing", name)
		} else if exact {
			assert.False(t, inGot, "header %s is sent but was not in the recording", name)
		}
	}
	if ct := rec.Get("Content-Type"); ct != "" {
		want, _, _ := mime.ParseMediaType(ct)
		have, _, _ := mime.ParseMediaType(got.Get("Content-Type"))
		assert.Equal(t, want, have)
	}
	// The quota figures are the same resource's (fixtureOptions): 250,000
	// TPM, and 250 requests per 10 s.
	for _, name := range []string{"x-ratelimit-limit-requests", "x-ratelimit-limit-tokens"} {
		if v := rec.Get(name); v != "" {
			assert.Equal(t, v, got.Get(name), name)
		}
	}
	if rec.Get("x-ms-client-request-id") == "Not-Set" {
		assert.Equal(t, "Not-Set", got.Get("x-ms-client-request-id"))
	}
}

// messagePattern turns a recorded message into a regexp in which every
// number and request id may differ.
func messagePattern(msg string) *regexp.Regexp {
	uuid := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	q := regexp.QuoteMeta(uuid.ReplaceAllString(msg, "UUID"))
	q = regexp.MustCompile(`[0-9]+`).ReplaceAllString(q, `[0-9]+`)
	q = strings.ReplaceAll(q, "UUID", `[0-9a-f-]{36}`)
	return regexp.MustCompile("^" + q + "$")
}

// wireError is an error body's error object, as far as the tests read it.
type wireError struct {
	Code    any    `json:"code"`
	Message string `json:"message"`
	Param   any    `json:"param"`
}

func errorOf(t *testing.T, b []byte) wireError {
	t.Helper()
	var e struct {
		Error wireError `json:"error"`
	}
	require.NoError(t, json.Unmarshal(b, &e), "%s", b)
	return e.Error
}

func errorMessage(t *testing.T, b []byte) string {
	t.Helper()
	return errorOf(t, b).Message
}

func errorCode(t *testing.T, b []byte) string {
	t.Helper()
	s, _ := errorOf(t, b).Code.(string)
	return s
}

// sseData splits an event stream into its data payloads.
func sseData(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

func TestFixturesAreAllCovered(t *testing.T) {
	covered := []string{
		"chat_200_stream_deployments_path_headers.json",
		"chat_200_stream_v1_endpoint.json",
		"chat_200_success_apikey.json",
		"chat_200_success_entra_bearer.json",
		"chat_400_content_filter_prompt.json",
		"chat_400_context_length_exceeded.json",
		"chat_401_invalid_key.json",
		"chat_404_deployment_not_found.json",
		"chat_429_message_variants.json",
		"chat_429_token_rate_limit.json",
		"chat_5xx_bodies.json",
	}
	entries, err := os.ReadDir(fixtureDir(t))
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			assert.True(t, slices.Contains(covered, e.Name()), "fixture %s has no agreement test", e.Name())
		}
	}
}

// TestFixturesNameTheirSource keeps every recording traceable: a file-level
// source (or sources), or a source on each of its variants. A recording with
// no source is an invention, and the simulator must not be judged against one.
func TestFixturesNameTheirSource(t *testing.T) {
	entries, err := os.ReadDir(fixtureDir(t))
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(fixtureDir(t), e.Name()))
		require.NoError(t, err)
		var f struct {
			Fidelity string            `json:"fidelity"`
			Source   json.RawMessage   `json:"source"`
			Sources  json.RawMessage   `json:"sources"`
			Variants []json.RawMessage `json:"variants"`
		}
		require.NoError(t, json.Unmarshal(b, &f), e.Name())
		assert.NotEmpty(t, f.Fidelity, "%s says how faithful it is", e.Name())
		if f.Source != nil || f.Sources != nil {
			continue
		}
		require.NotEmpty(t, f.Variants, "%s names no source", e.Name())
		for i, raw := range f.Variants {
			var v struct {
				Source string `json:"source"`
			}
			require.NoError(t, json.Unmarshal(raw, &v))
			assert.NotEmpty(t, v.Source, "%s variant %d names no source", e.Name(), i)
		}
	}
}

func TestFixtureNonStreaming(t *testing.T) {
	tests := []string{"chat_200_success_apikey.json", "chat_200_success_entra_bearer.json"}
	for _, name := range tests {
		t.Run(name, func(t *testing.T) {
			f := loadFixture(t, name)
			sim := aoaitest.New(fixtureOptions())
			resp := replay(t, sim, f, nil)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, f.Response.Status, resp.StatusCode, "%s", body)
			assertHeaders(t, f.Response.Headers, resp.Header, false)
			assertSameShape(t, f.Response.Body, body)

			var got struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Message      struct{ Content string }
				}
				ID    string
				Model string
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
					TotalTokens      int `json:"total_tokens"`
				}
			}
			require.NoError(t, json.Unmarshal(body, &got))
			assert.Equal(t, 42, got.Usage.PromptTokens)
			assert.Equal(t, 29, got.Usage.CompletionTokens)
			assert.Equal(t, 71, got.Usage.TotalTokens)
			assert.Equal(t, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10.", got.Choices[0].Message.Content)
			assert.Equal(t, "stop", got.Choices[0].FinishReason)
			assert.Equal(t, "gpt-4", got.Model)
			assert.True(t, strings.HasPrefix(got.ID, "chatcmpl-"), got.ID)
			wantAuth := "api-key"
			if _, bearer := f.Request.Headers["Authorization"]; bearer {
				wantAuth = "bearer"
			}
			assert.Equal(t, wantAuth, sim.Requests()[0].Auth)
		})
	}
}

func TestFixtureStreaming(t *testing.T) {
	tests := []struct {
		name    string
		excerpt bool // only the first events were recorded
	}{
		{name: "chat_200_stream_v1_endpoint.json"},
		{name: "chat_200_stream_deployments_path_headers.json", excerpt: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, tt.name)
			resp := replay(t, aoaitest.New(fixtureOptions()), f, nil)
			require.Equal(t, f.Response.Status, resp.StatusCode)
			assertHeaders(t, f.Response.Headers, resp.Header, false)
			got := sseData(t, resp.Body)

			recorded := f.Response.SSEEvents
			if tt.excerpt {
				recorded = f.Response.SSEExcerpt
			}
			var want []string
			for _, ev := range recorded {
				want = append(want, strings.TrimSuffix(strings.TrimPrefix(ev, "data: "), "\n\n"))
			}
			if tt.excerpt {
				require.GreaterOrEqual(t, len(got), len(want))
				got = got[:len(want)]
			} else {
				require.Len(t, got, len(want), "33 events: filter results, role, 29 deltas, finish, [DONE]")
			}
			var text strings.Builder
			for i := range want {
				if want[i] == "[DONE]" {
					assert.Equal(t, "[DONE]", got[i])
					continue
				}
				assert.Equal(t, shape(decode(t, []byte(want[i]))), shape(decode(t, []byte(got[i]))), "event %d: %s", i, got[i])
				var ev struct {
					Choices []struct{ Delta struct{ Content string } }
				}
				require.NoError(t, json.Unmarshal([]byte(got[i]), &ev))
				if len(ev.Choices) > 0 {
					text.WriteString(ev.Choices[0].Delta.Content)
				}
			}
			if !tt.excerpt {
				assert.Equal(t, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10.", text.String())
			}
		})
	}
}

func TestFixtureGatewayErrors(t *testing.T) {
	tests := []struct {
		name string
		opts func(*aoaitest.Options)
	}{
		// The recording's key is wrong: the resource expects another.
		{"chat_401_invalid_key.json", func(o *aoaitest.Options) { o.APIKey = "the-right-key" }},
		{"chat_404_deployment_not_found.json", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, tt.name)
			o := fixtureOptions()
			if tt.opts != nil {
				tt.opts(&o)
			}
			resp := replay(t, aoaitest.New(o), f, nil)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, f.Response.Status, resp.StatusCode)
			assertHeaders(t, f.Response.Headers, resp.Header, true)
			assert.JSONEq(t, string(f.Response.Body), string(body))
		})
	}
}

func TestFixtureContentFilter(t *testing.T) {
	f := loadFixture(t, "chat_400_content_filter_prompt.json")
	// The simulator filters only on request: the directive stands in for
	// whatever the real filter objected to.
	resp := replay(t, aoaitest.New(fixtureOptions()), f, func(m map[string]any) {
		msgs := m["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)
		last["content"] = last["content"].(string) + " [[sim:filter]]"
	})
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, 400, resp.StatusCode)
	assertHeaders(t, f.Response.Headers, resp.Header, false)
	assert.JSONEq(t, string(f.Response.Body), string(body))
}

// chatBody is a request body with one user message.
func chatBody(text string, maxTokens int, stream bool) string {
	m := map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}, "stream": stream}
	if maxTokens > 0 {
		m["max_tokens"] = maxTokens
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// post sends a chat request to a deployment of h with api-version
// 2024-02-15-preview and returns the response and its body.
func post(t *testing.T, h http.Handler, deployment, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/openai/deployments/"+deployment+"/chat/completions?api-version=2024-02-15-preview", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func TestFixtureContextLengthExceeded(t *testing.T) {
	f := loadFixture(t, "chat_400_context_length_exceeded.json")
	require.Len(t, f.Variants, 3)
	long := strings.Repeat("word ", 5000)
	tests := []struct {
		name      string
		variant   int
		maxTokens int
	}{
		{"prompt plus max_tokens over the window", 0, 1024},
		{"messages alone over the window", 1, 1024},
		{"huge max_tokens", 2, 1000000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := f.Variants[tt.variant]
			window := 4096 + 1024 // the prompt fits, the completion does not
			if tt.variant == 1 {
				window = 4096
			}
			sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}, ContextWindow: window})
			resp, body := post(t, sim, "gpt-4o", chatBody(long, tt.maxTokens, false), nil)
			assert.Equal(t, v.Status, resp.StatusCode)
			if v.Body != nil {
				assertSameShape(t, v.Body, body)
				assert.Equal(t, errorOf(t, v.Body).Param, errorOf(t, body).Param, "the request field Azure names")
			}
			msg := errorMessage(t, body)
			want := v.Message
			if want == "" {
				want = errorMessage(t, v.Body)
			}
			assert.Regexp(t, messagePattern(want), msg)
			prompt := sim.Requests()[0].PromptTokens
			if tt.variant == 1 {
				assert.Contains(t, msg, fmt.Sprintf("maximum context length is %d tokens. However, your messages resulted in %d tokens.", window, prompt))
			} else {
				assert.Contains(t, msg, fmt.Sprintf("you requested %d tokens (%d in the messages, %d in the completion)", prompt+tt.maxTokens, prompt, tt.maxTokens))
			}
		})
	}
}

func TestFixtureTokenRateLimit(t *testing.T) {
	f := loadFixture(t, "chat_429_token_rate_limit.json")
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}, TPM: 1000})
	ok, _ := post(t, sim, "gpt-4o", chatBody("hello", 900, false), nil)
	require.Equal(t, 200, ok.StatusCode)
	resp, body := post(t, sim, "gpt-4o", chatBody("hello", 900, false), nil)
	assert.Equal(t, f.Response.Status, resp.StatusCode)
	for name := range f.Response.HeadersObserved {
		assert.NotEmpty(t, resp.Header.Get(name), "observed header %s", name)
	}
	for _, name := range f.Response.HeadersOptional {
		assert.NotEmpty(t, resp.Header.Get(name), "documented header %s", name)
	}
	assert.Equal(t, "DeploymentRatelimit-Token", resp.Header.Get("policy-id"))
	assertSameShape(t, f.Response.Body, body)
	assert.Regexp(t, messagePattern(errorMessage(t, f.Response.Body)), errorMessage(t, body))
	assert.Contains(t, errorMessage(t, body), "API version 2024-02-15-preview ")
}

func TestFixtureThrottleVariants(t *testing.T) {
	f := loadFixture(t, "chat_429_message_variants.json")
	byKind := map[string]int{}
	for i, v := range f.Variants {
		byKind[v.Kind] = i
	}
	t.Run("TPM", func(t *testing.T) {
		v := f.Variants[byKind["TPM (token rate limit), OpenAI S0"]]
		sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
		resp, body := post(t, sim, "gpt-4o", chatBody("hi [[sim:throttle s=7]]", 0, false), nil)
		assert.Equal(t, v.Status, resp.StatusCode)
		assertSameShape(t, v.Body, body)
		assert.Regexp(t, messagePattern(errorMessage(t, v.Body)), errorMessage(t, body))
		assert.Contains(t, errorMessage(t, body), "Please retry after 7 seconds.")
	})
	t.Run("single request over the quota", func(t *testing.T) {
		v := f.Variants[byKind["single request larger than the deployment TPM (can never succeed) - AIServices S0"]]
		sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}, TPM: 1000})
		resp, body := post(t, sim, "gpt-4o", chatBody("hi", 1001, false), nil)
		assert.Equal(t, v.Status, resp.StatusCode)
		assertSameShape(t, v.Body, body)
		assert.Equal(t, "86400", resp.Header.Get("retry-after"))
		assert.Equal(t, "86400000", resp.Header.Get("retry-after-ms"))
		// The recorded one is an AIServices resource; the simulator speaks
		// as an OpenAI S0 one, like the other recordings.
		assert.Contains(t, errorMessage(t, body), "Please retry after 86400 seconds.")
	})
	t.Run("RPM", func(t *testing.T) {
		v := f.Variants[byKind["RPM (call rate limit)"]]
		// 1000 TPM is 6 RPM, one request per 10 s; the second is refused.
		sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}, TPM: 1000})
		ok, _ := post(t, sim, "gpt-4o", chatBody("hi", 10, false), nil)
		require.Equal(t, 200, ok.StatusCode)
		resp, body := post(t, sim, "gpt-4o", chatBody("hi", 10, false), nil)
		assert.Equal(t, v.Status, resp.StatusCode)
		// The recording's API version has no -preview suffix; ours does.
		assert.Regexp(t, messagePattern(strings.Replace(v.Message, "2024-02-01", "2024-02-15-preview", 1)), errorMessage(t, body))
		assert.Equal(t, "DeploymentRatelimit-Call", resp.Header.Get("policy-id"))
		assert.NotEmpty(t, resp.Header.Get("retry-after"))
	})
	// The late-2025, short-form and capacity wordings are not simulated:
	// clients must read retry-after, not the text.
}

func TestFixtureServerErrors(t *testing.T) {
	f := loadFixture(t, "chat_5xx_bodies.json")
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	for _, code := range []int{500, 502, 503, 504} {
		resp, body := post(t, sim, "gpt-4o", chatBody(fmt.Sprintf("hi [[sim:status code=%d]]", code), 0, false), nil)
		assert.Equal(t, code, resp.StatusCode)
		assertSameShape(t, f.Variants[0].Body, body)
		if code == 500 {
			for _, v := range f.Variants[:2] {
				assert.Equal(t, 500, v.Status)
				assertSameShape(t, v.Body, body)
			}
			assert.Regexp(t, messagePattern(errorMessage(t, f.Variants[0].Body)), errorMessage(t, body))
			assert.Contains(t, errorMessage(t, body), resp.Header.Get("apim-request-id"))
		}
	}
	// The third variant is the embeddings gateway's body, not chat's.
}
