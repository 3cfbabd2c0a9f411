package client

import "time"

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

// Usage is the 200 body of GET /api/usage: the caller's quota windows; a
// window is nil when its limit is not set.
type Usage struct {
	User struct {
		Day *UsageWindow `json:"day,omitempty"`
	} `json:"user"`
	Tenant struct {
		Month *UsageWindow `json:"month,omitempty"`
	} `json:"tenant"`
}

// UsageWindow is one window of a quota, in tokens.
type UsageWindow struct {
	Used     int64     `json:"used"`
	Reserved int64     `json:"reserved"`
	Limit    int64     `json:"limit"`
	ResetsAt time.Time `json:"resetsAt"`
}

// Health is the 200 body of GET /api/health.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}
