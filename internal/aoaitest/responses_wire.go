package aoaitest

import (
	"encoding/json"
	"fmt"
)

// This file holds the Responses API's JSON shapes, in the key order of the
// recordings in internal/aoaitest/testdata/responses: the response object
// and the output items as Azure sends them (azure-text.1.chunks.jsonl, with
// Azure's completed_at, content_filters and obfuscation), the background
// flow (status queued, response.queued) as OpenAI's recordings of it show.

// responsesRequest is the part of a Responses API create the simulator
// reads.
type responsesRequest struct {
	Model           string            `json:"model"`
	Input           responsesInput    `json:"input"`
	Instructions    *string           `json:"instructions"`
	MaxOutputTokens *int              `json:"max_output_tokens"`
	Background      bool              `json:"background"`
	Stream          bool              `json:"stream"`
	Store           *bool             `json:"store"`
	Metadata        map[string]string `json:"metadata"`
}

// responsesInput is a create's input: a string (one user message), or
// input items, of which the messages are kept.
type responsesInput []message

func (in *responsesInput) UnmarshalJSON(b []byte) error {
	var text string
	if json.Unmarshal(b, &text) == nil {
		*in = responsesInput{{Role: "user", Content: content(text)}}
		return nil
	}
	var items []message
	if err := json.Unmarshal(b, &items); err != nil {
		return fmt.Errorf("input must be a string or an array of input items: %w", err)
	}
	*in = items
	return nil
}

// reasoningConfig is the response's reasoning: effort "medium" for a
// reasoning model (the service's default), null for the rest.
type reasoningConfig struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type textConfig struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
	Verbosity string `json:"verbosity"`
}

type outputText struct {
	Type        string `json:"type"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
}

// outputItem is one message of a response's output.
type outputItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Content []outputText `json:"content"`
	Role    string       `json:"role"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// responseError is a failed response's error.
type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

// contentFilter is one entry of Azure's content_filters on a finished
// response: the prompt's and the completion's.
type contentFilter struct {
	Blocked              bool           `json:"blocked"`
	SourceType           string         `json:"source_type"`
	ContentFilterRaw     any            `json:"content_filter_raw"`
	ContentFilterResults map[string]any `json:"content_filter_results"`
	ContentFilterOffsets struct {
		StartOffset int `json:"start_offset"`
		EndOffset   int `json:"end_offset"`
		CheckOffset int `json:"check_offset"`
	} `json:"content_filter_offsets"`
}

// responseObject is the response, as create (background, not streamed),
// retrieve and cancel answer it and as the stream's response.* events
// carry it.
type responseObject struct {
	ID                   string             `json:"id"`
	Object               string             `json:"object"`
	CreatedAt            int64              `json:"created_at"`
	Status               string             `json:"status"`
	Background           bool               `json:"background"`
	CompletedAt          *int64             `json:"completed_at"`
	ContentFilters       []contentFilter    `json:"content_filters"`
	Error                *responseError     `json:"error"`
	IncompleteDetails    *incompleteDetails `json:"incomplete_details"`
	Instructions         *string            `json:"instructions"`
	MaxOutputTokens      *int               `json:"max_output_tokens"`
	MaxToolCalls         *int               `json:"max_tool_calls"`
	Model                string             `json:"model"`
	Output               []outputItem       `json:"output"`
	ParallelToolCalls    bool               `json:"parallel_tool_calls"`
	PreviousResponseID   *string            `json:"previous_response_id"`
	PromptCacheKey       *string            `json:"prompt_cache_key"`
	PromptCacheRetention *string            `json:"prompt_cache_retention"`
	Reasoning            reasoningConfig    `json:"reasoning"`
	SafetyIdentifier     *string            `json:"safety_identifier"`
	ServiceTier          string             `json:"service_tier"`
	Store                bool               `json:"store"`
	Temperature          float64            `json:"temperature"`
	Text                 textConfig         `json:"text"`
	ToolChoice           string             `json:"tool_choice"`
	Tools                []any              `json:"tools"`
	TopLogprobs          int                `json:"top_logprobs"`
	TopP                 float64            `json:"top_p"`
	Truncation           string             `json:"truncation"`
	Usage                *responseUsage     `json:"usage"`
	User                 *string            `json:"user"`
	Metadata             map[string]string  `json:"metadata"`
}

// responseEvent is response.created, .queued, .in_progress, .completed,
// .failed and .incomplete.
type responseEvent struct {
	Type           string         `json:"type"`
	SequenceNumber int            `json:"sequence_number"`
	Response       responseObject `json:"response"`
}

// itemEvent is response.output_item.added and .done.
type itemEvent struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	OutputIndex    int        `json:"output_index"`
	Item           outputItem `json:"item"`
}

