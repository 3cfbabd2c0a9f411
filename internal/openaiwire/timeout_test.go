package openaiwire_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// What each SDK's timeout bounds, as its headers say it (openaiwire.Timeout):
// openai-node's X-Stainless-Timeout (X-Stainless-Lang js) and openai-python's
// X-Stainless-Read-Timeout bound the wait for a stream's first frame, and
// python's every silence after it; openai-go's X-Stainless-Timeout bounds
// the whole stream.

// sdkHeaders are the timeout headers of openai-node and openai-python with
// a timeout of secs seconds.
var sdkHeaders = map[string]func(secs string) http.Header{
	"openai-node": func(secs string) http.Header {
		return http.Header{"X-Stainless-Lang": {"js"}, "X-Stainless-Timeout": {secs}}
	},
	"openai-python": func(secs string) http.Header {
		return http.Header{"X-Stainless-Lang": {"python"}, "X-Stainless-Read-Timeout": {secs + ".0"}}
	},
}

// paced makes the simulator stream one content delta every 500 ms.
func paced(o *aoaitest.Options) { o.PerToken = 500 * time.Millisecond }

// streamed is a stream as an SDK reads it: its answer's status and
// headers, its data lines, and the longest wait for the next bytes from
// the request on (what openai-python's read timeout bounds).
type streamed struct {
	status  int
	header  http.Header
	data    []string
	body    string // a JSON answer's body
	longest time.Duration
}

// text is the streamed answer's text, from its chunks.
func (r streamed) text(t *testing.T) string {
	var b strings.Builder
	for _, d := range r.data {
		if d == "[DONE]" || strings.HasPrefix(d, `{"error"`) {
			continue
		}
		var c openai.ChatCompletionChunk
		require.NoError(t, json.Unmarshal([]byte(d), &c), d)
		if len(c.Choices) > 0 {
			b.WriteString(c.Choices[0].Delta.Content)
		}
	}
	return b.String()
}

// stream asks for q streamed, with the headers h, reading the answer as
// it comes.
func (s *sdkStack) stream(t *testing.T, h http.Header, q string) streamed {
	t.Helper()
	body, err := json.Marshal(map[string]any{"model": deployment, "stream": true, "messages": []map[string]string{{"role": "user", "content": q}}})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, host+"/openai/v1/chat/completions", strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer unused")
	last := time.Now()
	var out streamed
	gap := func() {
		out.longest = max(out.longest, time.Since(last))
		last = time.Now()
	}
	res, err := s.client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	gap()
	out.status, out.header = res.StatusCode, res.Header
	if res.StatusCode != http.StatusOK {
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		out.body = string(b)
		return out
	}
	r := bufio.NewReader(res.Body)
	for {
		line, err := r.ReadString('\n')
		gap()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			out.data = append(out.data, d)
		}
	}
}

const counted20 = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20."

// A stream that has begun runs past the SDK's timeout to its end: node's
// timeout ends with the response's headers, python's bounds each silence,
// and a stream paced at 500 ms keeps neither waiting.
func TestStreamRunsPastTheSDKsTimeoutOnceBegun(t *testing.T) {
	for name, headers := range sdkHeaders {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newStack(t, false, nil, paced)
				start := time.Now()
				r := s.stream(t, headers("5"), "Count to 20.")
				require.Equal(t, http.StatusOK, r.status, r.body)
				assert.Equal(t, counted20, r.text(t))
				assert.Equal(t, "[DONE]", r.data[len(r.data)-1])
				assert.Greater(t, time.Since(start), 5*time.Second, "the answer outlasts the timeout")
				assert.Less(t, r.longest, 5*time.Second)
				assert.Len(t, s.upstream(), 1)
			})
		})
	}
}

