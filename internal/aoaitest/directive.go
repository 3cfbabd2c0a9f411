package aoaitest

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind names a scripted fault.
type Kind string

// The kinds a directive can name. See the package documentation for what
// each stands for.
const (
	KindHang      Kind = "hang"
	KindSlow      Kind = "slow"
	KindStatus    Kind = "status"
	KindReset     Kind = "reset"
	KindMalformed Kind = "malformed"
	KindThrottle  Kind = "throttle"
	KindFilter    Kind = "filter"

	// The Responses API's own (responses.go): they shape a generation, and
	// a Chat Completions request ignores them.
	KindLong       Kind = "long"
	KindStale      Kind = "stale"
	KindRace       Kind = "race"
	KindKeepalive  Kind = "keepalive"
	KindError      Kind = "error"
	KindFailed     Kind = "failed"
	KindIncomplete Kind = "incomplete"
)

// responsesOnly reports whether k shapes only a Responses API generation.
func (k Kind) responsesOnly() bool {
	switch k {
	case KindLong, KindStale, KindRace, KindKeepalive, KindError, KindFailed, KindIncomplete:
		return true
	}
	return false
}

// Directive is one parsed `[[sim:<kind> key=value ...]]` instruction. The
// zero value is no directive.
type Directive struct {
	// Kind is the fault to play.
	Kind Kind
	// Code is the HTTP status of a status directive (400 to 599).
	Code int
	// After is the wait before the fault is played (key after, in ms).
	After time.Duration
	// Delay is the wait before the first byte of a slow directive (key ms).
	Delay time.Duration
	// RetryAfter is the wait a throttle directive asks for (key s, whole
	// seconds), or a status directive's answer names (key retry-ms, in ms:
	// retry-after-ms, and retry-after in whole seconds rounded up; 0: none).
	RetryAfter time.Duration
	// Times, when positive, limits the fault to the first Times requests
	// carrying the same ID; later ones are answered normally. 0 means every
	// request.
	Times int
	// ID names the counter Times counts against; empty means the directive's
	// own text (String) is the counter's name.
	ID string
	// Completion makes a filter directive filter the answer (a 200 cut
	// short with finish_reason "content_filter") instead of the prompt (the
	// recorded 400); key part=completion, default part=prompt.
	Completion bool
	// MidStream makes hang, reset and filter strike in the middle of the
	// answer, after Tokens of its tokens (key tokens=N): a stall, a dropped
	// connection, or the output filter stopping the answer. A filter with
	// tokens filters the completion (part=completion is implied).
	MidStream bool
	// Tokens is how many tokens of the answer go out before a MidStream
	// fault strikes (0: right after the stream's first, annotation-only
	// chunks).
	Tokens int
	// Span is a long directive's length of the whole generation, or a
	// stale directive's age past which a response's stream can no longer
	// be resumed (key s, whole seconds).
	Span time.Duration
	// Every is a keepalive directive's interval (key every, in ms): a
	// keepalive event is sent each time that long passes without another.
	Every time.Duration
	// Nested makes an error directive send the nested shape of the error
	// event ({"type":"error","error":{...}}) instead of the flat one (key
	// shape=nested|flat, default flat).
	Nested bool
	// On names the Responses API call a status, throttle, reset or hang
	// directive strikes (key on=create|resume|retrieve|cancel, default
	// create): a directive in a generation's input can so fail the calls
	// that follow it.
	On string
	// Backend, when set, scopes the directive to the simulator playing the
	// backend of that name (Options.Backend; key backend=NAME): another
	// answers as if it were not there. Two simulators so play a pool of
	// two, one throttled and one with room ([[sim:throttle s=20
	// backend=a]]).
	Backend string
}

// appliesTo reports whether d plays on the simulator of backend.
func (d Directive) appliesTo(backend string) bool {
	return d.Backend == "" || d.Backend == backend
}

const (
	directiveOpen  = "[[sim:"
	directiveClose = "]]"
	// maxDirectiveWait caps every wait a directive asks for, so a typo
	// cannot park a request for days.
	maxDirectiveWait = 24 * time.Hour
)

// errSyntax and friends classify parse failures; ParseDirective wraps them
// with the offending text.
var (
	errSyntax   = errors.New("syntax")
	errKind     = errors.New("unknown kind")
	errKey      = errors.New("key not allowed")
	errValue    = errors.New("bad value")
	errRequired = errors.New("missing required key")
)

