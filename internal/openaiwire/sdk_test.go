package openaiwire_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/issuertest"
	"github.com/timebox-dev/timebox/internal/memnet"
	"github.com/timebox-dev/timebox/internal/testlog"
)

// These tests run openai-go (github.com/openai/openai-go/v3, pinned in
// go.mod) unchanged against the whole handler as app.New builds it and the
// simulator, joined by an in-memory network inside a synctest bubble: the
// SDK's own retries and backoff run on the bubble's clock. The handler is
// served over TLS, as it is in Azure (azure.WithTokenCredential sends a
// token over https only).

const (
	host        = "https://timebox.test"
	audience    = "api://timebox-test"
	tenant      = issuertest.DefaultTenant
	authority   = "http://127.0.0.1:9" // memnet reaches the issuer whatever the address
	deployment  = "gpt-4o-mini"
	simulatorID = "sim-key"
)

// sdkStack is the handler and the simulator, and an HTTP client that
// reaches the handler at host.
type sdkStack struct {
	sim    *aoaitest.Server
	client *http.Client
	logs   *testlog.Buffer
	iss    *issuertest.Issuer
}

// logLines are the request log lines, once every request in the bubble
// has written its own (a line is written after its answer has gone).
func (s *sdkStack) logLines(t *testing.T) []map[string]any {
	synctest.Wait()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.logs.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// newStack builds the stack from settings over the test's defaults (a 40 s
// budget, so that a throttle's wait can outlast it without being one that
// never clears); entra adds AUTH_MODE=entra against a local issuer; sim
// sets the simulator's options (its pace).
func newStack(t *testing.T, entra bool, env map[string]string, sim ...func(*aoaitest.Options)) *sdkStack {
	t.Helper()
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081", "AZURE_OPENAI_DEPLOYMENT": deployment,
		"AZURE_OPENAI_API_KEY": simulatorID, "REQUEST_BUDGET": "40s",
	}
	if entra {
		settings["AUTH_MODE"], settings["AUTH_AUDIENCE"], settings["AUTH_TENANTS"], settings["AZURE_AUTHORITY_HOST"] = "entra", audience, tenant, authority
	}
	for k, v := range env {
		settings[k] = v
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(t, err)
	opts := aoaitest.Options{APIKey: simulatorID, Deployments: []string{deployment}}
	for _, f := range sim {
		f(&opts)
	}
	sm := aoaitest.New(opts)
	_, upstream := memnet.Serve(t, sm)
	s := &sdkStack{sim: sm, logs: &testlog.Buffer{}}
	ext := app.Seams{Logs: s.logs, Version: "test", Upstream: upstream}
	if entra {
		s.iss, err = issuertest.New()
		require.NoError(t, err)
		_, ext.Authority = memnet.Serve(t, s.iss)
	}
	a, err := app.New(cfg, ext)
	require.NoError(t, err)
	s.client = serveTLS(t, a.Handler)
	return s
}

// serveTLS serves h over TLS on an in-memory listener until the test ends,
// with a certificate for host, and returns a client that trusts it.
func serveTLS(t *testing.T, h http.Handler) *http.Client {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "timebox.test"}, DNSNames: []string{"timebox.test"},
		// A bubble's clock starts in 2000.
		NotBefore: time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)

	l := memnet.Listen()
	srv := &http.Server{Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	c := &http.Client{Transport: &http.Transport{DialContext: l.DialContext, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(func() {
		c.CloseIdleConnections()
		_ = srv.Close()
	})
	return c
}

// openAI is openai-go as a caller of the OpenAI API points it here.
func (s *sdkStack) openAI(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(host + "/openai/v1"), option.WithHTTPClient(s.client), option.WithAPIKey("unused"),
	}, opts...)...)
}

// upstream is the simulator's record of the calls it was sent, once every
// call in the bubble is over (a cancelled call ends after the answer).
func (s *sdkStack) upstream() []aoaitest.Record {
	synctest.Wait()
	return s.sim.Requests()
}

// upstreamStatuses are the statuses the simulator answered, in order.
func (s *sdkStack) upstreamStatuses() []int {
	var out []int
	for _, r := range s.upstream() {
		out = append(out, r.Status)
	}
	return out
}