// A begun stream gone silent (Azure stalls after three tokens) keeps
// openai-python's read timer from firing: keep-alives come at least every
// half of its read timeout, under the 15 s they come otherwise, until the
// request's own budget ends the stream with the deadline's error frame.
func TestStreamKeepAlivesComeWithinPythonsReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, false, nil)
		start := time.Now()
		r := s.stream(t, sdkHeaders["openai-python"]("4"), "[[sim:hang tokens=3]] Count to 20.")
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.LessOrEqual(t, r.longest, 2*time.Second, "half the read timeout")
		assert.Equal(t, 40*time.Second, time.Since(start).Round(time.Second), "ended by the request's budget")
		require.NotEmpty(t, r.data)
		assert.Contains(t, r.data[len(r.data)-1], `"code":"deadline_exceeded"`)
		assert.NotEmpty(t, r.text(t), "the text so far")
	})
}

// A stream whose first frame does not come within the SDK's timeout less
// CLIENT_TIMEOUT_MARGIN is answered the deadline's 500, x-should-retry
// false, before the SDK gives up and asks again: one upstream call.
func TestStreamWhoseFirstFrameIsLateIsTheDeadline(t *testing.T) {
	for name, headers := range sdkHeaders {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newStack(t, false, nil)
				start := time.Now()
				r := s.stream(t, headers("10"), "[[sim:hang]] hi")
				assert.Equal(t, http.StatusInternalServerError, r.status)
				assert.Contains(t, r.body, `"code":"deadline_exceeded"`)
				assert.Equal(t, "false", r.header.Get("x-should-retry"))
				assert.Equal(t, 8*time.Second, time.Since(start).Round(time.Second), "the timeout less the margin")
				assert.Len(t, s.upstream(), 1, "one upstream call")
				lines := s.logLines(t)
				require.Len(t, lines, 1)
				assert.EqualValues(t, 10000, lines[0]["clientTimeoutMs"])
			})
		})
	}
}

// openai-go's request timeout bounds the whole stream (a context timeout
// the response body keeps): timebox ends the stream with its deadline's
// error frame before the SDK's own timeout cuts it.
func TestGoSDKTimeoutBoundsTheWholeStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, false, nil, paced)
		c := s.openAI(option.WithMaxRetries(0))
		start := time.Now()
		stream := c.Chat.Completions.NewStreaming(context.Background(), ask("Count to 20."), option.WithRequestTimeout(10*time.Second))
		text := ""
		for stream.Next() {
			if ch := stream.Current(); len(ch.Choices) > 0 {
				text += ch.Choices[0].Delta.Content
			}
		}
		err := stream.Err()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "did not answer in time", "timebox's error frame, not the SDK's timeout")
		assert.NotEmpty(t, text)
		assert.Equal(t, 8*time.Second, time.Since(start).Round(time.Second), "the timeout less the margin")
	})
}

// An answer written whole comes at its end, so the SDK's timeout, node's or
// python's, bounds the whole wait: a hang is the deadline's 500 at the
// timeout less the margin, asked once.
func TestWholeAnswerWithinTheSDKsTimeout(t *testing.T) {
	for name, headers := range sdkHeaders {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newStack(t, false, nil)
				start := time.Now()
				req, err := http.NewRequest(http.MethodPost, host+"/openai/v1/chat/completions",
					strings.NewReader(`{"model":"`+deployment+`","messages":[{"role":"user","content":"[[sim:hang]] hi"}]}`))
				require.NoError(t, err)
				req.Header = headers("10")
				req.Header.Set("Content-Type", "application/json")
				res, err := s.client.Do(req)
				require.NoError(t, err)
				b, err := io.ReadAll(res.Body)
				require.NoError(t, err)
				res.Body.Close()
				assert.Equal(t, http.StatusInternalServerError, res.StatusCode)
				assert.Contains(t, string(b), `"code":"deadline_exceeded"`)
				assert.Equal(t, "false", res.Header.Get("x-should-retry"))
				assert.Equal(t, 8*time.Second, time.Since(start).Round(time.Second), "the timeout less the margin")
				assert.Len(t, s.upstream(), 1)
			})
		})
	}
}
