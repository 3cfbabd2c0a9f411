package aoai

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordedStream returns the SSE body of a recorded streaming answer in
// the simulator's testdata, event by event.
func recordedStream(t testing.TB, file string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "aoaitest", "testdata", "aoai", file))
	require.NoError(t, err)
	var f struct {
		Response struct {
			SSEEvents []string `json:"sse_events"`
			Excerpt   []string `json:"sse_events_excerpt"`
		} `json:"response"`
	}
	require.NoError(t, json.Unmarshal(b, &f))
	return append(f.Response.SSEEvents, f.Response.Excerpt...)
}

// usageFrame is the chunk Azure sends before [DONE] when the request asks
// for stream_options.include_usage: choices empty, usage set.
const usageFrame = `data: {"choices":[],"created":1762463856,"id":"chatcmpl-x","model":"gpt-4-turbo-2024-04-09","object":"chat.completion.chunk","system_fingerprint":"fp_5603ee5e2e","usage":{"completion_tokens":29,"prompt_tokens":42,"total_tokens":71}}` + "\n\n"

func TestReadStreamRecorded(t *testing.T) {
	events := recordedStream(t, "chat_200_stream_v1_endpoint.json")
	require.Equal(t, "data: [DONE]\n\n", events[len(events)-1])
	withUsage := append(append([]string{}, events[:len(events)-1]...), usageFrame, events[len(events)-1])

	tests := []struct {
		name      string
		body      string
		wantUsage Usage
	}{
		{"as recorded (no usage asked for)", strings.Join(events, ""), Usage{}},
		{"with the usage frame of include_usage", strings.Join(withUsage, ""), Usage{PromptTokens: 42, CompletionTokens: 29, TotalTokens: 71}},
		{"CRLF line ends", strings.ReplaceAll(strings.Join(withUsage, ""), "\n", "\r\n"), Usage{PromptTokens: 42, CompletionTokens: 29, TotalTokens: 71}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte per read: every event arrives split at every place.
			var deltas []string
			dec := &chatDecoder{}
			text, err := readStream(iotest.OneByteReader(strings.NewReader(tt.body)), dec, func(s string) { deltas = append(deltas, s) })
			require.NoError(t, err)
			assert.Equal(t, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10.", text)
			assert.Len(t, deltas, 29, "one delta per content chunk; the annotation, role and finish chunks add no text")
			assert.Equal(t, "1", deltas[0])
			finish, usage, ok := dec.result()
			assert.True(t, ok)
			assert.Equal(t, "stop", finish)
			assert.Equal(t, tt.wantUsage, usage)
		})
	}
}

func TestReadStreamFailures(t *testing.T) {
	events := recordedStream(t, "chat_200_stream_v1_endpoint.json")
	head := strings.Join(events[:5], "") // annotations, role, "1", ",", " "
	tests := []struct {
		name        string
		body        io.Reader
		wantPartial string
		wantErr     error
	}{
		{"closed after three tokens", strings.NewReader(head), "1, ", errNoEnd},
		{"closed mid-event", strings.NewReader(head + events[5][:20]), "1, ", errNoEnd},
		{"connection broke", io.MultiReader(strings.NewReader(head), iotest.ErrReader(io.ErrUnexpectedEOF)), "1, ", io.ErrUnexpectedEOF},
		{"unreadable chunk", strings.NewReader(head + "data: {\"choices\":[{\n\n"), "1, ", errBadBody},
		{"server error event mid-stream", strings.NewReader(head + `data: {"error":{"code":"server_error","message":"The server had an error"}}` + "\n\n"), "1, ", nil},
		{"longer than the limit", io.MultiReader(strings.NewReader(head), strings.NewReader(strings.Repeat(": pad\n\n", maxResponseBytes/7+1))), "1, ", errTooLong},
		{"nothing at all", strings.NewReader(""), "", errNoEnd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := readStream(tt.body, &chatDecoder{}, nil)
			require.Error(t, err)
			assert.Equal(t, tt.wantPartial, text, "the text so far is kept")
			if tt.wantErr != nil {
				assert.True(t, errors.Is(err, tt.wantErr), "%v", err)
			}
		})
	}
}

// FuzzReadStreamChunkBoundaries: however the recorded stream is cut into
// reads, it yields the same deltas and the same answer.
func FuzzReadStreamChunkBoundaries(f *testing.F) {
	events := recordedStream(f, "chat_200_stream_v1_endpoint.json")
	body := strings.Join(append(events[:len(events)-1], usageFrame, events[len(events)-1]), "")
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{255, 0, 7, 128})
	f.Add([]byte("data: {"))
	f.Fuzz(func(t *testing.T, cuts []byte) {
		var deltas []string
		dec := &chatDecoder{}
		text, err := readStream(&chunked{s: body, sizes: cuts}, dec, func(s string) { deltas = append(deltas, s) })
		require.NoError(t, err)
		assert.Equal(t, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10.", text)
		assert.Len(t, deltas, 29)
		_, usage, ok := dec.result()
		assert.True(t, ok)
		assert.Equal(t, 29, usage.CompletionTokens)
	})
}

// chunked reads s in pieces of the sizes given (cycled; 0 counts as 1).
type chunked struct {
	s     string
	sizes []byte
	i     int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n = max(1, int(c.sizes[c.i%len(c.sizes)]))
		c.i++
	}
	n = min(n, len(p), len(c.s))
	copy(p, c.s[:n])
	c.s = c.s[n:]
	return n, nil
}
