package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/timebox-dev/timebox/internal/apiwire"
)

// Limits of a chat request, enforced with 400/413 before any upstream call.
const (
	MaxBodyBytes     = 16 << 20 // whole body, documents' base64 included
	MaxMessages      = 50
	MaxMessageChars  = 100_000
	MaxSources       = 50
	MaxSourceChars   = 100_000
	MaxSourceTitle   = 500
	MaxClientTimeout = 24 * 60 * 60 * 1000 // ms; larger is surely a mistake
	MaxDocuments     = 5
	MaxDocumentBytes = 10 << 20 // decoded; the body limit bounds the total
	MaxDocumentName  = 255
	MaxURLs          = 5
	MaxURLLength     = 2048
)

// ChatRequest is the body of POST /api/chat.
type ChatRequest struct {
	Messages  []ChatMessage `json:"messages"`
	Sources   []Source      `json:"sources,omitempty"`
	Documents []Document    `json:"documents,omitempty"`
	URLs      []string      `json:"urls,omitempty"`
	MaxTokens *int          `json:"maxTokens,omitempty"`
}

// Document is a file to read: a name (for messages), its media type, and
// its bytes in standard base64.
type Document struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Data        []byte `json:"data"`
}

// ChatMessage is one turn: role "user" or "assistant" (the system prompt is
// the server's).
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Source is one retrieved passage.
type Source struct {
	Title string `json:"title"`
	URL   string `json:"url,omitempty"`
	Text  string `json:"text"`
}

// decodeChat reads and validates a chat request. The body is read through
// the size limit first (413 when over), then checked to be UTF-8 (JSON
// decoding would silently replace bad bytes), then decoded strictly.
func decodeChat(ctx context.Context, w http.ResponseWriter, r *http.Request) (ChatRequest, error) {
	var req ChatRequest
	body, err := readJSON(ctx, w, r, MaxBodyBytes)
	if err != nil {
		return req, err
	}
	if err := Decode(body, &req); err != nil {
		return req, err
	}
	return req, req.validate()
}

// readJSON reads a JSON request body, in either dialect: JSON in UTF-8,
// uncompressed, within limit bytes (MaxBodyBytes, or a route's smaller
// one), within the request's deadline. Over the limit it is an
// *http.MaxBytesError, read no further.
func readJSON(ctx context.Context, w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, errMediaType
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		// JSON is UTF-8 (RFC 8259 section 8.1): a body in another
		// charset would fail, or worse pass, as UTF-8.
		return nil, errCharset
	}
	if encoded(r.Header) {
		// A compressed body would otherwise fail as "not valid JSON".
		return nil, errContentEncoding
	}
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	return readBody(ctx, w, r, limit)
}

// encoded reports whether the body has a content coding (gzip, br, ...):
// timebox reads only plain bodies. "identity" is no coding.
func encoded(h http.Header) bool {
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return true
			}
		}
	}
	return false
}

// readBody reads the body through the size limit, within the request's
// deadline: a caller that stops sending halfway would otherwise hold the
// handler, with no answer, until it hung up. net/http lifts the deadline
// itself once the body is in (its background read on the idle connection
// clears it); a late body leaves it on, so that net/http, finding the rest
// of the body unreadable, closes the connection after the answer instead of
// waiting for it.
func readBody(ctx context.Context, w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if deadline, ok := ctx.Deadline(); ok && r.ContentLength != 0 {
		// Not for an empty body: net/http's background read is already
		// waiting on the connection, and would fail at the deadline.
		// A ResponseWriter that cannot set it has no connection to stall.
		_ = http.NewResponseController(w).SetReadDeadline(deadline)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &mbe):
		return nil, mbe
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, fmt.Errorf("%w: %w", errBodyLate, err)
	case errors.Is(ctx.Err(), context.Canceled):
		// The caller hung up halfway through its body (net/http cancels the
		// request's context on any read error of the connection, a read
		// deadline's included, hence the case above first): nobody is left
		// to answer, and its time had not run out (fail: 499 client_gone in
		// the log).
		return nil, fmt.Errorf("read body: %w: %w", context.Canceled, err)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%w: %w", errBodyLate, err)
	}
	return nil, invalid("The request body could not be read.")
}

