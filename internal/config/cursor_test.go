package config_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/config"
)

// CURSOR_KEYS is one or two standard base64 keys of at least 32 bytes.
// Unset where long answers run, it is refused inside Azure (every instance
// must open the others' cursors) and a warning elsewhere; where they do
// not run, nothing needs it.
func TestCursorKeys(t *testing.T) {
	key := func(b byte, n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n)) }
	load := func(kv map[string]string) (config.Config, error) {
		all := valid()
		all["AZURE_OPENAI_DEPLOYMENT"] = "o3"
		for k, v := range kv {
			all[k] = v
		}
		return config.Load(env(all))
	}

	c, err := load(map[string]string{"CURSOR_KEYS": key(1, 32)})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{bytes.Repeat([]byte{1}, 32)}, c.CursorKeys)
	c, err = load(map[string]string{"CURSOR_KEYS": key(2, 48) + ", " + key(1, 32)})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{bytes.Repeat([]byte{2}, 48), bytes.Repeat([]byte{1}, 32)}, c.CursorKeys, "the new one first, then the old")

	for _, bad := range []string{key(1, 31), "not base64!", key(1, 32) + "," + key(2, 32) + "," + key(3, 32), key(1, 32) + ","} {
		_, err := load(map[string]string{"CURSOR_KEYS": bad})
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "CURSOR_KEYS")
		assert.NotContains(t, err.Error(), bad, "a key is never repeated")
	}

	inAzure := map[string]string{"WEBSITE_SITE_NAME": "timebox", "AUTH_MODE": "none", "ALLOW_ANONYMOUS": "true"}
	_, err = load(inAzure)
	require.Error(t, err, "unset inside Azure, with long answers")
	assert.Contains(t, err.Error(), "CURSOR_KEYS: required inside Azure")
	inAzure["LONG_ANSWERS"] = "off"
	_, err = load(inAzure)
	assert.NoError(t, err, "no long answers, no cursors")

	c, err = load(nil)
	require.NoError(t, err, "unset outside Azure")
	assert.Nil(t, c.CursorKeys)
	warned := false
	for _, w := range c.Warnings {
		warned = warned || strings.HasPrefix(w, "CURSOR_KEYS is not set")
	}
	assert.True(t, warned, "a warning: a random key of the process")
	c, err = load(map[string]string{"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini"})
	require.NoError(t, err)
	assert.Empty(t, c.Warnings, "a chat model has no cursors to seal")
}
