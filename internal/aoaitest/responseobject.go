package aoaitest

// How a generation looks on the wire: the response object as it is now,
// its output item, usage and Azure's content filters, and the ids and
// padding Azure's events carry.

import (
	"crypto/rand"
	"encoding/hex"
)

// object is the response as it is now. The output holds the answer's
// message once the response has finished with one; usage and Azure's
// content filters come with the end.
func (g *generation) object() responseObject {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.objectLocked()
}

// objectLocked is object with g.mu held.
func (g *generation) objectLocked() responseObject {
	o := g.template
	o.Status = g.status
	o.Output = []outputItem{}
	o.Error = g.err
	if g.reason != "" {
		o.IncompleteDetails = &incompleteDetails{Reason: g.reason}
	}
	if g.finished != 0 {
		at := g.finished
		o.CompletedAt = &at
		if g.status != statusFailed {
			o.Output = []outputItem{g.itemLocked(statusForItem(g.status))}
			o.Usage = newUsage(g.prompt, g.tokens)
			o.ContentFilters = contentFilters(g.text.Len())
		}
		o.ServiceTier = "default"
	}
	return o
}

func statusForItem(status string) string {
	if status == statusIncomplete {
		return statusIncomplete
	}
	return statusCompleted
}

func (g *generation) item(status string) outputItem {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.itemLocked(status)
}

func (g *generation) itemLocked(status string) outputItem {
	return outputItem{ID: g.msgID, Type: "message", Status: status, Content: []outputText{newOutputText(g.text.String())}, Role: "assistant"}
}

func newOutputText(text string) outputText {
	return outputText{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: text}
}

func newUsage(prompt, output int) *responseUsage {
	return &responseUsage{InputTokens: prompt, OutputTokens: output, TotalTokens: prompt + output}
}

// contentFilters is Azure's content_filters of a finished response whose
// text is n bytes long: the prompt and the completion, both safe.
func contentFilters(n int) []contentFilter {
	safe := map[string]any{"filtered": false, "severity": "safe"}
	clean := map[string]any{"filtered": false, "detected": false}
	prompt := contentFilter{SourceType: "prompt", ContentFilterResults: map[string]any{
		"hate": safe, "jailbreak": clean, "self_harm": safe, "sexual": safe, "violence": safe,
	}}
	completion := contentFilter{SourceType: "completion", ContentFilterResults: map[string]any{
		"hate": safe, "protected_material_code": clean, "protected_material_text": clean, "self_harm": safe, "sexual": safe, "violence": safe,
	}}
	completion.ContentFilterOffsets.EndOffset = n
	return []contentFilter{prompt, completion}
}

// obfuscation pads a delta's size, as Azure's "obfuscation" field does, so
// that an event's length does not tell its text.
func obfuscation(delta string) string {
	n := max(16-len(delta), 4)
	return rand.Text()[:min(n, 26)]
}

// newResponseID returns an id in the shape of Azure's: resp_ and 50 hex
// digits.
func newResponseID(prefix string) string {
	var b [25]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return prefix + hex.EncodeToString(b[:])
}
