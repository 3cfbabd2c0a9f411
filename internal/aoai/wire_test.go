package aoai_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoai"
)

// An attempt reaches Azure OpenAI byte for byte as below, whichever
// transport sends it (the default, or one given in Options): none of its
// headers is lost or added on the way.
func TestAttemptOnTheWire(t *testing.T) {
	for _, tt := range []struct {
		name      string
		transport policy.Transporter
	}{
		{"default transport", nil},
		{"given transport", &http.Client{Transport: &http.Transport{DisableCompression: true}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			head, body := oneAttempt(t, tt.transport)
			assert.Equal(t, "POST /openai/v1/chat/completions HTTP/1.1\r\n"+
				"Host: HOST\r\n"+
				"User-Agent: azsdk-go-timebox/v1 ("+runtime.Version()+"; "+runtime.GOOS+")\r\n"+
				"Content-Length: "+strconv.Itoa(len(body))+"\r\n"+
				"Accept: text/event-stream\r\n"+
				"Api-Key: k\r\n"+
				"Content-Type: application/json\r\n"+
				"X-Ms-Client-Request-Id: req-1\r\n"+
				"\r\n", head)
			assert.JSONEq(t, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":50,"stream":true,"stream_options":{"include_usage":true}}`, body)
		})
	}
}

// oneAttempt makes one call through transport (nil: the default) to a
// loopback listener that reads the request as it arrives, bytes and all,
// and answers 400. It returns the request's head, its Host's address
// written HOST, and its body.
func oneAttempt(t *testing.T, transport policy.Transporter) (head, body string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan [2]string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			got <- [2]string{err.Error(), ""}
			return
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		var h strings.Builder
		n := 0
		for {
			line, err := r.ReadString('\n')
			h.WriteString(line)
			if err != nil || line == "\r\n" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				n, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		b := make([]byte, n)
		_, _ = io.ReadFull(r, b)
		_, _ = fmt.Fprint(conn, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 36\r\nConnection: close\r\n\r\n{\"error\":{\"code\":\"x\",\"message\":\"x\"}}")
		got <- [2]string{strings.ReplaceAll(h.String(), ln.Addr().String(), "HOST"), string(b)}
	}()
	endpoint, _ := url.Parse("http://" + ln.Addr().String())
	c, err := aoai.New(aoai.Options{Endpoint: endpoint, Deployment: "gpt-4o-mini", APIKey: "k", Transport: transport})
	require.NoError(t, err)
	r := req("hi")
	r.RequestID = "req-1"
	_, err = c.Complete(context.Background(), r)
	require.Error(t, err, "the listener answers 400")
	g := <-got
	return g[0], g[1]
}

// claimsCredential is an Entra ID credential that hands out a token named
// for the claims it was asked for, as long as Entra ID's access tokens
// (1.5-2.5 KB): the request's head is then larger than the transport's
// write buffer and part of it is on the wire before the body is read.
type claimsCredential struct{}

func (claimsCredential) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	tok := "plain"
	if o.Claims != "" {
		tok = "with-claims"
	}
	return azcore.AccessToken{Token: tok + "." + strings.Repeat("x", 2000), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// An attempt answered with a claims challenge (Continuous Access
// Evaluation: a 401 asking for a token with more claims) is sent again by
// azcore's bearer policy with a new token, and the body again, whole (the
// policy rewinds the body SetBody gave). net/http's own GetBody would not
// do: it sends a request again only while nothing of it has left its write
// buffer, not with a token of Entra ID's size.
func TestClaimsChallengeResendsTheWholeBody(t *testing.T) {
	var mu sync.Mutex
	var seen []string // Authorization and body of each request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+string(b))
		first := len(seen) == 1
		mu.Unlock()
		if first {
			w.Header().Set("WWW-Authenticate", `Bearer realm="", authorization_uri="https://login.microsoftonline.com/common/oauth2/authorize", error="insufficient_claims", claims="`+
				base64.StdEncoding.EncodeToString([]byte(`{"access_token":{"nbf":{"essential":true,"value":"1726258122"}}}`))+`"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.Error(w, `{"error":{"code":"x","message":"x"}}`, http.StatusBadRequest)
	}))
	defer srv.Close()
	endpoint, _ := url.Parse(srv.URL)
	c, err := aoai.New(aoai.Options{Endpoint: endpoint, Deployment: "gpt-4o-mini", Credential: claimsCredential{}})
	require.NoError(t, err)
	_, err = c.Complete(context.Background(), req("hi"))
	require.Error(t, err)
	require.Equal(t, 2, len(seen), "requests Azure OpenAI received")
	token := "." + strings.Repeat("x", 2000) + " "
	body, _ := strings.CutPrefix(seen[0], "Bearer plain"+token)
	assert.Contains(t, body, `"content":"hi"`)
	assert.Equal(t, "Bearer with-claims"+token+body, seen[1], "the request sent again after the challenge")
}
