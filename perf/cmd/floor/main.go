// Command floor is the request floor of make perf: the plainest Go program
// that does timebox's job per request. It accepts the chat JSON, calls the
// same upstream (Azure OpenAI's v1 chat completions, api-key auth) with
// net/http, streamed as timebox always asks for it (one server-sent event
// per token, read line by line with bufio.Scanner and encoding/json), and
// returns its answer: no validation, CORS, logging, budget, token counting
// or retries. It reads the handler's own settings
// (FUNCTIONS_CUSTOMHANDLER_PORT, AZURE_OPENAI_ENDPOINT,
// AZURE_OPENAI_DEPLOYMENT, AZURE_OPENAI_API_KEY), so make perf runs both the
// same way.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log"
	"net/http"
	"os"
	"strings"
)

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chunk struct {
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
		Delta        message `json:"delta"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
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
		body, _ := json.Marshal(map[string]any{"model": deployment, "messages": in.Messages, "max_tokens": 1024,
			"stream": true, "stream_options": map[string]bool{"include_usage": true}})
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("api-key", key)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var answer strings.Builder
		var finish string
		var u usage
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				break
			}
			var c chunk
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				http.Error(w, "bad upstream answer", http.StatusBadGateway)
				return
			}
			for _, ch := range c.Choices {
				answer.WriteString(ch.Delta.Content)
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
			}
			if c.Usage != nil {
				u = *c.Usage
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"answer": answer.String(), "finishReason": finish, "usage": u})
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:"+os.Getenv("FUNCTIONS_CUSTOMHANDLER_PORT"), nil))
}
