package openaiwire

import "strings"

// The stream's framing, as OpenAI's and Azure OpenAI's: each chunk one
// "data:" line and a blank line, with no "event:" or "id:" lines (a
// data-less "event:" line breaks openai-node's parser); silence broken by
// SSE comments; the end "data: [DONE]". A failure after the first chunk is
// one "data:" frame holding an ErrorBody, and the stream ends there.
var (
	// KeepAlive is the comment sent on a silent stream.
	KeepAlive = []byte(": keep-alive\n\n")
	// Done is the stream's last frame.
	Done = []byte("data: [DONE]\n\n")
)

// AppendFrame appends data as one frame: one "data:" line per line of it
// (a reader joins them with line breaks, which JSON reads as spaces).
func AppendFrame(dst []byte, data string) []byte {
	dst = append(dst, "data: "...)
	for {
		line, rest, more := strings.Cut(data, "\n")
		dst = append(dst, strings.TrimSuffix(line, "\r")...)
		if !more {
			break
		}
		dst = append(dst, "\ndata: "...)
		data = rest
	}
	return append(dst, '\n', '\n')
}