// partEvent is response.content_part.added and .done.
type partEvent struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	ItemID         string     `json:"item_id"`
	OutputIndex    int        `json:"output_index"`
	ContentIndex   int        `json:"content_index"`
	Part           outputText `json:"part"`
}

// deltaEvent is response.output_text.delta.
type deltaEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Delta          string `json:"delta"`
	Logprobs       []any  `json:"logprobs"`
	Obfuscation    string `json:"obfuscation"`
}

// textDoneEvent is response.output_text.done.
type textDoneEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Text           string `json:"text"`
	Logprobs       []any  `json:"logprobs"`
}

// keepaliveEvent is the event a long quiet stream carries so that proxies
// keep it open; it takes a sequence number like any other.
type keepaliveEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
}

// flatErrorEvent is the in-band error in the shape of OpenAI's reference
// (ResponseErrorEvent): code, message and param beside type.
type flatErrorEvent struct {
	Type           string  `json:"type"`
	Code           string  `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
	SequenceNumber int     `json:"sequence_number"`
}

// nestedErrorEvent is the in-band error as streams were captured carrying
// it (openai-error-null-code.chunks.jsonl): the error in an object of its
// own, code null.
type nestedErrorEvent struct {
	Type  string `json:"type"`
	Error struct {
		Type    string  `json:"type"`
		Code    *string `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	} `json:"error"`
	SequenceNumber int `json:"sequence_number"`
}

// streamEvent is an event of a Responses stream. emit frames it under its
// type and numbers it by its place in the stream; a new event type that
// lacks either method does not compile.
type streamEvent interface {
	eventType() string
	setSequence(n int)
}

func (e *responseEvent) eventType() string    { return e.Type }
func (e *itemEvent) eventType() string        { return e.Type }
func (e *partEvent) eventType() string        { return e.Type }
func (e *deltaEvent) eventType() string       { return e.Type }
func (e *textDoneEvent) eventType() string    { return e.Type }
func (e *keepaliveEvent) eventType() string   { return e.Type }
func (e *flatErrorEvent) eventType() string   { return e.Type }
func (e *nestedErrorEvent) eventType() string { return e.Type }

func (e *responseEvent) setSequence(n int)    { e.SequenceNumber = n }
func (e *itemEvent) setSequence(n int)        { e.SequenceNumber = n }
func (e *partEvent) setSequence(n int)        { e.SequenceNumber = n }
func (e *deltaEvent) setSequence(n int)       { e.SequenceNumber = n }
func (e *textDoneEvent) setSequence(n int)    { e.SequenceNumber = n }
func (e *keepaliveEvent) setSequence(n int)   { e.SequenceNumber = n }
func (e *flatErrorEvent) setSequence(n int)   { e.SequenceNumber = n }
func (e *nestedErrorEvent) setSequence(n int) { e.SequenceNumber = n }

// deletedResponse is DELETE's answer.
type deletedResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// Messages of the Responses API's refusals. msgStale is OpenAI's, as
// quoted in openai/openai-python#2828 (Azure does not document whether it
// refuses so); the others are the simulator's own.
const (
	msgStale         = "This response can no longer be streamed because it is more than 5 minutes old."
	msgNotStreamed   = "This response cannot be streamed because it was not created with stream=true."
	msgNeedsStore    = "Background responses require store=true."
	msgFailed        = "The server had an error while processing your request. Sorry about that!"
	msgErrorEvent    = "An error occurred while processing the request."
	msgNotBackground = "Only background responses can be cancelled."
)

// responseNotFound is the 404 body for an unknown or deleted response.
func responseNotFound(id string) errorBody {
	return errorBody{Error: invalidRequest{Message: fmt.Sprintf("Response with id '%s' not found.", id), Type: "invalid_request_error"}}
}
