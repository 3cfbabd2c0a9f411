package config

import (
	"encoding/base64"
	"strings"

	"github.com/timebox-dev/timebox/internal/cursor"
)

// loadCursorKeys reads CURSOR_KEYS: one or two standard base64 keys of at
// least cursor.MinKeyBytes each, comma-separated; the first seals long
// answers' cursors and both open them (a rotation: docs/operations.md,
// "The cursor key"). Unset where long answers run (background), it is
// refused inside Azure, where instances come and go and each must open the
// cursors the others sealed; outside Azure it is a warning, and run
// seals with a random key of the process.
func loadCursorKeys(get func(string) string, background bool, bad func(name, format string, args ...any), warnings []string) ([][]byte, []string) {
	v := get("CURSOR_KEYS")
	if v == "" {
		switch {
		case !background:
		case inAzure(get):
			bad("CURSOR_KEYS", "required inside Azure with long answers (WEBSITE_SITE_NAME or WEBSITE_INSTANCE_ID is set): every instance "+
				"must open the cursors the others seal. The template sets it; by hand: openssl rand -base64 32 (docs/operations.md)")
		default:
			warnings = append(warnings, "CURSOR_KEYS is not set: long answers' cursors are sealed with a random key of this process, "+
				"so a continue served by another process, or after a restart, answers 404. Set CURSOR_KEYS (openssl rand -base64 32) "+
				"where more than one process serves")
		}
		return nil, warnings
	}
	var keys [][]byte
	parts := strings.Split(v, ",")
	if len(parts) > 2 {
		bad("CURSOR_KEYS", "%d keys: give one, or two while rotating (the new one first)", len(parts))
		return nil, warnings
	}
	for i, p := range parts {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(p))
		switch {
		case err != nil:
			bad("CURSOR_KEYS", "key %d is not standard base64 (openssl rand -base64 32 makes one)", i+1)
		case len(k) < cursor.MinKeyBytes:
			bad("CURSOR_KEYS", "key %d has %d bytes: at least %d are needed (openssl rand -base64 32 makes one)", i+1, len(k), cursor.MinKeyBytes)
		default:
			keys = append(keys, k)
		}
	}
	return keys, warnings
}

// inAzure says whether the handler runs inside Azure: App Service and
// Functions set these on every instance.
func inAzure(get func(string) string) bool {
	return get("WEBSITE_SITE_NAME") != "" || get("WEBSITE_INSTANCE_ID") != ""
}
