package tokens

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/ctxtest"
)

// A hostile "word" of 1 MiB (one piece for the split expression, which
// cannot be stopped inside a match) is counted a segment at a time, so a
// count whose context ends stops within it; with time, it counts whole, as
// before.
func TestCountingAHugeWordStopsWhenTheContextEnds(t *testing.T) {
	c, err := New("o200k_base")
	require.NoError(t, err)
	word := strings.Repeat("a", 1<<20)
	whole := c.Text(word)
	assert.Equal(t, 131072, whole)

	ctx := ctxtest.ExpireAfter(3)
	n := c.TextContext(ctx, word)
	assert.Less(t, n, whole/4, "stopped inside the word")
	assert.Error(t, ctx.Err())
}

// Segments are cut where the split starts a piece anyway: the count of long
// ordinary text is the same as whole.
func TestSegmentsKeepTheCount(t *testing.T) {
	c, err := New("o200k_base")
	require.NoError(t, err)
	text := strings.Repeat("The budget forecast for the next quarter, in figures: 1234.5 and more.\n", 4000)
	require.Greater(t, len(text), 4*maxSegment)
	var whole int
	_ = c.codec().eachIn(context.Background(), text, func(int) { whole++ })
	assert.Equal(t, whole, c.Text(text))
}