// bothClients runs f, in a synctest bubble of its own, under each way a
// caller points openai-go here: option.WithBaseURL (the OpenAI API's
// paths), and azure.WithEndpoint with an Entra ID token credential (the
// deployments path, as an Azure client changes only its endpoint).
func bothClients(t *testing.T, f func(t *testing.T, s *sdkStack, c openai.Client)) {
	for _, tt := range []struct {
		name  string
		azure bool
	}{{"WithBaseURL", false}, {"azure.WithEndpoint", true}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newStack(t, tt.azure, nil)
				c := s.openAI()
				if tt.azure {
					c = s.azureOpenAI(nil)
				}
				f(t, s, c)
			})
		})
	}
}

// azureOpenAI is openai-go as an Azure client points it here: the
// deployments path, an Entra ID token for this app (its scopes noted in
// scopes, when not nil).
func (s *sdkStack) azureOpenAI(scopes *[]string) openai.Client {
	if scopes == nil {
		scopes = new([]string)
	}
	return openai.NewClient(
		azure.WithEndpoint(host, "2024-10-21"),
		azure.WithTokenCredential(issuerCredential{s.iss, scopes}, azure.WithTokenCredentialScopes([]string{audience + "/.default"})),
		option.WithHTTPClient(s.client),
	)
}

func ask(q string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: deployment, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)}}
}

