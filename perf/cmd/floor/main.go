// Command floor is the request floor of make perf: the plainest Go program
// that does timebox's job per request. It accepts the chat JSON, calls the
// same upstream (Azure OpenAI's v1 chat completions, api-key auth) with
// net/http and returns its answer: no validation, CORS, logging, budget,
// token counting or retries. It reads the handler's own settings
// (FUNCTIONS_CUSTOMHANDLER_PORT, AZURE_OPENAI_ENDPOINT,
// AZURE_OPENAI_DEPLOYMENT, AZURE_OPENAI_API_KEY), so make perf runs both the
// same way.
package main

import (
	"bytes"
	"encoding/json"
	"log"
	"net/http"
	"os"
)

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type completion struct {
	Choices []struct {
		FinishReason string  `json:"finish_reason"`
		Message      message `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func main() {
	url := os.Getenv("AZURE_OPENAI_ENDPOINT") + "/openai/v1/chat/completions"
	deployment, key := os.Getenv("AZURE_OPENAI_DEPLOYMENT"), os.Getenv("AZURE_OPENAI_API_KEY")
	// Keep as many idle connections to the one upstream host as the host
	// sends requests at a time (host.json: 100); net/http's default of 2
	// would open and close a connection for most requests under load.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 100
	client := &http.Client{Transport: t}

	http.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	})
	http.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Messages []message `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, _ := json.Marshal(map[string]any{"model": deployment, "messages": in.Messages, "max_tokens": 1024})
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("api-key", key)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var c completion
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || len(c.Choices) == 0 {
			http.Error(w, "bad upstream answer", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"answer": c.Choices[0].Message.Content, "finishReason": c.Choices[0].FinishReason, "usage": c.Usage,
		})
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:"+os.Getenv("FUNCTIONS_CUSTOMHANDLER_PORT"), nil))
}
