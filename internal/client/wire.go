package client

import "github.com/timebox-dev/timebox/internal/apiwire"

// This file holds the JSON bodies of timebox's routes that the client reads.

// ChatResponse is the 200 body of POST /api/chat (docs/api.md).
type ChatResponse struct {
	Answer       string `json:"answer"`
	FinishReason string `json:"finishReason"`
	Usage        struct {
		PromptTokens     int `json:"promptTokens"`
		CompletionTokens int `json:"completionTokens"`
		TotalTokens      int `json:"totalTokens"`
	} `json:"usage"`
	RequestID        string  `json:"requestId"`
	ElapsedMs        float64 `json:"elapsedMs"`
	UpstreamAttempts int     `json:"upstreamAttempts"`
}

// Usage is the 200 body of GET /api/usage (apiwire.Usage).
type Usage = apiwire.Usage

// UsageWindow is one window of a quota, in tokens (apiwire.UsageWindow).
type UsageWindow = apiwire.UsageWindow

// Health is the 200 body of GET /api/health.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}
