package aoaitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// This file holds the JSON shapes of the wire, request and response, in the
// key order of the recordings in internal/aoaitest/testdata/aoai.

// chatRequest is the part of a chat completions request the simulator reads.
type chatRequest struct {
	Model               string    `json:"model"`
	Messages            []message `json:"messages"`
	MaxTokens           *int      `json:"max_tokens"`
	MaxCompletionTokens *int      `json:"max_completion_tokens"`
	Temperature         *float64  `json:"temperature"`
	Stream              bool      `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// message is one request message; Content accepts a string, null, or an
// array of parts of which the text ones are kept.
type message struct {
	Role    string  `json:"role"`
	Content content `json:"content"`
}

type content string

var errContent = errors.New("content must be a string or an array of parts")

// UnmarshalJSON accepts "text", null, or [{"type":"text","text":"..."}, ...];
// parts of other types (images) are skipped, text parts are joined.
func (c *content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = content(s)
		return nil
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var s string
		for _, p := range parts {
			// "text" in Chat Completions, "input_text" in the Responses API.
			if p.Type == "text" || p.Type == "input_text" {
				s += p.Text
			}
		}
		*c = content(s)
		return nil
	default:
		return errContent
	}
}

type filterResult struct {
	Filtered bool   `json:"filtered"`
	Severity string `json:"severity"`
}

type jailbreakResult struct {
	Filtered bool `json:"filtered"`
	Detected bool `json:"detected"`
}

// filterResults is content_filter_results; Jailbreak appears only on prompt
// results of the 2025 streaming recordings.
type filterResults struct {
	Hate      filterResult     `json:"hate"`
	Jailbreak *jailbreakResult `json:"jailbreak,omitempty"`
	SelfHarm  filterResult     `json:"self_harm"`
	Sexual    filterResult     `json:"sexual"`
	Violence  filterResult     `json:"violence"`
}

func safeResults() filterResults {
	safe := filterResult{Severity: "safe"}
	return filterResults{Hate: safe, SelfHarm: safe, Sexual: safe, Violence: safe}
}

type promptFilterResult struct {
	PromptIndex          int           `json:"prompt_index"`
	ContentFilterResults filterResults `json:"content_filter_results"`
}

type usage struct {
	CompletionTokens int `json:"completion_tokens"`
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type answerMessage struct {
	Content   *string    `json:"content"`
	Role      string     `json:"role"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

// toolCall is a call of a tool in an answer; in a streamed delta Index
// says which call a piece belongs to, and only the first piece has the id,
// the type and the name.
type toolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type choice struct {
	ContentFilterResults filterResults `json:"content_filter_results"`
	FinishReason         string        `json:"finish_reason"`
	Index                int           `json:"index"`
	Logprobs             *struct{}     `json:"logprobs"`
	Message              answerMessage `json:"message"`
}

// completion is a non-streaming 200 body (chat_200_success_apikey.json).
type completion struct {
	Choices             []choice             `json:"choices"`
	Created             int64                `json:"created"`
	ID                  string               `json:"id"`
	Model               string               `json:"model"`
	Object              string               `json:"object"`
	PromptFilterResults []promptFilterResult `json:"prompt_filter_results"`
	SystemFingerprint   *string              `json:"system_fingerprint"`
	Usage               usage                `json:"usage"`
}

type delta struct {
	Content   *string    `json:"content,omitempty"`
	Role      string     `json:"role,omitempty"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

type chunkChoice struct {
	ContentFilterResults any       `json:"content_filter_results"`
	Delta                delta     `json:"delta"`
	FinishReason         *string   `json:"finish_reason"`
	Index                int       `json:"index"`
	Logprobs             *struct{} `json:"logprobs"`
}

// chunk is one streaming event (chat_200_stream_v1_endpoint.json).
type chunk struct {
	Choices             []chunkChoice        `json:"choices"`
	Created             int64                `json:"created"`
	ID                  string               `json:"id"`
	Model               string               `json:"model"`
	Object              string               `json:"object"`
	PromptFilterResults []promptFilterResult `json:"prompt_filter_results,omitempty"`
	SystemFingerprint   string               `json:"system_fingerprint,omitempty"`
	Usage               json.RawMessage      `json:"usage,omitempty"`
}

// errorBody wraps every error shape in {"error": ...}.
type errorBody struct {
	Error any `json:"error"`
}

// codeMessage is the gateway's shape: 401, 404, 429 (code is a string, "401").
type codeMessage struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// invalidRequest is the model's shape: 400 invalid_request_error and 500
// server_error, with type, param and code (null when absent).
type invalidRequest struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// contentFilterError is chat_400_content_filter_prompt.json's error.
type contentFilterError struct {
	Message    string  `json:"message"`
	Type       *string `json:"type"`
	Param      string  `json:"param"`
	Code       string  `json:"code"`
	Status     int     `json:"status"`
	InnerError struct {
		Code                string        `json:"code"`
		ContentFilterResult filterResults `json:"content_filter_result"`
	} `json:"innererror"`
}

func strPtr(s string) *string { return &s }

// Messages of the recorded bodies, verbatim where a recording exists.
const (
	msgUnauthorized = "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
	msgNoDeployment = "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."
	msgNotFound     = "Resource not found"
	msgFiltered     = "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"
	// OpenAI's wording for a body that is not JSON.
	msgBadJSON = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"
)

// rateLimitMessage is the 429 text of the token ("token") or request
// ("call") rate limit: chat_429_token_rate_limit.json and the "RPM (call
// rate limit)" variant of chat_429_message_variants.json, which differ in
// that word only.
func rateLimitMessage(limit, apiVersion string, seconds int64) string {
	return fmt.Sprintf("Requests to the ChatCompletions_Create Operation under Azure OpenAI API version %s have exceeded %s rate limit of your current OpenAI S0 pricing tier. Please retry after %d seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.", apiVersion, limit, seconds)
}

// contextMessage is the context_length_exceeded text: the variant naming the
// completion when max_tokens is what tips it over, the messages-only one when
// the prompt alone is too long.
func contextMessage(window, prompt, maxTokens int) string {
	if prompt > window {
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, prompt)
	}
	return fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", window, prompt+maxTokens, prompt, maxTokens)
}

// serverErrorBody is the body of a scripted 5xx. 500 is the recorded one
// (chat_5xx_bodies.json); no 502, 503 or 504 body was ever recorded, so
// those use the same server_error shape with a message of their own.
func serverErrorBody(code int, requestID string) any {
	var msg string
	switch code {
	case 500:
		msg = fmt.Sprintf("The server had an error while processing your request. Sorry about that! You can retry your request, or contact us through an Azure support request at: https://go.microsoft.com/fwlink/?linkid=2213926 if the error persists. (Please include the request ID %s in your message.)", requestID)
	case 502:
		msg = "Bad gateway."
	case 503:
		msg = "The engine is currently overloaded, please try again later."
	case 504:
		msg = "The server did not respond in time."
	default:
		msg = fmt.Sprintf("The server had an error (%d) while processing your request.", code)
	}
	return errorBody{Error: invalidRequest{Message: msg, Type: "server_error"}}
}