// Decode decodes one JSON object from body into v strictly, with the v2
// semantics of github.com/go-json-experiment/json (the encoding/json/v2
// proposal, which builds without GOEXPERIMENT): valid UTF-8, field names
// matched exactly (case included), no duplicate names, no unknown fields,
// no trailing data. encoding/json matches names case-insensitively and
// keeps the last of duplicate keys, so {"MESSAGES": ...} or two "messages"
// passed where a reader of the JSON would see something else. Errors are
// *Error (400) naming the problem without echoing the input.
func Decode(body []byte, v any) error {
	if !utf8.Valid(body) {
		return invalid("The request body is not valid UTF-8.")
	}
	err := json.Unmarshal(body, v, json.RejectUnknownMembers(true), jsontext.AllowDuplicateNames(false))
	if err == nil {
		return nil
	}
	var (
		se  *json.SemanticError
		syn *jsontext.SyntacticError
		be  base64.CorruptInputError
	)
	switch {
	case errors.As(err, &be):
		return invalid("A document's data is not valid base64.")
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		return invalid("The field %s appears twice.", strconv.Quote(syn.JSONPointer.LastToken()))
	case errors.As(err, &se) && errors.Is(se.Err, json.ErrUnknownName):
		return invalid("Unknown field %s.", strconv.Quote(se.JSONPointer.LastToken()))
	case errors.As(err, &se) && se.GoType != nil && se.JSONKind != 0:
		if field := fieldPath(se.JSONPointer); field != "" {
			return invalid("The field %q must be %s.", field, jsonKind(se.GoType))
		}
		return invalid("The request body must be a JSON object.")
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		if jsontext.NewDecoder(bytes.NewReader(body)).SkipValue() == nil {
			// The first value is whole: what failed is what follows it.
			return invalid("The request body must hold exactly one JSON object.")
		}
		return invalid("The request body is not valid JSON.")
	}
	return invalid("The request body is not valid JSON.")
}

// fieldPath names a JSON location as a dotted path of field names, array
// indices left out ("/messages/0/role" is "messages.role").
func fieldPath(p jsontext.Pointer) string {
	var names []string
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil {
			continue
		}
		names = append(names, tok)
	}
	return strings.Join(names, ".")
}

// jsonKind names, for an end user, the JSON a Go field type takes.
func jsonKind(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[[]byte]():
		return "a base64 string"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "an array"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		return "an object"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uintptr:
		return "a whole number" // 1.5 and 1e3 are numbers, and refused
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	}
	return "of another type"
}

func (req *ChatRequest) validate() error {
	if len(req.Messages) == 0 {
		return invalid("Add at least one message.")
	}
	if len(req.Messages) > MaxMessages {
		return invalid("Send at most %d messages.", MaxMessages)
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "user", "assistant":
		default:
			return invalid("messages[%d].role must be \"user\" or \"assistant\".", i)
		}
		if strings.TrimSpace(m.Content) == "" {
			return invalid("messages[%d].content is empty.", i)
		}
		if utf8.RuneCountInString(m.Content) > MaxMessageChars {
			return invalid("messages[%d].content is longer than %d characters.", i, MaxMessageChars)
		}
	}
	if req.Messages[len(req.Messages)-1].Role != "user" {
		return invalid("The last message must be the user's question.")
	}
	if len(req.Sources) > MaxSources {
		return invalid("Send at most %d sources.", MaxSources)
	}
	for i, s := range req.Sources {
		if strings.TrimSpace(s.Text) == "" {
			return invalid("sources[%d].text is empty.", i)
		}
		if utf8.RuneCountInString(s.Text) > MaxSourceChars {
			return invalid("sources[%d].text is longer than %d characters.", i, MaxSourceChars)
		}
		if utf8.RuneCountInString(s.Title) > MaxSourceTitle || len(s.URL) > 2048 {
			return invalid("sources[%d] has a title or url that is too long.", i)
		}
	}
	if len(req.Documents) > MaxDocuments {
		return invalid("Send at most %d documents.", MaxDocuments)
	}
	for i, d := range req.Documents {
		switch {
		case strings.TrimSpace(d.Name) == "" || utf8.RuneCountInString(d.Name) > MaxDocumentName:
			return invalid("documents[%d].name must be 1 to %d characters.", i, MaxDocumentName)
		case len(d.ContentType) > 255:
			return invalid("documents[%d].contentType is too long.", i)
		case len(d.Data) == 0:
			return invalid("documents[%d].data is empty.", i)
		case len(d.Data) > MaxDocumentBytes:
			return &Error{http.StatusRequestEntityTooLarge, apiwire.CodeBodyTooLarge, fmt.Sprintf("The document %q is larger than %d MiB.", d.Name, MaxDocumentBytes>>20)}
		}
	}
	if len(req.URLs) > MaxURLs {
		return invalid("Send at most %d page addresses.", MaxURLs)
	}
	for i, u := range req.URLs {
		if strings.TrimSpace(u) == "" || len(u) > MaxURLLength {
			return invalid("urls[%d] must be 1 to %d characters.", i, MaxURLLength)
		}
	}
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		return invalid("maxTokens must be a positive number.")
	}
	return nil
}
