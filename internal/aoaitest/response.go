package aoaitest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// This file holds what every answer carries: its headers, the JSON
// writer, and the non-streaming completion body.

// baseHeaders sets what every answer but the gateway's 401 carries.
func (ex *exchange) baseHeaders() {
	h := ex.w.Header()
	h.Set("apim-request-id", ex.rec.RequestID)
	h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains; preload")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("x-ms-region", region)
}

// modelHeaders sets what every answer from past the gateway (200, a model's
// 400, a 5xx) carries besides baseHeaders: the client request id echoed
// ("Not-Set" when none was sent) and a fresh x-request-id.
func (ex *exchange) modelHeaders() {
	ex.baseHeaders()
	cid := ex.rec.ClientRequestID
	if cid == "" {
		cid = "Not-Set"
	}
	h := ex.w.Header()
	h.Set("x-ms-client-request-id", cid)
	h.Set("x-request-id", newUUID())
}

// setRateHeaders reports the deployment's quota.
func (ex *exchange) setRateHeaders(v verdict) {
	h := ex.w.Header()
	if ex.s.opts.TPM > 0 {
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(v.limitRequests))
		h.Set("x-ratelimit-limit-tokens", strconv.Itoa(v.limitTokens))
	}
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(v.remainingRequests))
	h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(v.remainingTokens))
}

// successHeaders sets the headers of a 200.
func (ex *exchange) successHeaders(v verdict, contentType string) {
	ex.modelHeaders()
	ex.setRateHeaders(v)
	h := ex.w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("azureml-model-session", "aoaisim-1")
	h.Set("Cache-Control", "must-revalidate, no-cache")
	h.Set("Content-Type", contentType)
	h.Set("x-envoy-upstream-service-time", strconv.FormatInt(time.Since(ex.rec.Start).Milliseconds(), 10))
	h.Set("x-ms-deployment-name", ex.deployment)
	h.Set("x-ms-rai-invoked", "true")
}

// writeJSON sends a JSON body with its status.
func (ex *exchange) writeJSON(status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		// Every body is one of this package's own types.
		panic(fmt.Sprintf("aoaitest: marshal %T: %v", body, err))
	}
	ex.w.Header().Set("Content-Type", "application/json")
	ex.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	ex.rec.Status = status
	ex.w.WriteHeader(status)
	_, _ = ex.w.Write(b)
}

// completion builds the non-streaming body.
func (ex *exchange) completion(a answer, prompt int) completion {
	return completion{
		Choices: []choice{{
			ContentFilterResults: a.results(len(a.pieces) - 1),
			FinishReason:         a.finish,
			Message:              a.message(),
		}},
		Created:             time.Now().Unix(),
		ID:                  completionID(),
		Model:               ex.model,
		Object:              "chat.completion",
		PromptFilterResults: []promptFilterResult{{ContentFilterResults: safeResults()}},
		Usage:               usage{CompletionTokens: a.tokens, PromptTokens: prompt, TotalTokens: prompt + a.tokens},
	}
}

// completionID returns a "chatcmpl-..." id like Azure's.
func completionID() string {
	return "chatcmpl-" + rand.Text()
}
