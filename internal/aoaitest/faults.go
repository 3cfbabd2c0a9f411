package aoaitest

import (
	"encoding/json"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"
)

// This file holds the answers of the scripted faults and of the checks
// that refuse a request: the gateway's, the model's, throttles and resets.

// fault plays a directive other than slow.
func (ex *exchange) fault(d Directive) {
	if d.Kind == KindHang {
		<-ex.r.Context().Done()
		ex.rec.Cancelled = true
		return
	}
	if !ex.wait(d.After) {
		return
	}
	switch d.Kind {
	case KindStatus:
		switch {
		case d.Code == http.StatusTooManyRequests:
			// A 429 without retry-after, as some captures show.
			ex.w.Header().Set("policy-id", "DeploymentRatelimit-Token")
			ex.gatewayError(d.Code, codeMessage{Code: "429", Message: rateLimitMessage("token", ex.apiVersion, 1)})
		case d.Code == http.StatusUnauthorized:
			ex.unauthorized()
		case d.Code == http.StatusNotFound:
			ex.gatewayError(d.Code, codeMessage{Code: "DeploymentNotFound", Message: msgNoDeployment})
		case d.Code >= 500:
			if d.RetryAfter > 0 {
				ex.retryHeaders(d.RetryAfter)
			}
			ex.serverError(d.Code)
		default:
			ex.gatewayError(d.Code, codeMessage{Code: strconv.Itoa(d.Code), Message: http.StatusText(d.Code)})
		}
	case KindThrottle:
		ex.throttled(d.RetryAfter, ex.s.peek(ex.deployment))
	case KindFilter:
		ex.setRateHeaders(ex.s.peek(ex.deployment))
		ex.w.Header().Set("ms-azureml-model-error-reason", "model_error")
		ex.w.Header().Set("ms-azureml-model-error-statuscode", "400")
		e := contentFilterError{Message: msgFiltered, Param: "prompt", Code: "content_filter", Status: 400}
		e.InnerError.Code = "ResponsibleAIPolicyViolation"
		e.InnerError.ContentFilterResult = safeResults()
		e.InnerError.ContentFilterResult.Violence = filterResult{Filtered: true, Severity: "medium"}
		ex.model400(e)
	case KindMalformed:
		ans := answer{pieces: []piece{{text: "This answer is cut short on purpose.", tokens: 8}}, tokens: 8, finish: "stop"}
		full, _ := json.Marshal(ex.completion(ans, ex.rec.PromptTokens))
		ex.successHeaders(ex.s.peek(ex.deployment), "application/json")
		ex.rec.Status = http.StatusOK
		ex.w.WriteHeader(http.StatusOK)
		_, _ = ex.w.Write(full[:len(full)/2])
	case KindReset:
		ex.resetConn()
	}
}

// resetConn takes the connection over so that ServeHTTP closes it without
// an answer: an RST on TCP.
func (ex *exchange) resetConn() {
	ex.reset = true
	conn, _, err := http.NewResponseController(ex.w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2, a recorder): net/http's own way to drop
		// the connection without a response.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST instead of FIN
	}
	ex.conn = conn
}

// unauthorized answers the recorded 401: rejected at the gateway, so only
// apim-request-id and Content-* headers, and plain JSON even for a stream.
func (ex *exchange) unauthorized() {
	ex.w.Header().Set("apim-request-id", ex.rec.RequestID)
	ex.writeJSON(http.StatusUnauthorized, errorBody{Error: codeMessage{Code: "401", Message: msgUnauthorized}})
}

// throttled answers 429 asking the client to wait.
func (ex *exchange) throttled(wait time.Duration, v verdict) {
	secs := ex.retryHeaders(wait)
	h := ex.w.Header()
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(v.remainingRequests))
	h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(v.remainingTokens))
	limit := "token"
	if v.callRate {
		// The call-rate policy-id is named by analogy with the recorded
		// token one.
		limit = "call"
		h.Set("policy-id", "DeploymentRatelimit-Call")
	} else {
		// Azure's header, extra hyphen included (chat_429_token_rate_limit.json).
		h.Set("x-rate-limit-reset-tokens", strconv.FormatInt(secs, 10))
		h.Set("policy-id", "DeploymentRatelimit-Token")
	}
	ex.gatewayError(http.StatusTooManyRequests, codeMessage{Code: "429", Message: rateLimitMessage(limit, ex.apiVersion, secs)})
}

// retryHeaders names wait as Azure does, in retry-after (whole seconds,
// rounded up, which it returns) and retry-after-ms.
func (ex *exchange) retryHeaders(wait time.Duration) int64 {
	secs := int64(math.Ceil(wait.Seconds()))
	h := ex.w.Header()
	h.Set("retry-after", strconv.FormatInt(secs, 10))
	h.Set("retry-after-ms", strconv.FormatInt(wait.Milliseconds(), 10))
	return secs
}

// gatewayError answers a {"error":{"code","message"}} body with the
// gateway's headers.
func (ex *exchange) gatewayError(status int, body codeMessage) {
	ex.baseHeaders()
	ex.writeJSON(status, errorBody{Error: body})
}

// invalid answers a 400 invalid_request_error.
func (ex *exchange) invalid(msg, param, code string) {
	e := invalidRequest{Message: msg, Type: "invalid_request_error"}
	if param != "" {
		e.Param = strPtr(param)
	}
	if code != "" {
		e.Code = strPtr(code)
	}
	ex.model400(e)
}

// model400 answers a 400 from the model with its headers.
func (ex *exchange) model400(e any) {
	ex.modelHeaders()
	ex.writeJSON(http.StatusBadRequest, errorBody{Error: e})
}

// serverError answers a 5xx.
func (ex *exchange) serverError(code int) {
	ex.modelHeaders()
	ex.writeJSON(code, serverErrorBody(code, ex.rec.RequestID))
}