func TestGoSDKAnswer(t *testing.T) {
	bothClients(t, func(t *testing.T, s *sdkStack, c openai.Client) {
		res, err := c.Chat.Completions.New(context.Background(), ask("Count to 5."))
		require.NoError(t, err)
		assert.Equal(t, "1, 2, 3, 4, 5.", res.Choices[0].Message.Content)
		assert.Equal(t, "stop", res.Choices[0].FinishReason)
		assert.Positive(t, res.Usage.CompletionTokens)
		assert.Equal(t, []int{200}, s.upstreamStatuses())
		// What Azure's chunks said besides the text reaches the completion.
		assert.True(t, strings.HasPrefix(res.ID, "chatcmpl-"), res.ID)
		assert.Equal(t, deployment, res.Model)
		assert.Positive(t, res.Created)
		// Deprecated in the SDK, but Azure still sends it and old code reads it.
		assert.Equal(t, "fp_aoaisim", res.SystemFingerprint) //lint:ignore SA1019 the wire still carries it
		var azure struct {
			PromptFilterResults []struct {
				ContentFilterResults map[string]any `json:"content_filter_results"`
			} `json:"prompt_filter_results"`
			Choices []struct {
				ContentFilterResults map[string]struct {
					Severity string `json:"severity"`
				} `json:"content_filter_results"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.RawJSON()), &azure))
		require.Len(t, azure.PromptFilterResults, 1, res.RawJSON())
		assert.Contains(t, azure.PromptFilterResults[0].ContentFilterResults, "jailbreak")
		assert.Equal(t, "safe", azure.Choices[0].ContentFilterResults["violence"].Severity, res.RawJSON())
	})
}

func TestGoSDKStream(t *testing.T) {
	bothClients(t, func(t *testing.T, s *sdkStack, c openai.Client) {
		p := ask("Count to 20.")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		stream := c.Chat.Completions.NewStreaming(context.Background(), p)
		acc := openai.ChatCompletionAccumulator{}
		chunks := 0
		for stream.Next() {
			chunks++
			acc.AddChunk(stream.Current())
		}
		require.NoError(t, stream.Err())
		assert.Greater(t, chunks, 10)
		assert.Equal(t, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20.", acc.Choices[0].Message.Content)
		assert.Positive(t, acc.Usage.CompletionTokens, "the usage chunk, asked for")

		// Not asked for, no chunk carries the usage (timebox asks Azure for it always).
		stream = c.Chat.Completions.NewStreaming(context.Background(), ask("Count to 5."))
		for stream.Next() {
			assert.Zero(t, stream.Current().Usage.TotalTokens)
		}
		require.NoError(t, stream.Err())
		assert.Equal(t, []int{200, 200}, s.upstreamStatuses())
	})
}

func TestGoSDKToolCall(t *testing.T) {
	bothClients(t, func(t *testing.T, s *sdkStack, c openai.Client) {
		p := ask("What is the weather in Paris?")
		p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"question": map[string]string{"type": "string"}}},
		})}
		res, err := c.Chat.Completions.New(context.Background(), p)
		require.NoError(t, err)
		require.Len(t, res.Choices[0].Message.ToolCalls, 1)
		call := res.Choices[0].Message.ToolCalls[0]
		assert.Equal(t, "tool_calls", res.Choices[0].FinishReason)
		assert.Equal(t, "get_weather", call.Function.Name)
		assert.JSONEq(t, `{"question":"What is the weather in Paris?"}`, call.Function.Arguments)

		// The round trip the SDK's docs show: the answer's message back, then the result.
		p.Messages = append(p.Messages, res.Choices[0].Message.ToParam(), openai.ToolMessage("Sunny.", call.ID))
		res, err = c.Chat.Completions.New(context.Background(), p)
		require.NoError(t, err)
		assert.Equal(t, "stop", res.Choices[0].FinishReason)
		assert.NotEmpty(t, res.Choices[0].Message.Content)
	})
}

// The deadline: one upstream call, the SDK does not retry, and its error
// carries timebox's message and code.
func TestGoSDKDeadlineIsAskedOnce(t *testing.T) {
	bothClients(t, func(t *testing.T, s *sdkStack, c openai.Client) {
		start := time.Now()
		_, err := c.Chat.Completions.New(context.Background(), ask("[[sim:hang]] hi"))
		var e *openai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, http.StatusInternalServerError, e.StatusCode)
		assert.Equal(t, "deadline_exceeded", e.Code)
		assert.Contains(t, e.Message, "did not answer in time")
		assert.Equal(t, "false", e.Response.Header.Get("x-should-retry"))
		assert.Len(t, s.upstream(), 1, "one upstream call")
		assert.Len(t, s.logLines(t), 1, "the SDK asked once")
		assert.Equal(t, 40*time.Second, time.Since(start).Round(time.Second), "answered at the budget")
	})
}

// A fast 503 is retried by the SDK (x-should-retry: true), then answered.
func TestGoSDKRetriesAFast503(t *testing.T) {
	bothClients(t, func(t *testing.T, s *sdkStack, c openai.Client) {
		res, err := c.Chat.Completions.New(context.Background(), ask("[[sim:status code=503 times=1 id=go-503]] Count to 3."))
		require.NoError(t, err)
		assert.Equal(t, "1, 2, 3.", res.Choices[0].Message.Content)
		assert.Equal(t, []int{503, 200}, s.upstreamStatuses(), "two upstream calls")
	})
}

// A 429 whose wait outlasts the budget, and does not fit under the
// fast-failure threshold, is surfaced at once: one call.
func TestGoSDKSurfacesA429ThatDoesNotFit(t *testing.T) {
	bothClients(t, func(t *testing.T, s *sdkStack, c openai.Client) {
		_, err := c.Chat.Completions.New(context.Background(), ask("[[sim:throttle s=50 times=1 id=go-429]] hi"))
		var e *openai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, http.StatusTooManyRequests, e.StatusCode)
		assert.Equal(t, "rate_limited", e.Code)
		assert.Equal(t, "false", e.Response.Header.Get("x-should-retry"))
		assert.Equal(t, "50", e.Response.Header.Get("retry-after"))
		assert.Equal(t, []int{429}, s.upstreamStatuses(), "one upstream call")
	})
}

// A cut in the middle of a stream is raised by the SDK as an error, after
// the text so far.
func TestGoSDKMidStreamCutIsAnError(t *testing.T) {
	bothClients(t, func(t *testing.T, s *sdkStack, c openai.Client) {
		stream := c.Chat.Completions.NewStreaming(context.Background(), ask("[[sim:reset tokens=10]] Count to 50."))
		var text string
		for stream.Next() {
			if ch := stream.Current().Choices; len(ch) > 0 {
				text += ch[0].Delta.Content
			}
		}
		require.Error(t, stream.Err())
		assert.Contains(t, stream.Err().Error(), "upstream_error")
		assert.True(t, strings.HasPrefix(text, "1, 2, 3"), text)
		assert.Len(t, s.upstream(), 1)
	})
}

// A stream cut before its first token (after the role's chunk, before any
// text) is answered as the failed attempt it was: a 502 with
// x-should-retry: true, not a 200 stream, so the SDK tries again, and the
// second attempt's chunks are the only ones read.
func TestGoSDKStreamCutBeforeItsFirstTokenIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, false, nil)
		once, retried := s.openAI(option.WithMaxRetries(0)), s.openAI()
		stream := once.Chat.Completions.NewStreaming(context.Background(), ask("[[sim:reset tokens=0]] Count to 5."))
		for stream.Next() {
			t.Errorf("a chunk of an attempt that failed: %s", stream.Current().RawJSON())
		}
		var e *openai.Error
		require.ErrorAs(t, stream.Err(), &e)
		assert.Equal(t, http.StatusBadGateway, e.StatusCode)
		assert.Equal(t, "upstream_error", e.Code)
		assert.Equal(t, "true", e.Response.Header.Get("x-should-retry"))

		stream = retried.Chat.Completions.NewStreaming(context.Background(), ask("[[sim:reset tokens=0 times=1 id=go-cut-0]] Count to 5."))
		var text string
		roles := 0
		for stream.Next() {
			if ch := stream.Current().Choices; len(ch) > 0 {
				text += ch[0].Delta.Content
				if ch[0].Delta.Role != "" {
					roles++
				}
			}
		}
		require.NoError(t, stream.Err())
		assert.Equal(t, "1, 2, 3, 4, 5.", text)
		assert.Equal(t, 1, roles, "the role's chunk of the second attempt only")
		assert.Len(t, s.upstream(), 3)
	})
}

// The content filter stopping a streamed answer is raised by the SDK as an
// error, after the text so far, with Azure's verdict (the category it
// flagged) in the error frame.
func TestGoSDKContentFilterMidStreamIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, false, nil)
		c := s.openAI()
		stream := c.Chat.Completions.NewStreaming(context.Background(), ask("[[sim:filter tokens=5]] Count to 20."))
		var text string
		for stream.Next() {
			if ch := stream.Current().Choices; len(ch) > 0 {
				text += ch[0].Delta.Content
			}
		}
		var se *ssestream.StreamError
		require.ErrorAs(t, stream.Err(), &se)
		assert.True(t, strings.HasPrefix(text, "1, 2"), text)
		var frame struct {
			Error struct {
				Code       string `json:"code"`
				Type       string `json:"type"`
				Innererror struct {
					Code   string `json:"code"`
					Result map[string]struct {
						Filtered bool   `json:"filtered"`
						Severity string `json:"severity"`
					} `json:"content_filter_result"`
				} `json:"innererror"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(se.Event.Data, &frame), string(se.Event.Data))
		assert.Equal(t, "content_filtered", frame.Error.Code)
		assert.Equal(t, "invalid_request_error", frame.Error.Type)
		assert.Equal(t, "ResponsibleAIPolicyViolation", frame.Error.Innererror.Code)
		assert.True(t, frame.Error.Innererror.Result["violence"].Filtered, string(se.Event.Data))
		assert.Equal(t, "medium", frame.Error.Innererror.Result["violence"].Severity)
		assert.False(t, frame.Error.Innererror.Result["hate"].Filtered)
		assert.Len(t, s.upstream(), 1)
	})
}

// Every failure in the middle of a stream (the deadline, a cut upstream,
// the content filter) is one data: {"error": ...} frame, the stream's
// last: no [DONE] after it.
func TestMidStreamFailureIsOneErrorFrame(t *testing.T) {
	tests := []struct{ directive, code string }{
		{"[[sim:hang tokens=5]]", "deadline_exceeded"},
		{"[[sim:reset tokens=5]]", "upstream_error"},
		{"[[sim:filter tokens=5]]", "content_filtered"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newStack(t, false, nil)
				body := `{"model":"` + deployment + `","stream":true,"messages":[{"role":"user","content":"` + tt.directive + ` Count to 20."}]}`
				r, err := http.NewRequest(http.MethodPost, host+"/openai/v1/chat/completions", strings.NewReader(body))
				require.NoError(t, err)
				r.Header.Set("Content-Type", "application/json")
				resp, err := s.client.Do(r)
				require.NoError(t, err)
				raw, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				frames := strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n")
				require.Greater(t, len(frames), 3, string(raw))
				lastFrame := frames[len(frames)-1]
				var e struct {
					Error struct {
						Code string `json:"code"`
					} `json:"error"`
				}
				require.True(t, strings.HasPrefix(lastFrame, "data: "), lastFrame)
				require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(lastFrame, "data: ")), &e), lastFrame)
				assert.Equal(t, tt.code, e.Error.Code)
				assert.Equal(t, 1, strings.Count(string(raw), `{"error"`), "one error frame")
				assert.NotContains(t, string(raw), "[DONE]")
			})
		})
	}
}

