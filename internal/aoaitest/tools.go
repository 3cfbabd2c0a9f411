package aoaitest

import (
	"encoding/json"

	"github.com/timebox-dev/timebox/internal/tokens"
)

// This file holds tool calls: a request that offers tools, whose last
// message is the user's, is answered with a call of one of them (the one
// tool_choice names, else the first), its arguments {"question": the
// user's text}; once the conversation holds the tool's result (the last
// message is a tool message), the simulator answers in text as always.
// tool_choice "none" asks for text.

// toolToCall returns the tool a request is answered with a call of.
func toolToCall(req chatRequest) (string, bool) {
	if len(req.Tools) == 0 || len(req.Messages) == 0 || req.Messages[len(req.Messages)-1].Role != "user" {
		return "", false
	}
	var choice struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	var mode string
	switch {
	case json.Unmarshal(req.ToolChoice, &mode) == nil && mode == "none":
		return "", false
	case json.Unmarshal(req.ToolChoice, &choice) == nil && choice.Function.Name != "":
		return choice.Function.Name, true
	}
	return req.Tools[0].Function.Name, true
}

// newToolCall is an answer that calls the tool name with the question as
// its argument, the arguments cut into tokens as text is.
func newToolCall(c *tokens.Counter, name, question string, limit int) answer {
	args, _ := json.Marshal(struct {
		Question string `json:"question"`
	}{question})
	a := newAnswer(c, string(args), limit)
	if a.finish == "stop" {
		a.finish = "tool_calls"
	}
	a.call = &toolCall{ID: "call_" + newUUID()[:24], Type: "function"}
	a.call.Function.Name = name
	return a
}

// callPiece is the tool_calls delta of one piece of the call's arguments;
// the first names the call.
func (a answer) callPiece(args string, first bool) toolCall {
	zero := 0
	p := toolCall{Index: &zero}
	if first {
		p.ID, p.Type, p.Function.Name = a.call.ID, a.call.Type, a.call.Function.Name
	}
	p.Function.Arguments = args
	return p
}

// message is the answer's message when it is not streamed.
func (a answer) message() answerMessage {
	if a.call == nil {
		text := a.text()
		return answerMessage{Content: &text, Role: "assistant"}
	}
	c := *a.call
	c.Function.Arguments = a.text()
	return answerMessage{Role: "assistant", ToolCalls: []toolCall{c}}
}
