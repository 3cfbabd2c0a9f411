package aoaitest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

func TestFindDirective(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		want  aoaitest.Directive
		found bool
		err   bool
	}{
		{name: "none", text: "just a question"},
		{name: "hang", text: "[[sim:hang]]", want: aoaitest.Directive{Kind: aoaitest.KindHang}, found: true},
		{name: "slow", text: "hi [[sim:slow ms=2500]] there", want: aoaitest.Directive{Kind: aoaitest.KindSlow, Delay: 2500 * time.Millisecond}, found: true},
		{name: "status full", text: "[[sim:status code=503 after=100 times=2 id=a-1]]",
			want: aoaitest.Directive{Kind: aoaitest.KindStatus, Code: 503, After: 100 * time.Millisecond, Times: 2, ID: "a-1"}, found: true},
		{name: "status naming a wait", text: "[[sim:status code=503 retry-ms=2500]]",
			want: aoaitest.Directive{Kind: aoaitest.KindStatus, Code: 503, RetryAfter: 2500 * time.Millisecond}, found: true},
		{name: "retry-ms is for status", text: "[[sim:throttle retry-ms=5]]", found: true, err: true},
		{name: "status needs its code", text: "[[sim:status retry-ms=5]]", found: true, err: true},
		{name: "throttle default s", text: "[[sim:throttle]]", want: aoaitest.Directive{Kind: aoaitest.KindThrottle, RetryAfter: time.Second}, found: true},
		{name: "throttle s", text: "[[sim:throttle s=12 times=1 id=x]]", want: aoaitest.Directive{Kind: aoaitest.KindThrottle, RetryAfter: 12 * time.Second, Times: 1, ID: "x"}, found: true},
		{name: "reset after", text: "[[sim:reset after=5]]", want: aoaitest.Directive{Kind: aoaitest.KindReset, After: 5 * time.Millisecond}, found: true},
		{name: "malformed", text: "[[sim:malformed]]", want: aoaitest.Directive{Kind: aoaitest.KindMalformed}, found: true},
		{name: "filter", text: "[[sim:filter]]", want: aoaitest.Directive{Kind: aoaitest.KindFilter}, found: true},
		{name: "filter prompt", text: "[[sim:filter part=prompt]]", want: aoaitest.Directive{Kind: aoaitest.KindFilter}, found: true},
		{name: "filter completion", text: "[[sim:filter part=completion]]", want: aoaitest.Directive{Kind: aoaitest.KindFilter, Completion: true}, found: true},
		{name: "filter elsewhere", text: "[[sim:filter part=system]]", found: true, err: true},
		{name: "last wins", text: "[[sim:hang]] then [[sim:filter]]", want: aoaitest.Directive{Kind: aoaitest.KindFilter}, found: true},
		{name: "extra spaces", text: "[[sim:  status   code=500 ]]", want: aoaitest.Directive{Kind: aoaitest.KindStatus, Code: 500}, found: true},
		{name: "unknown kind", text: "[[sim:explode]]", found: true, err: true},
		{name: "no kind", text: "[[sim:]]", found: true, err: true},
		{name: "unclosed", text: "[[sim:hang", found: true, err: true},
		{name: "slow needs ms", text: "[[sim:slow]]", found: true, err: true},
		{name: "status needs code", text: "[[sim:status]]", found: true, err: true},
		{name: "code out of range", text: "[[sim:status code=200]]", found: true, err: true},
		{name: "key of another kind", text: "[[sim:hang code=500]]", found: true, err: true},
		{name: "not a number", text: "[[sim:slow ms=fast]]", found: true, err: true},
		{name: "negative", text: "[[sim:slow ms=-1]]", found: true, err: true},
		{name: "too long a wait", text: "[[sim:slow ms=86400001]]", found: true, err: true},
		{name: "no value", text: "[[sim:status code=]]", found: true, err: true},
		{name: "bare word", text: "[[sim:status 503]]", found: true, err: true},
		{name: "twice", text: "[[sim:status code=500 code=503]]", found: true, err: true},
		{name: "bad id", text: "[[sim:hang id=a/b]]", found: true, err: true},
		{name: "one backend of a pool", text: "[[sim:throttle s=20 backend=a]]",
			want: aoaitest.Directive{Kind: aoaitest.KindThrottle, RetryAfter: 20 * time.Second, Backend: "a"}, found: true},
		{name: "bad backend", text: "[[sim:throttle backend=East_US]]", found: true, err: true},
		{name: "stall mid-stream", text: "[[sim:hang tokens=50]]", want: aoaitest.Directive{Kind: aoaitest.KindHang, MidStream: true, Tokens: 50}, found: true},
		{name: "reset mid-stream", text: "[[sim:reset tokens=0]]", want: aoaitest.Directive{Kind: aoaitest.KindReset, MidStream: true}, found: true},
		{name: "filter mid-stream filters the completion", text: "[[sim:filter tokens=7]]", want: aoaitest.Directive{Kind: aoaitest.KindFilter, Completion: true, MidStream: true, Tokens: 7}, found: true},
		{name: "tokens is for hang, reset and filter", text: "[[sim:status code=500 tokens=3]]", found: true, err: true},
		{name: "tokens not negative", text: "[[sim:reset tokens=-1]]", found: true, err: true},
		{name: "tokens filters the completion only", text: "[[sim:filter tokens=3 part=prompt]]", found: true, err: true},
		{name: "tokens with part=completion", text: "[[sim:filter tokens=3 part=completion]]", want: aoaitest.Directive{Kind: aoaitest.KindFilter, Completion: true, MidStream: true, Tokens: 3}, found: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := aoaitest.FindDirective(tt.text)
			assert.Equal(t, tt.found, found)
			if tt.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDirectiveStringRoundTrips(t *testing.T) {
	d := aoaitest.Directive{Kind: aoaitest.KindStatus, Code: 503, After: 250 * time.Millisecond, Times: 2, ID: "demo"}
	assert.Equal(t, "[[sim:status code=503 after=250 times=2 id=demo]]", d.String())
	back, found, err := aoaitest.FindDirective(d.String())
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, d, back)
	assert.Empty(t, aoaitest.Directive{}.String())
	d = aoaitest.Directive{Kind: aoaitest.KindStatus, Code: 503, RetryAfter: 1500 * time.Millisecond}
	back, _, err = aoaitest.FindDirective(d.String())
	require.NoError(t, err)
	assert.Equal(t, d, back)
}

func FuzzFindDirective(f *testing.F) {
	for _, seed := range []string{
		"", "hello", "[[sim:hang]]", "[[sim:slow ms=100]]", "[[sim:status code=503 after=10 times=2 id=x]]",
		"[[sim:reset after=1]]", "[[sim:malformed]]", "[[sim:throttle s=3]]", "[[sim:filter]]",
		"[[sim:status code=500 code=500]]", "[[sim:]]", "[[sim:hang", "a [[sim:hang]] b [[sim:filter id=q]]",
		"[[sim:slow ms=+5]]", "[[sim:hang id=x]]]", "[[sim:filter part=completion times=1]]",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		d, found, err := aoaitest.FindDirective(text)
		if err != nil {
			assert.True(t, found, "an error implies a directive was present")
			return
		}
		if !found {
			assert.Equal(t, aoaitest.Directive{}, d)
			return
		}
		// A parsed directive renders to a canonical text that parses back
		// to the same directive.
		back, found, err := aoaitest.FindDirective(d.String())
		require.NoError(t, err, d.String())
		require.True(t, found)
		assert.Equal(t, d, back)
	})
}

func BenchmarkFindDirective(b *testing.B) {
	text := strings.Repeat("Some ordinary question text. ", 100) + "[[sim:status code=503 after=100 times=2 id=demo]]"
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, _, err := aoaitest.FindDirective(text); err != nil {
			b.Fatal(err)
		}
	}
}