// issuerCredential is an Entra ID credential for the local issuer: the
// token SPFx or MSAL would get for the test user and this app.
type issuerCredential struct {
	iss    *issuertest.Issuer
	scopes *[]string
}

func (c issuerCredential) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	*c.scopes = o.Scopes
	tok, err := c.iss.Mint(issuertest.Token{Authority: authority, Tenant: tenant, Audience: audience})
	return azcore.AccessToken{Token: tok, ExpiresOn: time.Now().Add(time.Hour)}, err
}

// azure.WithEndpoint, with an Entra ID token credential: an Azure client
// changes only its endpoint (and the token's scope, this app's).
func TestGoSDKAzureEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, true, nil)
		var scopes []string
		c := s.azureOpenAI(&scopes)
		res, err := c.Chat.Completions.New(context.Background(), ask("Count to 3."))
		require.NoError(t, err)
		assert.Equal(t, "1, 2, 3.", res.Choices[0].Message.Content)
		assert.Equal(t, []string{audience + "/.default"}, scopes)
		lines := s.logLines(t)
		require.Len(t, lines, 1)
		assert.Equal(t, "/openai/deployments/{deployment}/chat/completions", lines[0]["route"])
		assert.Equal(t, issuertest.TestUserOID, lines[0]["callerOid"])

		stream := c.Chat.Completions.NewStreaming(context.Background(), ask("Count to 10."))
		var text string
		for stream.Next() {
			if ch := stream.Current().Choices; len(ch) > 0 {
				text += ch[0].Delta.Content
			}
		}
		require.NoError(t, stream.Err())
		assert.Equal(t, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10.", text)

		// The Azure client lists models at /openai/models?api-version=...
		models, err := c.Models.List(context.Background())
		require.NoError(t, err)
		require.Len(t, models.Data, 1)
		assert.Equal(t, deployment, models.Data[0].ID)
	})
}