// backendName is what a backend's name may be (config's rule).
var backendName = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// kindKeys lists, per kind, the keys it accepts besides the common ones (after,
// times, id, backend), and whether it requires the first of them.
var kindKeys = map[Kind]struct {
	extra     []string
	required  bool
	midStream bool // takes tokens=N
}{
	KindHang:      {midStream: true},
	KindSlow:      {extra: []string{"ms"}, required: true},
	KindStatus:    {extra: []string{"code", "retry-ms"}, required: true},
	KindReset:     {midStream: true},
	KindMalformed: {},
	KindThrottle:  {extra: []string{"s"}},
	KindFilter:    {extra: []string{"part"}, midStream: true},

	KindLong:       {extra: []string{"s"}, required: true},
	KindStale:      {extra: []string{"s"}, required: true},
	KindRace:       {},
	KindKeepalive:  {extra: []string{"every"}, required: true},
	KindError:      {extra: []string{"shape"}, midStream: true},
	KindFailed:     {midStream: true},
	KindIncomplete: {midStream: true},
}

// onKeys are the kinds that take on=, and the calls it may name.
var (
	onKinds = []Kind{KindStatus, KindThrottle, KindReset, KindHang}
	onCalls = []string{"create", "resume", "retrieve", "cancel"}
)

// FindDirective returns the last directive in text, reporting false when
// there is none. A directive that is present but malformed is an error, so a
// typo in a test or the demo is loud rather than silently a normal answer.
func FindDirective(text string) (Directive, bool, error) {
	i := strings.LastIndex(text, directiveOpen)
	if i < 0 {
		return Directive{}, false, nil
	}
	rest := text[i+len(directiveOpen):]
	j := strings.Index(rest, directiveClose)
	if j < 0 {
		return Directive{}, true, fmt.Errorf("directive %q: %w: no closing ]]", clip(text[i:]), errSyntax)
	}
	d, err := ParseDirective(rest[:j])
	return d, true, err
}

// FindDirectives returns every directive in text, in order: a Responses
// API generation takes several at once (a long one, with keepalives, whose
// resume is refused). A malformed one is an error, as for FindDirective.
func FindDirectives(text string) ([]Directive, error) {
	var out []Directive
	for {
		i := strings.Index(text, directiveOpen)
		if i < 0 {
			return out, nil
		}
		rest := text[i+len(directiveOpen):]
		j := strings.Index(rest, directiveClose)
		if j < 0 {
			return nil, fmt.Errorf("directive %q: %w: no closing ]]", clip(text[i:]), errSyntax)
		}
		d, err := ParseDirective(rest[:j])
		if err != nil {
			return nil, err
		}
		out = append(out, d)
		text = rest[j+len(directiveClose):]
	}
}

