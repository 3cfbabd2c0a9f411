package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// SystemPrompt is the server's own instruction; callers cannot replace it.
const SystemPrompt = "You are a helpful assistant for a SharePoint site. Answer the user's question concisely. " +
	"When sources are given, base the answer on them and name the source you used; say so when they do not contain the answer."

// ChatResponse is the 200 answer of POST /api/chat.
type ChatResponse struct {
	Answer           string     `json:"answer"`
	FinishReason     string     `json:"finishReason"`
	Usage            ChatUsage  `json:"usage"`
	RequestID        string     `json:"requestId"`
	ElapsedMs        int64      `json:"elapsedMs"`
	UpstreamAttempts int        `json:"upstreamAttempts"`
	Truncated        bool       `json:"truncated"`
	Dropped          *Truncated `json:"dropped,omitempty"`
}

// ChatUsage is the token accounting of the answer.
type ChatUsage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
}

// Truncated says what was cut to fit the context window.
type Truncated struct {
	Turns     int      `json:"turns,omitempty"`
	Sources   []string `json:"sources,omitempty"`
	Shortened []string `json:"shortened,omitempty"`
}

func (s *server) handleChat() http.HandlerFunc {
	margin := s.Config.ClientTimeoutMargin
	minClient := (margin + time.Second).Milliseconds()
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		ms, err := clientTimeout(r, minClient)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if ms > 0 {
			var cancel func()
			ctx, cancel = budget.ShortenForClient(ctx, time.Duration(ms)*time.Millisecond, margin)
			defer cancel()
		}
		req, err := decodeChat(w, r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		rec := recordFrom(ctx)

		maxTokens := s.Config.MaxTokens
		if req.MaxTokens != nil && *req.MaxTokens < maxTokens {
			maxTokens = *req.MaxTokens
		}
		msgs := s.assemble(req)

		resp, err := s.Chat.Complete(ctx, aoai.Request{Messages: msgs, MaxTokens: maxTokens, RequestID: requestID(ctx)})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		rec.attempts, rec.upstreamStatus = resp.Attempts, resp.Status
		rec.promptTokens, rec.completionTokens = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
		b := budget.From(ctx)
		writeJSON(w, http.StatusOK, ChatResponse{
			Answer:       resp.Content,
			FinishReason: resp.FinishReason,
			Usage: ChatUsage{
				PromptTokens:     resp.Usage.PromptTokens,
				CompletionTokens: resp.Usage.CompletionTokens,
				TotalTokens:      resp.Usage.TotalTokens,
			},
			RequestID:        requestID(ctx),
			ElapsedMs:        time.Since(b.Started).Milliseconds(),
			UpstreamAttempts: resp.Attempts,
		})
	}
}

// assemble builds the upstream messages: the system prompt with the sources
// block, then the caller's turns.
func (s *server) assemble(req ChatRequest) []aoai.Message {
	system := SystemPrompt
	if len(req.Sources) > 0 {
		var b strings.Builder
		b.WriteString(system)
		b.WriteString("\n\nSources:\n")
		for i, src := range req.Sources {
			fmt.Fprintf(&b, "\n[%d] %s %s\n%s\n", i+1, src.Title, src.URL, src.Text)
		}
		system = b.String()
	}
	msgs := make([]aoai.Message, 0, len(req.Messages)+1)
	msgs = append(msgs, aoai.Message{Role: "system", Content: system})
	for _, m := range req.Messages {
		msgs = append(msgs, aoai.Message{Role: m.Role, Content: m.Content})
	}
	return msgs
}

func toTokenMessages(msgs []aoai.Message) []tokens.Message {
	out := make([]tokens.Message, len(msgs))
	for i, m := range msgs {
		out[i] = tokens.Message{Role: m.Role, Content: m.Content}
	}
	return out
}

func (s *server) handleReady() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

func (s *server) handleHealth() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.Version})
	}
}

func (s *server) handleNotFound() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, errNotFound) }
}

func (s *server) handleMethodNotAllowed() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, errMethodNotAllowed) }
}