// An Azure API key is never accepted from a caller: 401, once.
func TestGoSDKAzureAPIKeyIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, true, nil)
		c := openai.NewClient(azure.WithEndpoint(host, "2024-10-21"), azure.WithAPIKey("an-azure-openai-key"), option.WithHTTPClient(s.client))
		_, err := c.Chat.Completions.New(context.Background(), ask("hi"))
		var e *openai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, http.StatusUnauthorized, e.StatusCode)
		assert.Equal(t, "unauthenticated", e.Code)
		assert.Len(t, s.logLines(t), 1)
		assert.Empty(t, s.upstream())
	})
}

// X-Stainless-Timeout (the SDK's per-request timeout, in seconds) shortens
// the budget as x-client-timeout-ms does.
func TestGoSDKTimeoutShortensTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, false, nil)
		c := s.openAI(option.WithMaxRetries(0))
		start := time.Now()
		_, err := c.Chat.Completions.New(context.Background(), ask("[[sim:hang]] hi"), option.WithRequestTimeout(10*time.Second))
		var e *openai.Error
		if errors.As(err, &e) {
			assert.Equal(t, "deadline_exceeded", e.Code, "timebox answered before the SDK gave up")
		} else {
			t.Fatalf("want timebox's 500 before the SDK's own timeout, got %v", err)
		}
		assert.Less(t, time.Since(start), 10*time.Second)
	})
}