// ParseDirective parses the inside of a directive, "<kind> key=value ...",
// without the surrounding [[sim: and ]].
func ParseDirective(s string) (Directive, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Directive{}, fmt.Errorf("directive %q: %w: no kind", clip(s), errSyntax)
	}
	d := Directive{Kind: Kind(fields[0])}
	spec, ok := kindKeys[d.Kind]
	if !ok {
		return Directive{}, fmt.Errorf("directive %q: %w %q", clip(s), errKind, clip(fields[0]))
	}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || v == "" {
			return Directive{}, fmt.Errorf("directive %q: %w: want key=value, got %q", clip(s), errSyntax, clip(f))
		}
		if seen[k] {
			return Directive{}, fmt.Errorf("directive %q: %w: %s given twice", clip(s), errSyntax, clip(k))
		}
		seen[k] = true
		if !slices.Contains([]string{"after", "times", "id", "backend"}, k) && !slices.Contains(spec.extra, k) && (k != "tokens" || !spec.midStream) && (k != "on" || !slices.Contains(onKinds, d.Kind)) {
			return Directive{}, fmt.Errorf("directive %q: %w: %s does not take %q", clip(s), errKey, d.Kind, clip(k))
		}
		if k == "part" {
			if v != "prompt" && v != "completion" {
				return Directive{}, fmt.Errorf("directive %q: %w: part=%q is not prompt or completion", clip(s), errValue, clip(v))
			}
			d.Completion = v == "completion"
			continue
		}
		if k == "on" {
			if !slices.Contains(onCalls, v) {
				return Directive{}, fmt.Errorf("directive %q: %w: on=%q is not create, resume, retrieve or cancel", clip(s), errValue, clip(v))
			}
			if v != "create" {
				d.On = v
			}
			continue
		}
		if k == "shape" {
			if v != "flat" && v != "nested" {
				return Directive{}, fmt.Errorf("directive %q: %w: shape=%q is not flat or nested", clip(s), errValue, clip(v))
			}
			d.Nested = v == "nested"
			continue
		}
		if k == "backend" {
			if !backendName.MatchString(v) {
				return Directive{}, fmt.Errorf("directive %q: %w: backend=%q wants 1 to 32 of a-z 0-9 -", clip(s), errValue, clip(v))
			}
			d.Backend = v
			continue
		}
		if k == "id" {
			if !validID(v) {
				return Directive{}, fmt.Errorf("directive %q: %w: id=%q wants 1 to 64 of A-Z a-z 0-9 . _ -", clip(s), errValue, clip(v))
			}
			d.ID = v
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Directive{}, fmt.Errorf("directive %q: %w: %s=%q is not a whole number >= 0", clip(s), errValue, k, clip(v))
		}
		switch k {
		case "tokens":
			d.MidStream, d.Tokens = true, n
		case "times":
			d.Times = n
		case "code":
			if n < 400 || n > 599 {
				return Directive{}, fmt.Errorf("directive %q: %w: code=%d is not 400..599", clip(s), errValue, n)
			}
			d.Code = n
		case "after", "ms", "retry-ms", "every":
			w := time.Duration(n) * time.Millisecond
			if n > int(maxDirectiveWait/time.Millisecond) {
				return Directive{}, fmt.Errorf("directive %q: %w: %s=%d is over %v", clip(s), errValue, k, n, maxDirectiveWait)
			}
			switch k {
			case "after":
				d.After = w
			case "ms":
				d.Delay = w
			case "every":
				if n == 0 {
					return Directive{}, fmt.Errorf("directive %q: %w: every=0", clip(s), errValue)
				}
				d.Every = w
			default:
				d.RetryAfter = w
			}
		case "s":
			if n > int(maxDirectiveWait/time.Second) {
				return Directive{}, fmt.Errorf("directive %q: %w: s=%d is over %v", clip(s), errValue, n, maxDirectiveWait)
			}
			if d.Kind == KindLong || d.Kind == KindStale {
				d.Span = time.Duration(n) * time.Second
			} else {
				d.RetryAfter = time.Duration(n) * time.Second
			}
		}
	}
	if d.Kind == KindFilter && d.MidStream {
		// Only the answer can be filtered mid-stream.
		if seen["part"] && !d.Completion {
			return Directive{}, fmt.Errorf("directive %q: %w: tokens filters the completion, not part=prompt", clip(s), errValue)
		}
		d.Completion = true
	}
	if spec.required && !seen[spec.extra[0]] {
		return Directive{}, fmt.Errorf("directive %q: %w %s", clip(s), errRequired, spec.extra[0])
	}
	if d.Kind == KindThrottle && !seen["s"] {
		d.RetryAfter = defaultThrottle
	}
	return d, nil
}

// defaultThrottle is the wait a throttle directive without s= asks for.
const defaultThrottle = 1 * time.Second

// String renders the directive in its canonical form, [[sim:...]] included;
// FindDirective(d.String()) gives d back. The zero Directive renders as "".
func (d Directive) String() string {
	if d.Kind == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(directiveOpen)
	b.WriteString(string(d.Kind))
	switch d.Kind {
	case KindSlow:
		fmt.Fprintf(&b, " ms=%d", d.Delay.Milliseconds())
	case KindStatus:
		fmt.Fprintf(&b, " code=%d", d.Code)
		if d.RetryAfter > 0 {
			fmt.Fprintf(&b, " retry-ms=%d", d.RetryAfter.Milliseconds())
		}
	case KindThrottle:
		fmt.Fprintf(&b, " s=%d", int64(d.RetryAfter/time.Second))
	case KindFilter:
		if d.Completion {
			b.WriteString(" part=completion")
		}
	case KindLong, KindStale:
		fmt.Fprintf(&b, " s=%d", int64(d.Span/time.Second))
	case KindKeepalive:
		fmt.Fprintf(&b, " every=%d", d.Every.Milliseconds())
	case KindError:
		if d.Nested {
			b.WriteString(" shape=nested")
		}
	}
	if d.On != "" {
		fmt.Fprintf(&b, " on=%s", d.On)
	}
	if d.MidStream {
		fmt.Fprintf(&b, " tokens=%d", d.Tokens)
	}
	if d.After > 0 {
		fmt.Fprintf(&b, " after=%d", d.After.Milliseconds())
	}
	if d.Times > 0 {
		fmt.Fprintf(&b, " times=%d", d.Times)
	}
	if d.ID != "" {
		fmt.Fprintf(&b, " id=%s", d.ID)
	}
	if d.Backend != "" {
		fmt.Fprintf(&b, " backend=%s", d.Backend)
	}
	b.WriteString(directiveClose)
	return b.String()
}

// counterKey names the Times counter of d.
func (d Directive) counterKey() string {
	if d.ID != "" {
		return "id:" + d.ID
	}
	return "text:" + d.String()
}

// validID reports whether s is a usable counter id: short, and made of
// characters that survive being quoted in a prompt and in logs.
func validID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// clip shortens user text quoted in an error message.
func clip(s string) string {
	const n = 60
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
