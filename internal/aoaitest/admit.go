package aoaitest

import "time"

// admitAndFit is the check both APIs make before the model runs: the call's
// estimate (prompt plus the completion's limit) against the deployment's
// quota, then the model's window. The prompt and completion must fit the
// window, and the prompt alone the input limit where the model has one
// (gpt-5: 272,000 of 400,000). param names the request's field that holds
// the prompt (messages, input), for the 400. When the call may not go on,
// admitAndFit has answered it (429 or 400) and returns false.
func (ex *exchange) admitAndFit(prompt, maxOut int, param string) (verdict, bool) {
	v := ex.s.admit(ex.deployment, prompt+maxOut)
	if !v.ok {
		wait := v.wait
		if v.never {
			// Azure's answer to a request that can never fit the quota.
			wait = 86400 * time.Second
		}
		ex.throttled(wait, v)
		return v, false
	}
	f := ex.s.facts(ex.model)
	window := f.ContextWindow
	if f.InputLimit > 0 && prompt > f.InputLimit {
		window = f.InputLimit
	}
	if prompt+maxOut > f.ContextWindow || prompt > window {
		ex.setRateHeaders(v)
		ex.model400(invalidRequest{
			Message: contextMessage(window, prompt, maxOut),
			Type:    "invalid_request_error",
			Param:   strPtr(param),
			Code:    strPtr("context_length_exceeded"),
		})
		return v, false
	}
	return v, true
}