// A model this app does not serve is refused at once: 404 model_not_found,
// not retried, nothing sent upstream.
func TestGoSDKModelNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, false, nil)
		c := s.openAI()
		p := ask("hi")
		p.Model = "gpt-9"
		_, err := c.Chat.Completions.New(context.Background(), p)
		var e *openai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, http.StatusNotFound, e.StatusCode)
		assert.Equal(t, "model_not_found", e.Code)
		assert.Equal(t, "model", e.Param)
		assert.Equal(t, "false", e.Response.Header.Get("x-should-retry"))
		assert.Len(t, s.logLines(t), 1, "not retried")
		assert.Empty(t, s.upstream())
	})
}

// A request may name the model the deployment runs (AZURE_OPENAI_MODEL)
// instead of the deployment: code written for OpenAI keeps its model. The
// deployment is what Azure is asked for (the simulator serves only it).
func TestGoSDKModelTheDeploymentRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, false, map[string]string{"AZURE_OPENAI_MODEL": "gpt-4o-mini-2024-07-18"})
		c := s.openAI()
		p := ask("Count to 5.")
		p.Model = "gpt-4o-mini-2024-07-18"
		res, err := c.Chat.Completions.New(context.Background(), p)
		require.NoError(t, err)
		assert.Equal(t, "1, 2, 3, 4, 5.", res.Choices[0].Message.Content)
		assert.Equal(t, []int{200}, s.upstreamStatuses())

		p.Model = "gpt-4o"
		_, err = c.Chat.Completions.New(context.Background(), p)
		var e *openai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "model_not_found", e.Code, "another model of the family is not the one it runs")
		assert.Len(t, s.upstream(), 1)
	})
}

// A conversation too long for the model is 413 prompt_too_large before any
// upstream call: nothing of the caller's is trimmed.
func TestGoSDKPromptTooLarge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, false, map[string]string{"CONTEXT_WINDOW": "4096"})
		c := s.openAI()
		_, err := c.Chat.Completions.New(context.Background(), ask(strings.Repeat("many words ", 4000)))
		var e *openai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, http.StatusRequestEntityTooLarge, e.StatusCode)
		assert.Equal(t, "prompt_too_large", e.Code)
		assert.Empty(t, s.upstream())
	})
}

// The SDKs' own request headers pass the preflight, as families
// (x-stainless-*, openai-*); a header the API does not take does not; and
// every answer, errors included, exposes what the SDKs read.
func TestPreflightTakesTheSDKsHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://contoso.sharepoint.com"
		s := newStack(t, false, map[string]string{"ALLOWED_ORIGINS": origin})
		preflight := func(headers string) *http.Response {
			r, err := http.NewRequest(http.MethodOptions, host+"/openai/v1/chat/completions", nil)
			require.NoError(t, err)
			r.Header.Set("Origin", origin)
			r.Header.Set("Access-Control-Request-Method", "POST")
			r.Header.Set("Access-Control-Request-Headers", headers)
			resp, err := s.client.Do(r)
			require.NoError(t, err)
			resp.Body.Close()
			return resp
		}
		sdk := "accept,authorization,content-type,openai-organization,x-stainless-arch,x-stainless-lang,x-stainless-os,x-stainless-package-version,x-stainless-retry-count,x-stainless-runtime,x-stainless-runtime-version,x-stainless-timeout,x-stainless-some-future-header"
		resp := preflight(sdk)
		assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
		assert.Equal(t, sdk, resp.Header.Get("Access-Control-Allow-Headers"))
		resp = preflight("authorization,x-evil")
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), "a header outside the list and the families fails the preflight")
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Headers"))

		c := s.openAI(option.WithHeader("Origin", origin))
		_, err := c.Chat.Completions.New(context.Background(), ask("[[sim:hang]] hi"))
		var e *openai.Error
		require.ErrorAs(t, err, &e)
		exposed := strings.ToLower(e.Response.Header.Get("Access-Control-Expose-Headers"))
		for _, h := range []string{"x-should-retry", "retry-after", "retry-after-ms", "x-request-id"} {
			assert.Contains(t, exposed, h)
		}
	})
}
